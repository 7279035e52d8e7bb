//! What a bundle's searches return (docs/spec.md §3.7): hits with their
//! excerpts, or positions and scores as numpy arrays, for one query or for
//! many scored in parallel in one call.

use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1};
use okfast_core::concept::Concept;
use okfast_core::score::{self, QueryTerms};
use okfast_core::{Bundle, Error};
use pyo3::prelude::*;
use rayon::prelude::*;

/// One hit of a bundle's search (docs/spec.md §3.7).
#[pyclass(frozen, get_all, module = "okfast._native", name = "Hit")]
pub struct HitFields {
    concept_id: String,
    score: u32,
    title: Option<String>,
    excerpt: String,
    path: String,
}

/// docs/spec.md §3.5 excerpt; the body is read only when there are terms to find.
pub fn excerpt_of(c: &Concept, terms: &QueryTerms) -> Result<String, Error> {
    if terms.is_empty() {
        return Ok(String::new());
    }
    Ok(score::excerpt(&c.body()?, terms))
}

/// The hits of a weighted-count result: each with its concept's id, title
/// and path and its excerpt for `terms`.
pub fn hits_of(b: &Bundle, terms: &QueryTerms, r: &score::Ranked) -> Result<Vec<HitFields>, Error> {
    r.positions
        .iter()
        .zip(&r.scores)
        .map(|(&p, &s)| {
            let c = &b.concepts[p as usize];
            Ok(HitFields {
                concept_id: c.id.clone(),
                score: s,
                title: c.title.clone(),
                excerpt: excerpt_of(c, terms)?,
                path: c.path(),
            })
        })
        .collect()
}

/// The hits of each of `terms`, scored and given their excerpts in
/// parallel. A failure (a damaged stored text) is the first query's, in
/// order, as a loop of single searches would raise it.
pub fn hits_many(
    b: &Bundle,
    terms: &[Arc<QueryTerms>],
    tag: Option<&str>,
    limit: Option<usize>,
) -> Result<Vec<Vec<HitFields>>, Error> {
    let terms: Vec<&QueryTerms> = terms.iter().map(|t| &**t).collect();
    let ranked = score::search_many(b, &terms, tag, limit);
    let hits: Vec<Result<Vec<HitFields>, Error>> = terms
        .par_iter()
        .zip(&ranked)
        .map(|(terms, r)| hits_of(b, terms, r))
        .collect();
    hits.into_iter().collect()
}

/// A result's positions as numpy's `int32`, with its scores.
pub fn arrays<'py, S: numpy::Element>(
    py: Python<'py>,
    positions: Vec<u32>,
    scores: Vec<S>,
) -> (Bound<'py, PyArray1<i32>>, Bound<'py, PyArray1<S>>) {
    let positions: Vec<i32> = positions.into_iter().map(|p| p as i32).collect();
    (positions.into_pyarray(py), scores.into_pyarray(py))
}
