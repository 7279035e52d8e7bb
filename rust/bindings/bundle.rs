//! A loaded bundle snapshot and the values its methods return.

use std::path::PathBuf;
use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyUntypedArrayMethods, ToPyArray};
use okfast_core::bm25f::{QueryTokens, Stats};
use okfast_core::bundle::CacheReport;
use okfast_core::concept::Concept;
use okfast_core::fs::range::IdRange;
use okfast_core::score::{self, QueryTerms};
use pyo3::prelude::*;

use crate::alloc::release_freed_memory;
use crate::bm25f::{language_of, PyParams, PyQuery, PyStats, PyTermPart};
use crate::convert::{diagnostics, ConceptFields, PyDiagnostic};
use crate::errors::{detached, invalid, to_py};
use crate::load::watched;
use crate::query::PyQueryTerms;
use crate::search::{arrays, excerpt_of, hits_many, hits_of, HitFields};

type Arrays<'py> = (Bound<'py, PyArray1<i32>>, Bound<'py, PyArray1<u32>>);
type FloatArrays<'py> = (Bound<'py, PyArray1<i32>>, Bound<'py, PyArray1<f64>>);

/// What a load through a cache file did with it (docs/spec.md §9).
#[pyclass(frozen, get_all, module = "okfast._native", name = "LoadReport")]
#[derive(Clone)]
pub struct LoadReport {
    /// `hit`, `partial`, `miss` or `rebuilt`.
    status: &'static str,
    /// Why the file was rejected, or why writing the new one failed.
    detail: String,
    /// Concept files read from disk rather than taken from the cache file.
    reread: usize,
    /// Directories listed from disk rather than taken from the cache file.
    listed: usize,
}

impl From<CacheReport> for LoadReport {
    fn from(r: CacheReport) -> LoadReport {
        LoadReport {
            status: r.status.as_str(),
            detail: r.detail,
            reread: r.reread,
            listed: r.listed,
        }
    }
}

/// What a passage shows of the concept at a position.
#[pyclass(frozen, get_all, module = "okfast._native", name = "PassageFields")]
pub struct PassageFields {
    concept_id: String,
    title: Option<String>,
    excerpt: String,
    path: String,
    #[pyo3(name = "type")]
    kind: Option<String>,
    tags: Vec<String>,
    description: Option<String>,
    trust_tier: &'static str,
    status: &'static str,
    /// Microseconds since the epoch; `None` when there is no `stale_after`.
    stale_after_us: Option<i64>,
    /// As written; `None` when the concept declares none.
    authority: Option<String>,
}

/// What one concept declares about others (docs/spec.md §7).
#[pyclass(frozen, get_all, module = "okfast._native", name = "GovernanceDecl")]
pub struct GovernanceDecl {
    position: u32,
    supersedes: Vec<String>,
    superseded_by: Vec<String>,
    conflicts_with: Vec<String>,
}

/// Which fields one query term matched in a concept (docs/spec.md §3.3).
#[pyclass(frozen, get_all, module = "okfast._native", name = "TermFields")]
pub struct TermFields {
    /// The term as written in the query.
    term: String,
    title: bool,
    tags_desc: bool,
    body: bool,
}

/// An immutable, loaded and indexed bundle snapshot.
#[pyclass(frozen, module = "okfast._native", name = "Bundle")]
pub struct PyBundle {
    inner: Arc<okfast_core::Bundle>,
    /// What the load did with its cache file; `None` without one.
    report: Option<LoadReport>,
}

impl PyBundle {
    /// A query's tokens must come from this bundle's analyzer.
    fn check_language(&self, py: Python<'_>, query: &PyQuery) -> PyResult<()> {
        let mine = self.inner.index.bm25f.language;
        let theirs = query.analyzer.language();
        if mine == theirs {
            return Ok(());
        }
        let name = |l: Option<okfast_core::text::analyze::Language>| l.map_or("none", |l| l.name());
        Err(invalid(
            py,
            format!(
                "the query's tokens are for {}; this bundle is analysed for {}",
                name(theirs),
                name(mine)
            ),
        ))
    }

    fn concept_at(&self, py: Python<'_>, position: usize) -> PyResult<&Concept> {
        self.inner
            .concepts
            .get(position)
            .map(|c| &**c)
            .ok_or_else(|| {
                invalid(
                    py,
                    format!("position {position} out of range 0..{}", self.inner.len()),
                )
            })
    }
}

