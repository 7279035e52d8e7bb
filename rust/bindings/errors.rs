//! The one map from core errors to Python exceptions, and the one helper
//! every entry point runs its work through: the GIL released, the error
//! mapped.
//!
//! The exception classes are defined in Python, in `okfast.errors`, with every
//! other class okfast raises (docs/spec.md §8), so that Rust and Python raise
//! the very same types. That module is pure Python and never imports this
//! one; it is imported when the first error is raised, and each class is then
//! looked up once.

use okfast_core::Error;
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
static BUNDLE_NOT_FOUND: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static INVALID_ARGUMENT: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static INVALID_ARGUMENT_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static CACHE_DAMAGED: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The class `name` of `okfast.errors`, cached in `cell`.
fn error_class<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &str,
) -> PyResult<Bound<'py, PyType>> {
    let ty = cell.get_or_try_init(py, || -> PyResult<Py<PyType>> {
        let errors = ERRORS.get_or_try_init(py, || -> PyResult<Py<PyModule>> {
            Ok(py.import("okfast.errors")?.unbind())
        })?;
        Ok(errors
            .bind(py)
            .getattr(name)?
            .cast_into::<PyType>()?
            .unbind())
    })?;
    Ok(ty.bind(py).clone())
}

/// The one map from core errors to Python exceptions.
pub fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let ty = match &e {
        Error::BundleNotFound { .. } => error_class(py, &BUNDLE_NOT_FOUND, "BundleNotFoundError"),
        Error::InvalidArgument(_) => error_class(py, &INVALID_ARGUMENT, "InvalidArgumentError"),
        // Only reached when no Python error explains the stop.
        Error::Cancelled => return PyKeyboardInterrupt::new_err(e.to_string()),
        Error::CacheDamaged(_) => error_class(py, &CACHE_DAMAGED, "CacheDamagedError"),
    };
    match ty {
        Ok(t) => PyErr::from_type(t, message(py, &e)),
        Err(err) => err,
    }
}

/// `e`'s message, with a bundle root quoted as Python quotes a path in
/// every other message (`repr` of the str the caller gave, a non-UTF-8 byte
/// as its lone surrogate), not as Rust's `Debug` would (docs/spec.md §10.1).
fn message(py: Python<'_>, e: &Error) -> String {
    let Error::BundleNotFound { path, reason } = e else {
        return e.to_string();
    };
    let Ok(text) = path.as_os_str().into_pyobject(py);
    let quoted = text
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| format!("{path:?}"));
    format!("bundle root {quoted} is not a readable directory: {reason}")
}

/// An `InvalidArgumentError` saying `message`.
pub fn invalid(py: Python<'_>, message: String) -> PyErr {
    to_py(py, Error::InvalidArgument(message))
}

/// `what` could not be read from a Python value (`e`, from its extraction):
/// okfast's own errors, as `okfast.errors` defines them — a value of the
/// wrong type `InvalidArgumentTypeError`, one out of range (negative, past
/// 2**64 - 1, the wrong length, text that is not Unicode)
/// `InvalidArgumentError` — not the conversion's bare built-in.
pub fn unreadable(py: Python<'_>, what: &str, e: PyErr) -> PyErr {
    let message = format!("{what}: {}", e.value(py));
    let typed = e.is_instance_of::<pyo3::exceptions::PyTypeError>(py);
    let ty = if typed {
        error_class(py, &INVALID_ARGUMENT_TYPE, "InvalidArgumentTypeError")
    } else {
        error_class(py, &INVALID_ARGUMENT, "InvalidArgumentError")
    };
    match ty {
        Ok(t) => PyErr::from_type(t, message),
        Err(err) => err,
    }
}

/// Run `work` with the GIL released, its error mapped: the heavy part of
/// every entry point. Inputs are owned Rust data taken before; Python
/// objects are built after.
pub fn detached<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> Result<T, Error> + Send,
{
    py.detach(work).map_err(|e| to_py(py, e))
}
