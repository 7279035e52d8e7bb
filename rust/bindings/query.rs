//! A query's terms, split and folded once per search (docs/spec.md §3.1) and
//! handed to every step that needs them: each source's search, the excerpts,
//! `explain`.

use std::sync::Arc;

use okfast_core::score::QueryTerms;
use pyo3::prelude::*;

#[pyclass(frozen, module = "okfast._native", name = "QueryTerms")]
pub struct PyQueryTerms {
    pub inner: Arc<QueryTerms>,
}

#[pymethods]
impl PyQueryTerms {
    #[new]
    fn new(text: &str) -> PyQueryTerms {
        PyQueryTerms {
            inner: Arc::new(QueryTerms::new(text)),
        }
    }

    /// Whether the text holds no term (only white space).
    fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// Each term as written, in query order (duplicates kept).
    #[getter]
    fn written(&self) -> Vec<String> {
        self.inner.written().map(|(t, _)| t.to_string()).collect()
    }
}