/// The excerpt for either scorer's query: docs/spec.md §3.5 for the weighted
/// count's terms, §12.6 for BM25F tokens.
fn excerpt_for(py: Python<'_>, c: &Concept, query: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(terms) = query.cast::<PyQueryTerms>() {
        return excerpt_of(c, &terms.get().inner).map_err(|e| to_py(py, e));
    }
    let q = query.cast::<PyQuery>()?.get();
    if q.inner.is_empty() {
        return Ok(String::new());
    }
    let body = c.body().map_err(|e| to_py(py, e.into()))?;
    Ok(okfast_core::bm25f::excerpt(&q.analyzer, &body, &q.inner))
}

fn check_limit(py: Python<'_>, limit: Option<i64>) -> PyResult<Option<usize>> {
    match limit {
        None => Ok(None),
        Some(n) if n < 0 => Err(invalid(py, format!("limit must be >= 0, got {n}"))),
        Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
    }
}

/// `parts` consecutive id ranges `(lo, hi)` that cut the bundle at `path`
/// into parts of nearly equal numbers of concept files (docs/spec.md §1.10);
/// only directories are listed.
#[pyfunction]
pub fn split_ranges(
    py: Python<'_>,
    path: PathBuf,
    parts: usize,
) -> PyResult<Vec<(Option<String>, Option<String>)>> {
    let ranges = detached(py, move || okfast_core::fs::range::split(&path, parts))?;
    Ok(ranges.into_iter().map(|r| (r.lo, r.hi)).collect())
}

#[pymethods]
impl PyBundle {
    /// Load and index the bundle at `path` (GIL released, parallel), through
    /// `cache_file` when one is given. `progress(phase, done, total)` is
    /// called about every 100 ms and once at the end; Ctrl-C (or an
    /// exception from `progress`) stops the load. With `lo` or `hi`, only the
    /// concept files whose ids are in `[lo, hi)` (docs/spec.md §1.10).
    #[staticmethod]
    #[pyo3(signature = (path, cache_file=None, progress=None, language=None, lo=None, hi=None))]
    #[allow(clippy::too_many_arguments)]
    fn load(
        py: Python<'_>,
        path: PathBuf,
        cache_file: Option<PathBuf>,
        progress: Option<Py<PyAny>>,
        language: Option<&str>,
        lo: Option<String>,
        hi: Option<String>,
    ) -> PyResult<PyBundle> {
        let language = language_of(py, language)?;
        let through_cache = cache_file.is_some();
        let range = IdRange::new(lo, hi);
        let (b, r) = watched(py, progress, move |p| {
            let loaded =
                okfast_core::Bundle::load_range(&path, cache_file.as_deref(), language, &range, p);
            release_freed_memory();
            loaded
        })?;
        Ok(PyBundle {
            inner: Arc::new(b),
            report: through_cache.then(|| r.into()),
        })
    }

    /// A new snapshot when the files changed on disk (only changed files are
    /// read again), `None` when nothing did. This snapshot is left as it is.
    fn refresh(&self, py: Python<'_>) -> PyResult<Option<PyBundle>> {
        let b = Arc::clone(&self.inner);
        let fresh = detached(py, move || b.refresh())?;
        Ok(fresh.map(|b| PyBundle {
            inner: Arc::new(b),
            report: None,
        }))
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// What the load did with its cache file; `None` when it used none.
    #[getter]
    fn load_report(&self) -> Option<LoadReport> {
        self.report.clone()
    }

    /// The language its BM25F tokens are analysed for (docs/spec.md §12.1);
    /// `None` when they are not stemmed.
    #[getter]
    fn language(&self) -> Option<&'static str> {
        self.inner.index.bm25f.language.map(|l| l.name())
    }

    /// The ids this snapshot holds of its directory, `(lo, hi)`: `lo <= id <
    /// hi` in id order, `None` an open bound (docs/spec.md §1.10).
    #[getter]
    fn id_range(&self) -> (Option<String>, Option<String>) {
        let r = &self.inner.range;
        (r.lo.clone(), r.hi.clone())
    }

