//! A long load on its own thread, watched from the calling one: progress
//! reported, Ctrl-C and a raising callback turned into a clean stop.

use std::sync::Arc;

use okfast_core::progress::Progress;
use okfast_core::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::errors::to_py;

/// Run a load on its own thread while this one, with the GIL released,
/// watches it: about every 100 ms it checks for signals (so Ctrl-C works
/// during a long load) and calls `callback(phase, done, total)`. Either one
/// raising cancels the load, which stops soon after, and that error is
/// returned. The callback is called once more at the end.
pub fn watched<T: Send + 'static>(
    py: Python<'_>,
    callback: Option<Py<PyAny>>,
    work: impl FnOnce(&Progress) -> Result<T, Error> + Send + 'static,
) -> PyResult<T> {
    use std::sync::mpsc::{channel, RecvTimeoutError};
    let progress = Arc::new(Progress::default());
    let theirs = Arc::clone(&progress);
    let (tx, rx) = channel::<()>();
    let handle = std::thread::spawn(move || {
        let out = work(&theirs);
        let _ = tx.send(());
        out
    });
    let polling = callback.as_ref().map(|c| c.clone_ref(py));
    let watcher = Arc::clone(&progress);
    // The callback's reference comes back out, to be dropped with the GIL held.
    let (pending, _polling) = py.detach(move || {
        let mut pending: Option<PyErr> = None;
        loop {
            match rx.recv_timeout(std::time::Duration::from_millis(100)) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return (pending, polling),
                Err(RecvTimeoutError::Timeout) => {}
            }
            if pending.is_none() {
                let polled = Python::attach(|py| -> PyResult<()> {
                    py.check_signals()?;
                    if let Some(cb) = &polling {
                        let (phase, done, total) = watcher.snapshot();
                        cb.call1(py, (phase.as_str(), done, total))?;
                    }
                    Ok(())
                });
                if let Err(e) = polled {
                    pending = Some(e);
                    watcher.cancel();
                }
            }
        }
    });
    let out = handle
        .join()
        .map_err(|_| PyRuntimeError::new_err("okfast: the load thread panicked (a bug)"))?;
    if let Some(e) = pending {
        return Err(e);
    }
    let out = out.map_err(|e| to_py(py, e))?;
    if let Some(cb) = &callback {
        let (phase, done, total) = progress.snapshot();
        cb.call1(py, (phase.as_str(), done, total))?;
    }
    Ok(out)
}
