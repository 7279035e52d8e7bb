//! Orderings across sources over whole result arrays (docs/spec.md §5.4,
//! §5.7): the resolver hands over per-passage keys and gets a permutation.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyUntypedArrayMethods};
use okfast_core::order;
use pyo3::prelude::*;

use crate::errors::{detached, invalid};

fn strategy_of(py: Python<'_>, name: &str) -> PyResult<order::Strategy> {
    Ok(match name {
        "merged" => order::Strategy::Merged,
        "priority_weighted" => order::Strategy::PriorityWeighted,
        "reciprocal_rank" => order::Strategy::ReciprocalRank,
        other => return Err(invalid(py, format!("no fused strategy {other:?}"))),
    })
}

/// The fused order of docs/spec.md §5.4 (and §5.7 with `fairness_quota`) over
/// parallel per-passage arrays: a permutation of `0..n`.
#[pyfunction]
#[pyo3(signature = (strategy, score, priority, source_rank, concept_rank, source_list_rank, fairness_quota=None))]
#[allow(clippy::too_many_arguments)]
pub fn fused_order<'py>(
    py: Python<'py>,
    strategy: &str,
    score: PyReadonlyArray1<'py, f64>,
    priority: PyReadonlyArray1<'py, i32>,
    source_rank: PyReadonlyArray1<'py, u32>,
    concept_rank: PyReadonlyArray1<'py, u32>,
    source_list_rank: PyReadonlyArray1<'py, u32>,
    fairness_quota: Option<usize>,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    let strategy = strategy_of(py, strategy)?;
    let n = score.len();
    for (name, len) in [
        ("priority", priority.len()),
        ("source_rank", source_rank.len()),
        ("concept_rank", concept_rank.len()),
        ("source_list_rank", source_list_rank.len()),
    ] {
        if len != n {
            return Err(invalid(
                py,
                format!("{name} has {len} entries, score has {n}"),
            ));
        }
    }
    if fairness_quota == Some(0) {
        return Err(invalid(py, "fairness quota must be > 0".into()));
    }
    let owned = |a: &PyReadonlyArray1<'py, u32>| a.as_array().to_vec();
    let score = score.as_array().to_vec();
    if score.iter().any(|s| s.is_nan()) {
        return Err(invalid(py, "a score is NaN".into()));
    }
    let (source_rank, concept_rank, source_list_rank) = (
        owned(&source_rank),
        owned(&concept_rank),
        owned(&source_list_rank),
    );
    let priority = priority.as_array().to_vec();
    let out = detached(py, move || {
        let keys = order::Keys {
            score: &score,
            priority: &priority,
            source_rank: &source_rank,
            concept_rank: &concept_rank,
            source_list_rank: &source_list_rank,
        };
        Ok(order::fused(&keys, strategy, fairness_quota))
    })?;
    Ok(out.into_pyarray(py))
}

/// docs/spec.md §5.7 alone: the fairness permutation of an already sorted
/// list, given each passage's source.
#[pyfunction]
pub fn fairness_order<'py>(
    py: Python<'py>,
    sources: PyReadonlyArray1<'py, u32>,
    quota: usize,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    if quota == 0 {
        return Err(invalid(py, "fairness quota must be > 0".into()));
    }
    let sources = sources.as_array().to_vec();
    let out = detached(py, move || Ok(order::fairness(&sources, quota)))?;
    Ok(out.into_pyarray(py))
}