    /// How this snapshot was made: `load`, `load, index kept`, `load, index
    /// spliced`, `walk`, `events`, `events, index kept` or `events, index
    /// spliced` (docs/spec.md §1.9).
    #[getter]
    fn made_by(&self) -> &'static str {
        self.inner.made_by.as_str()
    }

    /// The root directory its walk opened, as (device, inode): docs/spec.md §5.10.
    #[getter]
    fn root_identity(&self) -> Option<(u64, u64)> {
        self.inner.root_identity
    }

    /// How many concepts' texts (body and frontmatter) are read from the
    /// cache file on demand rather than held in memory.
    #[getter]
    fn stored_texts(&self) -> usize {
        self.inner
            .concepts
            .iter()
            .filter(|c| c.texts_stored())
            .count()
    }

    #[getter]
    fn root(&self) -> std::ffi::OsString {
        // As the file system spells it (a non-UTF-8 name reaches Python with
        // its bytes escaped, as os.fsdecode does), not `display()`'s lossy
        // text, which names another path (docs/spec.md §3.7).
        self.inner.root.as_os_str().to_os_string()
    }

    #[getter]
    fn okf_version(&self) -> Option<String> {
        self.inner.okf_version.clone()
    }

    #[getter]
    fn concept_ids(&self) -> Vec<String> {
        self.inner
            .concepts
            .iter()
            .map(|c| c.id().to_string())
            .collect()
    }

    /// The load's diagnostics, in docs/spec.md §1.6 order.
    #[getter]
    fn diagnostics(&self, py: Python<'_>) -> PyResult<Vec<Py<PyDiagnostic>>> {
        diagnostics(py, &self.inner.diagnostics)
    }

    fn position(&self, concept_id: &str) -> Option<u32> {
        self.inner.position(concept_id)
    }

    /// Every field of the concept at `position`.
    fn concept(&self, py: Python<'_>, position: usize) -> PyResult<ConceptFields> {
        ConceptFields::of(py, self.concept_at(py, position)?)
    }

    /// `(positions int32, scores uint32)` in docs/spec.md §3.4 order.
    #[pyo3(signature = (terms, *, tag=None, limit=None))]
    fn search_arrays<'py>(
        &self,
        py: Python<'py>,
        terms: &PyQueryTerms,
        tag: Option<String>,
        limit: Option<i64>,
    ) -> PyResult<Arrays<'py>> {
        let limit = check_limit(py, limit)?;
        let (b, terms) = (Arc::clone(&self.inner), Arc::clone(&terms.inner));
        let r = detached(py, move || {
            Ok(score::search(&b, &terms, tag.as_deref(), limit))
        })?;
        Ok(arrays(py, r.positions, r.scores))
    }

    /// [`search_arrays`](Self::search_arrays) of each of `terms`, scored in
    /// parallel in one call with the GIL released (docs/spec.md §3.7).
    #[pyo3(signature = (terms, *, tag=None, limit=None))]
    fn search_arrays_many<'py>(
        &self,
        py: Python<'py>,
        terms: Vec<PyRef<'py, PyQueryTerms>>,
        tag: Option<String>,
        limit: Option<i64>,
    ) -> PyResult<Vec<Arrays<'py>>> {
        let limit = check_limit(py, limit)?;
        let b = Arc::clone(&self.inner);
        let terms: Vec<Arc<QueryTerms>> = terms.iter().map(|t| Arc::clone(&t.inner)).collect();
        let rs = detached(py, move || {
            let refs: Vec<&QueryTerms> = terms.iter().map(|t| &**t).collect();
            Ok(score::search_many(&b, &refs, tag.as_deref(), limit))
        })?;
        Ok(rs
            .into_iter()
            .map(|r| arrays(py, r.positions, r.scores))
            .collect())
    }

    /// The hits of docs/spec.md §3.7, in §3.4 order.
    #[pyo3(signature = (terms, *, tag=None, limit=None))]
    fn search_hits(
        &self,
        py: Python<'_>,
        terms: &PyQueryTerms,
        tag: Option<String>,
        limit: Option<i64>,
    ) -> PyResult<Vec<HitFields>> {
        let limit = check_limit(py, limit)?;
        let (b, terms) = (Arc::clone(&self.inner), Arc::clone(&terms.inner));
        detached(py, move || {
            hits_of(
                &b,
                &terms,
                &score::search(&b, &terms, tag.as_deref(), limit),
            )
        })
    }

    /// [`search_hits`](Self::search_hits) of each of `terms`: scored and
    /// given their excerpts in parallel, in one call with the GIL released
    /// (docs/spec.md §3.7). A failure is the first query's, in order.
    #[pyo3(signature = (terms, *, tag=None, limit=None))]
    fn search_hits_many(
        &self,
        py: Python<'_>,
        terms: Vec<PyRef<'_, PyQueryTerms>>,
        tag: Option<String>,
        limit: Option<i64>,
    ) -> PyResult<Vec<Vec<HitFields>>> {
        let limit = check_limit(py, limit)?;
        let b = Arc::clone(&self.inner);
        let terms: Vec<Arc<QueryTerms>> = terms.iter().map(|t| Arc::clone(&t.inner)).collect();
        detached(py, move || hits_many(&b, &terms, tag.as_deref(), limit))
    }

    /// Rank of each concept id in ordinal (code point) order, by position.
    fn ordinal_ranks<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u32>> {
        (*self.inner.ordinal_rank).to_pyarray(py)
    }

    /// `stale_after` of each concept in microseconds since the epoch (UTC);
    /// `NEVER_STALE_US` where there is none.
    fn stale_after_us<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        self.inner.columns.stale_after_us.to_pyarray(py)
    }

    /// Each concept's authority rank (docs/spec.md §7): its index in
    /// `AUTHORITIES`, `AUTHORITY_UNKNOWN` or `AUTHORITY_ABSENT`.
    fn authority_ranks<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u8>> {
        self.inner.columns.authority_ranks.to_pyarray(py)
    }

    /// docs/spec.md §5.8 pinning of each position: the trimmed title folds to
    /// `fold(title_key)`, or the id's last segment equals `id_key`.
    fn pinned<'py>(
        &self,
        py: Python<'py>,
        positions: PyReadonlyArray1<'py, i32>,
        title_key: &str,
        id_key: &str,
    ) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let folded = okfast_core::text::fold(title_key);
        let mut out = Vec::with_capacity(positions.len());
        for &p in positions.as_slice()? {
            let c = self.concept_at(py, usize::try_from(p).unwrap_or(usize::MAX))?;
            out.push(score::is_pinned(c, &folded, id_key));
        }
        Ok(out.into_pyarray(py))
    }

    /// What a passage shows of the concept at `position` for `terms`.
    fn passage_fields(
        &self,
        py: Python<'_>,
        position: usize,
        terms: &Bound<'_, PyAny>,
    ) -> PyResult<PassageFields> {
        let c = self.concept_at(py, position)?;
        Ok(PassageFields {
            concept_id: c.id.clone(),
            title: c.title.clone(),
            excerpt: excerpt_for(py, c, terms)?,
            path: c.path(),
            kind: c.kind.clone(),
            tags: c.tags.clone(),
            description: c.description.clone(),
            trust_tier: c.trust_tier.as_str(),
            status: c.status.as_str(),
            stale_after_us: c.stale_after,
            authority: c.authority.clone(),
        })
    }

    /// The body of the concept at `position`.
    fn body(&self, py: Python<'_>, position: usize) -> PyResult<String> {
        let c = self.concept_at(py, position)?;
        c.body()
            .map(|b| b.into_owned())
            .map_err(|e| to_py(py, e.into()))
    }

    /// The concepts that declare supersession or conflicts (docs/spec.md §7),
    /// in position order.
    fn governance(&self) -> Vec<GovernanceDecl> {
        let b = &self.inner;
        b.columns
            .governed
            .iter()
            .filter_map(|&i| {
                b.concepts[i as usize]
                    .governance
                    .as_deref()
                    .map(|g| GovernanceDecl {
                        position: i,
                        supersedes: g.supersedes.clone(),
                        superseded_by: g.superseded_by.clone(),
                        conflicts_with: g.conflicts_with.clone(),
                    })
            })
            .collect()
    }

    /// Which fields each term matches in the concept at `position`, in query
    /// order (docs/spec.md §3.3).
    fn explain(
        &self,
        py: Python<'_>,
        position: usize,
        terms: &PyQueryTerms,
    ) -> PyResult<Vec<TermFields>> {
        let c = self.concept_at(py, position)?;
        Ok(score::explain(c, &terms.inner)
            .map_err(|e| to_py(py, e.into()))?
            .into_iter()
            .map(|(term, [title, tags_desc, body])| TermFields {
                term,
                title,
                tags_desc,
                body,
            })
            .collect())
    }

    /// The excerpt of the concept at `position` for `terms` (docs/spec.md
    /// §3.5, or §12.6 for BM25F tokens).
    fn excerpt(
        &self,
        py: Python<'_>,
        position: usize,
        terms: &Bound<'_, PyAny>,
    ) -> PyResult<String> {
        let c = self.concept_at(py, position)?;
        excerpt_for(py, c, terms)
    }

    /// This bundle's own BM25F statistics for `tokens` (docs/spec.md §12.4):
    /// any tokens, so a catalog's sources analysed for different languages
    /// can sum their statistics over the union of their queries' tokens.
    fn bm25f_stats(&self, tokens: Vec<String>) -> PyStats {
        PyStats {
            inner: okfast_core::bm25f::Stats::of(&self.inner.index.bm25f, &tokens),
        }
    }

    /// `(positions int32, scores float64)` by BM25F score then id
    /// (docs/spec.md §12.3), scored with `stats`.
    #[pyo3(signature = (query, stats, params, *, tag=None, limit=None))]
    fn search_bm25f<'py>(
        &self,
        py: Python<'py>,
        query: &PyQuery,
        stats: &PyStats,
        params: &PyParams,
        tag: Option<String>,
        limit: Option<i64>,
    ) -> PyResult<FloatArrays<'py>> {
        let limit = check_limit(py, limit)?;
        self.check_language(py, query)?;
        let (b, tokens) = (Arc::clone(&self.inner), Arc::clone(&query.inner));
        let (stats, params) = (stats.inner.clone(), params.inner);
        let r = detached(py, move || {
            Ok(okfast_core::bm25f::search(
                &b,
                &tokens,
                &stats,
                &params,
                tag.as_deref(),
                limit,
            ))
        })?;
        Ok(arrays(py, r.positions, r.scores))
    }

    /// [`search_bm25f`](Self::search_bm25f) of each of `queries`, the
    /// `i`-th scored with `stats[i]`, in parallel in one call with the GIL
    /// released (docs/spec.md §3.7, §12.3).
    #[pyo3(signature = (queries, stats, params, *, tag=None, limit=None))]
    fn search_bm25f_many<'py>(
        &self,
        py: Python<'py>,
        queries: Vec<PyRef<'py, PyQuery>>,
        stats: Vec<PyRef<'py, PyStats>>,
        params: &PyParams,
        tag: Option<String>,
        limit: Option<i64>,
    ) -> PyResult<Vec<FloatArrays<'py>>> {
        let limit = check_limit(py, limit)?;
        if queries.len() != stats.len() {
            return Err(invalid(
                py,
                format!(
                    "{} queries but {} statistics: one each",
                    queries.len(),
                    stats.len()
                ),
            ));
        }
        for q in &queries {
            self.check_language(py, q)?;
        }
        let b = Arc::clone(&self.inner);
        let tokens: Vec<Arc<QueryTokens>> = queries.iter().map(|q| Arc::clone(&q.inner)).collect();
        let stats: Vec<Stats> = stats.iter().map(|s| s.inner.clone()).collect();
        let params = params.inner;
        let rs = detached(py, move || {
            let batch: Vec<(&QueryTokens, &Stats)> =
                tokens.iter().map(|t| &**t).zip(&stats).collect();
            Ok(okfast_core::bm25f::search_many(
                &b,
                &batch,
                &params,
                tag.as_deref(),
                limit,
            ))
        })?;
        Ok(rs
            .into_iter()
            .map(|r| arrays(py, r.positions, r.scores))
            .collect())
    }

    /// Why the concept at `position` has its BM25F score (docs/spec.md §12.5).
    fn explain_bm25f(
        &self,
        py: Python<'_>,
        position: usize,
        query: &PyQuery,
        stats: &PyStats,
        params: &PyParams,
    ) -> PyResult<Vec<PyTermPart>> {
        self.concept_at(py, position)?;
        self.check_language(py, query)?;
        okfast_core::bm25f::explain(
            &self.inner.index.bm25f,
            &query.inner,
            &stats.inner,
            &params.inner,
            position as u32,
        )
        .into_iter()
        .map(|t| PyTermPart::of(py, t))
        .collect()
    }
}
