//! The BM25F scorer's values (docs/spec.md §12): its parameters, a query's
//! tokens for one language, the statistics a search is scored with, and the
//! parts of a score `explain` shows.

use std::sync::Arc;

use okfast_core::bm25f::{FieldPart, Params, QueryTokens, Stats, TermPart};
use okfast_core::index::bm25f::BM25F_FIELDS;
use okfast_core::text::analyze::{Analyzer, Language};
use pyo3::prelude::*;

use crate::errors::{invalid, unreadable};

/// The language called `name` (`None` for no language).
pub fn language_of(py: Python<'_>, name: Option<&str>) -> PyResult<Option<Language>> {
    match name {
        None => Ok(None),
        Some(n) => Language::from_name(n).map(Some).ok_or_else(|| {
            let all: Vec<&str> = Language::ALL.iter().map(|l| l.name()).collect();
            invalid(
                py,
                format!(
                    "unknown language {n:?} (one of {}, or None)",
                    all.join(", ")
                ),
            )
        }),
    }
}

/// `language`'s stop words (NLTK's list), as written there.
#[pyfunction]
pub fn stop_words(py: Python<'_>, language: &str) -> PyResult<Vec<&'static str>> {
    let l = language_of(py, Some(language))?.unwrap_or(Language::English);
    Ok(l.stop_words().to_vec())
}

/// The scorer's parameters, checked.
#[pyclass(frozen, module = "okfast._native", name = "Bm25fParams")]
pub struct PyParams {
    pub inner: Params,
}

#[pymethods]
impl PyParams {
    #[new]
    fn new(py: Python<'_>, k1: f64, weights: [f64; 4], b: [f64; 4]) -> PyResult<PyParams> {
        let inner = Params { k1, weights, b };
        inner.check().map_err(|e| invalid(py, e))?;
        Ok(PyParams { inner })
    }

    #[getter]
    fn k1(&self) -> f64 {
        self.inner.k1
    }

    #[getter]
    fn weights(&self) -> [f64; 4] {
        self.inner.weights
    }

    #[getter]
    fn b(&self) -> [f64; 4] {
        self.inner.b
    }
}

/// A query's tokens for one language, stop words dropped when asked.
#[pyclass(frozen, module = "okfast._native", name = "Bm25fQuery")]
pub struct PyQuery {
    pub inner: Arc<QueryTokens>,
    pub analyzer: Arc<Analyzer>,
}

#[pymethods]
impl PyQuery {
    #[new]
    #[pyo3(signature = (text, language, stop_words))]
    fn new(
        py: Python<'_>,
        text: &str,
        language: Option<&str>,
        stop_words: bool,
    ) -> PyResult<PyQuery> {
        let analyzer = Analyzer::new(language_of(py, language)?);
        Ok(PyQuery {
            inner: Arc::new(QueryTokens::new(&analyzer, text, stop_words)),
            analyzer: Arc::new(analyzer),
        })
    }

    /// The distinct tokens, in order of first appearance.
    #[getter]
    fn tokens(&self) -> Vec<String> {
        self.inner.tokens.clone()
    }

    /// The words dropped as stop words, in query order.
    #[getter]
    fn stopped(&self) -> Vec<String> {
        self.inner.stopped.clone()
    }

    #[getter]
    fn language(&self) -> Option<&'static str> {
        self.analyzer.language().map(Language::name)
    }
}

/// `Bm25fStats(n, totals, df)`'s arguments.
type StatsArgs = (u64, [u64; 4], Vec<(String, u64)>);

/// The statistics a search is scored with: a bundle's own, or several
/// summed (docs/spec.md §12.4).
#[pyclass(frozen, module = "okfast._native", name = "Bm25fStats")]
#[derive(Clone)]
pub struct PyStats {
    pub inner: Stats,
}

