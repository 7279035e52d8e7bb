//! Progress and cancellation of a long load, shared between the loading
//! threads and whoever watches them (the Python binding polls it to report
//! progress and to turn Ctrl-C into a clean stop).

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

/// The phase a load is in, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    Walk = 0,
    Read = 1,
    Index = 2,
    Done = 3,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Walk => "walk",
            Phase::Read => "read",
            Phase::Index => "index",
            Phase::Done => "done",
        }
    }
}

#[derive(Debug, Default)]
pub struct Progress {
    phase: AtomicU8,
    done: AtomicUsize,
    total: AtomicUsize,
    cancelled: AtomicBool,
}

impl Progress {
    /// Enter `phase`, which has `total` steps (0 when unknown).
    pub fn start(&self, phase: Phase, total: usize) {
        self.done.store(0, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
        self.phase.store(phase as u8, Ordering::Release);
    }

    pub fn step(&self) {
        self.advance(1);
    }

    /// Count `n` items done at once: parts of a million cheap items count
    /// once per part, not contending for the counter per item.
    pub fn advance(&self, n: usize) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    /// `(phase, done, total)` as seen now.
    pub fn snapshot(&self) -> (Phase, usize, usize) {
        let phase = match self.phase.load(Ordering::Acquire) {
            0 => Phase::Walk,
            1 => Phase::Read,
            2 => Phase::Index,
            _ => Phase::Done,
        };
        (
            phase,
            self.done.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
        )
    }

    /// Ask the load to stop; it returns [`crate::Error::Cancelled`] soon after.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    pub fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// `Err(Cancelled)` once [`Progress::cancel`] was called.
    pub fn check(&self) -> Result<(), crate::Error> {
        if self.cancelled() {
            Err(crate::Error::Cancelled)
        } else {
            Ok(())
        }
    }
}
