//! okfast._native: thin PyO3 classes over okfast-core, one file per class
//! family. Inputs are copied into owned Rust data, the work runs with the GIL
//! released ([`errors::detached`]), and results come back as numpy arrays
//! (results of unknown size) or frozen classes with named fields (single
//! values), built afterwards.

mod alloc;
mod bm25f;
mod bundle;
mod convert;
mod errors;
mod load;
mod order;
mod query;
mod search;

use okfast_core::concept::{AUTHORITIES, AUTHORITY_ABSENT, AUTHORITY_UNKNOWN, NEVER_STALE_US};
use okfast_core::index::bm25f::BM25F_FIELDS;
use okfast_core::index::FIELDS;
use okfast_core::text::analyze::Language;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<bundle::PyBundle>()?;
    m.add_class::<bundle::LoadReport>()?;
    m.add_class::<search::HitFields>()?;
    m.add_class::<bundle::PassageFields>()?;
    m.add_class::<bundle::GovernanceDecl>()?;
    m.add_class::<bundle::TermFields>()?;
    m.add_class::<convert::ConceptFields>()?;
    m.add_class::<convert::ConceptRead>()?;
    m.add_class::<convert::PyActor>()?;
    m.add_class::<convert::PyDiagnostic>()?;
    m.add_class::<query::PyQueryTerms>()?;
    m.add_class::<bm25f::PyParams>()?;
    m.add_class::<bm25f::PyQuery>()?;
    m.add_class::<bm25f::PyStats>()?;
    m.add_class::<bm25f::PyTermPart>()?;
    m.add_class::<bm25f::PyFieldPart>()?;
    m.add_function(wrap_pyfunction!(convert::read_concept, m)?)?;
    m.add_function(wrap_pyfunction!(bm25f::stop_words, m)?)?;
    m.add_function(wrap_pyfunction!(bundle::split_ranges, m)?)?;
    m.add_function(wrap_pyfunction!(order::fused_order, m)?)?;
    m.add_function(wrap_pyfunction!(order::fairness_order, m)?)?;
    // Constants both sides need, defined once, here (docs/spec.md §3.3, §7, §2.2).
    let py = m.py();
    let weights = FIELDS.iter().map(|&(f, w)| (f.name(), w));
    m.add("FIELD_WEIGHTS", PyTuple::new(py, weights)?)?;
    m.add("AUTHORITIES", PyTuple::new(py, AUTHORITIES)?)?;
    m.add("AUTHORITY_UNKNOWN", AUTHORITY_UNKNOWN)?;
    m.add("AUTHORITY_ABSENT", AUTHORITY_ABSENT)?;
    m.add("NEVER_STALE_US", NEVER_STALE_US)?;
    m.add("WHITE_SPACE", okfast_core::text::WHITE_SPACE)?;
    let languages = Language::ALL.iter().map(|l| l.name());
    m.add("LANGUAGES", PyTuple::new(py, languages)?)?;
    m.add("BM25F_FIELDS", PyTuple::new(py, BM25F_FIELDS)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
