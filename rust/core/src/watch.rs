//! Change notification for a bundle's directories, so that checking an
//! unchanged bundle for freshness costs a queue read instead of a stat of
//! every file.
//!
//! On Linux each snapshot owns an inotify instance watching its root and every
//! directory below it. A directory's watch is added *before* the directory is
//! listed, so a change either happened before the listing (and the walk saw
//! it) or after the watch existed (and is queued). The kernel queues an event
//! during the very system call that changes a file, so a check that drains the
//! queue without blocking sees every change made before it. Anything that
//! makes the watch unreliable — no inotify, the instance or watch limit, a
//! queue overflow, an error — turns the fast check off and the caller falls
//! back to comparing sizes and modification times. Elsewhere there is no
//! watch and the fallback is always used.

use std::path::Path;

/// What draining the queue found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drained {
    /// Nothing happened since the watch was set up or last drained.
    Quiet,
    /// Something happened to a file; directories are as they were.
    Files,
    /// A directory appeared, vanished or moved (its watches are stale), or
    /// events may have been lost: a new snapshot needs a new watch.
    Directories,
    /// No reliable watch: compare the files instead.
    Unknown,
}

#[cfg(target_os = "linux")]
mod imp {
    use super::Drained;
    use inotify::{EventMask, Inotify, WatchMask, Watches};
    use std::io::ErrorKind;
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Mutex;

    pub struct Watch {
        inotify: Mutex<Inotify>,
        watches: Watches,
        failed: AtomicBool,
    }

    fn mask() -> WatchMask {
        WatchMask::MODIFY
            | WatchMask::ATTRIB
            | WatchMask::CLOSE_WRITE
            | WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
    }

    impl Watch {
        pub fn new(root: &Path) -> Option<Watch> {
            let inotify = Inotify::init().ok()?;
            let mut watches = inotify.watches();
            watches.add(root, mask()).ok()?;
            Some(Watch {
                inotify: Mutex::new(inotify),
                watches,
                failed: AtomicBool::new(false),
            })
        }

        pub fn add_dir(&self, dir: &Path) {
            if self.watches.clone().add(dir, mask()).is_err() {
                self.failed.store(true, Ordering::Relaxed);
            }
        }

        pub fn drain(&self) -> Drained {
            if self.failed.load(Ordering::Relaxed) {
                return Drained::Unknown;
            }
            let Ok(mut inotify) = self.inotify.lock() else {
                return Drained::Unknown;
            };
            let mut buf = [0u8; 16 * 1024];
            let mut seen = Drained::Quiet;
            loop {
                match inotify.read_events(&mut buf) {
                    Ok(events) => {
                        for e in events {
                            let dir_event = e.mask.contains(EventMask::ISDIR)
                                || e.mask.intersects(
                                    EventMask::Q_OVERFLOW
                                        | EventMask::IGNORED
                                        | EventMask::DELETE_SELF
                                        | EventMask::MOVE_SELF,
                                );
                            seen = if dir_event {
                                Drained::Directories
                            } else {
                                seen.max_files()
                            };
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return seen,
                    Err(_) => {
                        self.failed.store(true, Ordering::Relaxed);
                        return Drained::Unknown;
                    }
                }
            }
        }
    }

    impl Drained {
        fn max_files(self) -> Drained {
            if self == Drained::Quiet {
                Drained::Files
            } else {
                self
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Drained;
    use std::path::Path;

    pub struct Watch;

    impl Watch {
        pub fn new(_root: &Path) -> Option<Watch> {
            None
        }
        pub fn add_dir(&self, _dir: &Path) {}
        pub fn drain(&self) -> Drained {
            Drained::Unknown
        }
    }
}

/// A bundle's change watch (possibly inactive).
pub struct Watch(Option<imp::Watch>);

impl Watch {
    /// Start watching `root` (before walking it).
    pub fn new(root: &Path) -> Watch {
        Watch(imp::Watch::new(root))
    }

    /// Watch a directory below the root (before listing it). Thread-safe.
    pub fn add_dir(&self, dir: &Path) {
        if let Some(w) = &self.0 {
            w.add_dir(dir);
        }
    }

    /// Drain the queue: what changed since the last drain.
    pub fn drain(&self) -> Drained {
        self.0.as_ref().map_or(Drained::Unknown, imp::Watch::drain)
    }
}