#[pymethods]
impl PyStats {
    /// Statistics from their values: `n` concepts, each field's total length
    /// and `(token, document frequency)` pairs. A distributed resolver sums
    /// the shards' statistics and sends them back this way (docs/spec.md
    /// §12.4, §15); every value is an integer, so nothing is lost.
    /// Each value is checked: integers from 0 to 2**64 - 1, four totals,
    /// and no document frequency above `n` (which would make an idf
    /// negative, a term the full ranking and the top-k would count apart).
    #[new]
    fn new(
        py: Python<'_>,
        n: &Bound<'_, PyAny>,
        totals: &Bound<'_, PyAny>,
        df: &Bound<'_, PyAny>,
    ) -> PyResult<PyStats> {
        let n: u64 = n
            .extract()
            .map_err(|e| unreadable(py, "Bm25fStats: n (an integer from 0 to 2**64 - 1)", e))?;
        let totals: [u64; 4] = totals.extract().map_err(|e| {
            unreadable(
                py,
                "Bm25fStats: totals (four integers from 0 to 2**64 - 1)",
                e,
            )
        })?;
        let df: Vec<(String, u64)> = df.extract().map_err(|e| {
            unreadable(py, "Bm25fStats: df ((token, integer from 0 to n) pairs)", e)
        })?;
        if let Some((t, d)) = df.iter().find(|(_, d)| *d > n) {
            return Err(invalid(
                py,
                format!("Bm25fStats: the document frequency of {t:?} ({d}) is above n ({n})"),
            ));
        }
        let (tokens, df) = df.into_iter().unzip();
        Ok(PyStats {
            inner: Stats {
                n,
                totals,
                tokens,
                df,
            },
        })
    }

    /// Pickled as its values (`Bm25fStats(n, totals, df)`).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, StatsArgs)> {
        let me = slf.get();
        Ok((slf.get_type().into_any(), (me.n(), me.totals(), me.df())))
    }

    /// The sum of `parts` (the statistics of several sources).
    #[staticmethod]
    fn sum(py: Python<'_>, parts: Vec<PyRef<'_, PyStats>>) -> PyResult<PyStats> {
        let mut inner = Stats::default();
        for p in parts {
            if !inner.checked_add(&p.inner) {
                return Err(invalid(
                    py,
                    "Bm25fStats.sum: a sum passes 2**64 - 1".to_string(),
                ));
            }
        }
        Ok(PyStats { inner })
    }

    #[getter]
    fn n(&self) -> u64 {
        self.inner.n
    }

    /// Each field's total length, in tokens.
    #[getter]
    fn totals(&self) -> [u64; 4] {
        self.inner.totals
    }

    /// `(token, document frequency)` of each token asked about.
    #[getter]
    fn df(&self) -> Vec<(String, u64)> {
        self.inner
            .tokens
            .iter()
            .cloned()
            .zip(self.inner.df.iter().copied())
            .collect()
    }
}

/// How one field adds to one token's score (docs/spec.md §12.5).
#[pyclass(frozen, get_all, module = "okfast._native", name = "Bm25fFieldPart")]
pub struct PyFieldPart {
    field: &'static str,
    tf: u32,
    length: u32,
    weighted_tf: f64,
    contribution: f64,
}

/// One token's part of one concept's score.
#[pyclass(frozen, get_all, module = "okfast._native", name = "Bm25fTermPart")]
pub struct PyTermPart {
    token: String,
    idf: f64,
    weighted_tf: f64,
    score: f64,
    fields: Vec<Py<PyFieldPart>>,
}

impl PyTermPart {
    pub fn of(py: Python<'_>, t: TermPart) -> PyResult<PyTermPart> {
        let fields = t
            .fields
            .iter()
            .zip(BM25F_FIELDS)
            .map(|(p, name): (&FieldPart, &'static str)| {
                Py::new(
                    py,
                    PyFieldPart {
                        field: name,
                        tf: p.tf,
                        length: p.length,
                        weighted_tf: p.weighted_tf,
                        contribution: p.contribution,
                    },
                )
            })
            .collect::<PyResult<_>>()?;
        Ok(PyTermPart {
            token: t.token,
            idf: t.idf,
            weighted_tf: t.weighted_tf,
            score: t.score,
            fields,
        })
    }
}
