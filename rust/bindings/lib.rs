//! okfast._native: thin PyO3 classes over okfast-core. Inputs are copied into
//! owned Rust data, the work runs with the GIL released (`py.detach`), and
//! results come back as numpy arrays or small tuples built afterwards.

use std::sync::Arc;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyUntypedArrayMethods, ToPyArray};
use okfast_core::concept::{parse_frontmatter, Actor, Concept};
use okfast_core::order;
use okfast_core::progress::Progress;
use okfast_core::score::{self, query_terms};
use okfast_core::yaml::Value;
use okfast_core::Error;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyType};

// The exception classes are defined in Python, in `okfast.errors`, with every
// other class okfast raises (docs/spec.md §8), so that Rust and Python raise
// the very same types. That module is pure Python and never imports this one;
// it is imported when the first error is raised, and each class is then
// looked up once.
static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
static BUNDLE_NOT_FOUND: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static INVALID_ARGUMENT: PyOnceLock<Py<PyType>> = PyOnceLock::new();
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
fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let ty = match &e {
        Error::BundleNotFound { .. } => error_class(py, &BUNDLE_NOT_FOUND, "BundleNotFoundError"),
        Error::InvalidArgument(_) => error_class(py, &INVALID_ARGUMENT, "InvalidArgumentError"),
        // Only reached when no Python error explains the stop.
        Error::Cancelled => return PyKeyboardInterrupt::new_err(e.to_string()),
        Error::CacheDamaged(_) => error_class(py, &CACHE_DAMAGED, "CacheDamagedError"),
    };
    match ty {
        Ok(t) => PyErr::from_type(t, e.to_string()),
        Err(err) => err,
    }
}

/// SPEC §3.5 excerpt; the body is read only when there are terms to find.
fn excerpt_of(c: &Concept, terms: &[(String, u32)]) -> Result<String, Error> {
    if terms.is_empty() {
        return Ok(String::new());
    }
    Ok(score::excerpt(&c.body()?, terms))
}

fn value_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Str(s) => s.into_pyobject(py)?.into_any(),
        Value::Seq(items) => {
            let l = PyList::empty(py);
            for i in items {
                l.append(value_to_py(py, i)?)?;
            }
            l.into_any()
        }
        Value::Map(entries) => map_to_py(py, entries)?.into_any(),
    })
}

fn map_to_py<'py>(py: Python<'py>, entries: &[(String, Value)]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in entries {
        d.set_item(k, value_to_py(py, v)?)?;
    }
    Ok(d)
}

fn actor_to_py<'py>(py: Python<'py>, a: &Actor) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("by", &a.by)?;
    d.set_item("at", &a.at)?;
    Ok(d)
}

fn concept_to_py<'py>(py: Python<'py>, c: &Concept) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("concept_id", &c.id)?;
    d.set_item("path", c.path())?;
    d.set_item("type", &c.kind)?;
    d.set_item("title", &c.title)?;
    d.set_item("description", &c.description)?;
    d.set_item("tags", &c.tags)?;
    d.set_item("resource", &c.resource)?;
    d.set_item("status", c.status.as_str())?;
    d.set_item("status_known", c.status_known)?;
    d.set_item("stale_after_us", c.stale_after)?;
    d.set_item(
        "generated",
        c.generated
            .as_ref()
            .map(|a| actor_to_py(py, a))
            .transpose()?,
    )?;
    let verified = PyList::empty(py);
    for a in &c.verified {
        verified.append(actor_to_py(py, a)?)?;
    }
    d.set_item("verified", verified)?;
    d.set_item("trust_tier", c.trust_tier.as_str())?;
    d.set_item("authority", &c.authority)?;
    let g = c.governance.as_deref().cloned().unwrap_or_default();
    d.set_item("supersedes", g.supersedes)?;
    d.set_item("superseded_by", g.superseded_by)?;
    d.set_item("conflicts_with", g.conflicts_with)?;
    // One read (and checksum) of a stored concept's texts serves both.
    let texts = c.source.read().map_err(|e| to_py(py, e.into()))?;
    d.set_item("body", &*texts.body)?;
    let frontmatter = parse_frontmatter(&texts.frontmatter);
    d.set_item("frontmatter", map_to_py(py, &frontmatter)?)?;
    Ok(d)
}

fn check_limit(py: Python<'_>, limit: Option<i64>) -> PyResult<Option<usize>> {
    match limit {
        None => Ok(None),
        Some(n) if n < 0 => Err(to_py(
            py,
            Error::InvalidArgument(format!("limit must be >= 0, got {n}")),
        )),
        Some(n) => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
    }
}

type Arrays<'py> = (Bound<'py, PyArray1<i32>>, Bound<'py, PyArray1<u32>>);
type GovernanceRow = (u32, Vec<String>, Vec<String>, Vec<String>);
type HitRow = (String, u32, Option<String>, String, String);
type PassageRow = (
    String,
    Option<String>,
    String,
    String,
    Option<String>,
    Vec<String>,
    Option<String>,
    &'static str,
    &'static str,
    Option<i64>,
    Option<String>,
);

/// An immutable, loaded and indexed bundle snapshot.
#[pyclass(frozen, module = "okfast._native", name = "Bundle")]
struct PyBundle {
    inner: Arc<okfast_core::Bundle>,
}

impl PyBundle {
    fn concept_at(&self, py: Python<'_>, position: usize) -> PyResult<&Concept> {
        self.inner
            .concepts
            .get(position)
            .map(|c| &**c)
            .ok_or_else(|| {
                to_py(
                    py,
                    Error::InvalidArgument(format!(
                        "position {position} out of range 0..{}",
                        self.inner.len()
                    )),
                )
            })
    }
}

#[pymethods]
impl PyBundle {
    /// Load and index the bundle at `path` (GIL released, parallel).
    /// `progress(phase, done, total)` is called about every 100 ms and once at
    /// the end; Ctrl-C (or an exception from `progress`) stops the load.
    #[staticmethod]
    #[pyo3(signature = (path, progress=None))]
    fn load(
        py: Python<'_>,
        path: std::path::PathBuf,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<PyBundle> {
        let (b, _) = watched(py, progress, move |p| {
            let loaded = okfast_core::Bundle::load_with(&path, None, p);
            release_freed_memory();
            loaded
        })?;
        Ok(PyBundle { inner: Arc::new(b) })
    }

    /// [`load`] through a cache file (`okfast_core::Bundle::load_cached`):
    /// `(bundle, status, detail, reread, listed)`.
    #[staticmethod]
    #[pyo3(signature = (path, cache_file, progress=None))]
    fn load_cached(
        py: Python<'_>,
        path: std::path::PathBuf,
        cache_file: std::path::PathBuf,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<(PyBundle, &'static str, String, usize, usize)> {
        let (b, r) = watched(py, progress, move |p| {
            let loaded = okfast_core::Bundle::load_with(&path, Some(&cache_file), p);
            release_freed_memory();
            loaded
        })?;
        Ok((
            PyBundle { inner: Arc::new(b) },
            r.status.as_str(),
            r.detail,
            r.reread,
            r.listed,
        ))
    }

    /// A new snapshot when the files changed on disk (only changed files are
    /// read again), `None` when nothing did. This snapshot is left as it is.
    fn refresh(&self, py: Python<'_>) -> PyResult<Option<PyBundle>> {
        let b = Arc::clone(&self.inner);
        let fresh = py.detach(move || b.refresh()).map_err(|e| to_py(py, e))?;
        Ok(fresh.map(|b| PyBundle { inner: Arc::new(b) }))
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// How this snapshot was made: `load`, `walk`, `events` or
    /// `events, index kept` (see `Bundle.refresh`).
    #[getter]
    fn made_by(&self) -> &'static str {
        self.inner.made_by.as_str()
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
    fn root(&self) -> String {
        self.inner.root.display().to_string()
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

    /// `(code, message, path, severity)` rows in SPEC order.
    #[getter]
    fn diagnostics(&self) -> Vec<DiagRow> {
        self.inner.diagnostics.iter().map(diag_row).collect()
    }

    fn position(&self, concept_id: &str) -> Option<u32> {
        self.inner.position(concept_id)
    }

    /// Every field of the concept at `position`, as a dict.
    fn concept<'py>(&self, py: Python<'py>, position: usize) -> PyResult<Bound<'py, PyDict>> {
        let c = self.concept_at(py, position)?;
        concept_to_py(py, c)
    }

    /// `(positions int32, scores uint32)` in SPEC §3.4 order.
    #[pyo3(signature = (text, *, tag=None, limit=None))]
    fn search_arrays<'py>(
        &self,
        py: Python<'py>,
        text: String,
        tag: Option<String>,
        limit: Option<i64>,
    ) -> PyResult<Arrays<'py>> {
        let limit = check_limit(py, limit)?;
        let b = Arc::clone(&self.inner);
        let r = py.detach(move || score::search(&b, &text, tag.as_deref(), limit));
        let positions: Vec<i32> = r.positions.into_iter().map(|p| p as i32).collect();
        Ok((positions.into_pyarray(py), r.scores.into_pyarray(py)))
    }

    /// `(concept_id, score, title, excerpt, path)` rows in SPEC §3.4 order.
    #[pyo3(signature = (text, *, tag=None, limit=None))]
    fn search_rows(
        &self,
        py: Python<'_>,
        text: String,
        tag: Option<String>,
        limit: Option<i64>,
    ) -> PyResult<Vec<HitRow>> {
        let limit = check_limit(py, limit)?;
        let b = Arc::clone(&self.inner);
        py.detach(move || {
            let r = score::search(&b, &text, tag.as_deref(), limit);
            let terms = query_terms(&text);
            r.positions
                .iter()
                .zip(&r.scores)
                .map(|(&p, &s)| {
                    let c = &b.concepts[p as usize];
                    Ok((
                        c.id.clone(),
                        s,
                        c.title.clone(),
                        excerpt_of(c, &terms)?,
                        c.path(),
                    ))
                })
                .collect::<Result<Vec<HitRow>, Error>>()
        })
        .map_err(|e| to_py(py, e))
    }

    /// Rank of each concept id in ordinal (code point) order, by position.
    fn ordinal_ranks<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u32>> {
        (*self.inner.ordinal_rank).to_pyarray(py)
    }

    /// `stale_after` of each concept in microseconds since the epoch (UTC);
    /// `i64::MAX` where there is none (never stale).
    fn stale_after_us<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        self.inner.columns.stale_after_us.to_pyarray(py)
    }

    /// Each concept's authority rank (SPEC §7): 0 `canonical` … 5
    /// `historical`, 6 an unknown value, 7 none declared.
    fn authority_ranks<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u8>> {
        self.inner.columns.authority_ranks.to_pyarray(py)
    }

    /// SPEC §5.8 pinning of each position: the trimmed title folds to
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

    /// The display fields of the concept at `position` for a passage:
    /// `(concept_id, title, excerpt, path, type, tags, description,
    /// trust_tier, status, stale_after_us, authority)`.
    fn passage_row(&self, py: Python<'_>, position: usize, text: String) -> PyResult<PassageRow> {
        let c = self.concept_at(py, position)?;
        Ok((
            c.id.clone(),
            c.title.clone(),
            excerpt_of(c, &query_terms(&text)).map_err(|e| to_py(py, e))?,
            c.path(),
            c.kind.clone(),
            c.tags.clone(),
            c.description.clone(),
            c.trust_tier.as_str(),
            c.status.as_str(),
            c.stale_after,
            c.authority.clone(),
        ))
    }

    /// The body of the concept at `position`.
    fn body(&self, py: Python<'_>, position: usize) -> PyResult<String> {
        let c = self.concept_at(py, position)?;
        c.body()
            .map(|b| b.into_owned())
            .map_err(|e| to_py(py, e.into()))
    }

    /// Concepts that declare supersession or conflicts (SPEC §7), in position
    /// order: `(position, supersedes, superseded_by, conflicts_with)`.
    fn governance(&self) -> Vec<GovernanceRow> {
        let b = &self.inner;
        b.columns
            .governed
            .iter()
            .filter_map(|&i| {
                b.concepts[i as usize].governance.as_deref().map(|g| {
                    (
                        i,
                        g.supersedes.clone(),
                        g.superseded_by.clone(),
                        g.conflicts_with.clone(),
                    )
                })
            })
            .collect()
    }

    /// Which fields each term of `text` matches in the concept at `position`:
    /// `[(term, title, tags_desc, body)]` in query order (SPEC §3.3).
    fn explain(
        &self,
        py: Python<'_>,
        position: usize,
        text: String,
    ) -> PyResult<Vec<(String, bool, bool, bool)>> {
        let c = self.concept_at(py, position)?;
        Ok(score::explain(c, &text)
            .map_err(|e| to_py(py, e.into()))?
            .into_iter()
            .map(|(t, [a, b, c])| (t, a, b, c))
            .collect())
    }

    /// SPEC §3.5 excerpt of the concept at `position` for `text`.
    fn excerpt(&self, py: Python<'_>, position: usize, text: String) -> PyResult<String> {
        let c = self.concept_at(py, position)?;
        excerpt_of(c, &query_terms(&text)).map_err(|e| to_py(py, e))
    }
}

type DiagRow = (&'static str, String, String, &'static str);

fn diag_row(d: &okfast_core::diagnostic::Diagnostic) -> DiagRow {
    (
        d.code.as_str(),
        d.message.clone(),
        d.path.clone(),
        d.severity(),
    )
}

fn strategy_of(py: Python<'_>, name: &str) -> PyResult<order::Strategy> {
    Ok(match name {
        "merged" => order::Strategy::Merged,
        "priority_weighted" => order::Strategy::PriorityWeighted,
        "reciprocal_rank" => order::Strategy::ReciprocalRank,
        other => {
            return Err(to_py(
                py,
                Error::InvalidArgument(format!("no fused strategy {other:?}")),
            ))
        }
    })
}

/// The fused order of SPEC §5.4 (and §5.7 with `fairness_quota`) over
/// parallel per-passage arrays: a permutation of `0..n` as a numpy array.
#[pyfunction]
#[pyo3(signature = (strategy, score, priority, source_rank, concept_rank, source_list_rank, fairness_quota=None))]
#[allow(clippy::too_many_arguments)]
fn fused_order<'py>(
    py: Python<'py>,
    strategy: &str,
    score: PyReadonlyArray1<'py, u32>,
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
            return Err(to_py(
                py,
                Error::InvalidArgument(format!("{name} has {len} entries, score has {n}")),
            ));
        }
    }
    let owned = |a: &PyReadonlyArray1<'py, u32>| a.as_array().to_vec();
    let (score, source_rank, concept_rank, source_list_rank) = (
        owned(&score),
        owned(&source_rank),
        owned(&concept_rank),
        owned(&source_list_rank),
    );
    let priority = priority.as_array().to_vec();
    let out = py.detach(move || {
        let keys = order::Keys {
            score: &score,
            priority: &priority,
            source_rank: &source_rank,
            concept_rank: &concept_rank,
            source_list_rank: &source_list_rank,
        };
        let sorted = order::sort(&keys, strategy);
        match fairness_quota {
            Some(k) => {
                let sources: Vec<u32> = sorted.iter().map(|&i| source_rank[i as usize]).collect();
                order::fairness(&sources, k)
                    .into_iter()
                    .map(|j| sorted[j as usize])
                    .collect()
            }
            None => sorted,
        }
    });
    Ok(out.into_pyarray(py))
}

/// SPEC §5.7 alone: the fairness permutation of an already sorted list,
/// given each passage's source.
#[pyfunction]
fn fairness_order<'py>(
    py: Python<'py>,
    sources: PyReadonlyArray1<'py, u32>,
    quota: usize,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    if quota == 0 {
        return Err(to_py(
            py,
            Error::InvalidArgument("fairness quota must be > 0".into()),
        ));
    }
    let sources = sources.as_array().to_vec();
    let out = py.detach(move || order::fairness(&sources, quota));
    Ok(out.into_pyarray(py))
}

/// Read one concept file's bytes as a bundle would (SPEC §1.3–1.4, without
/// the walk's id and size checks): `(fields or None, diagnostics)`. Used by
/// the property tests to compare the parser with the reference directly.
#[pyfunction]
fn read_concept<'py>(
    py: Python<'py>,
    path: &str,
    data: &[u8],
) -> PyResult<(Option<Bound<'py, PyDict>>, Vec<DiagRow>)> {
    let id = path.strip_suffix(".md").unwrap_or(path);
    let r = okfast_core::concept::read_concept(id, path, data);
    let rows = r.diagnostics.iter().map(diag_row).collect();
    Ok((
        r.concept
            .as_ref()
            .map(|c| concept_to_py(py, c))
            .transpose()?,
        rows,
    ))
}

/// Give what a load allocated and freed (file texts, index chunks, merge
/// buffers) back to the OS: mimalloc v2 keeps freed pages in the heap of the
/// thread that allocated them until that thread allocates again, and the
/// pool's threads sleep after a load. Each thread collects its own heap.
/// At 1M concepts the resident size after a cold load falls from ~1.95 GiB
/// to ~1.25 GiB; it takes ~15 ms there, under 1 ms on databricks.
fn release_freed_memory() {
    // SAFETY: `mi_collect` only walks and trims the calling thread's own heap
    // (and abandoned segments); it is safe to call from any thread at any time.
    rayon::broadcast(|_| unsafe { libmimalloc_sys::mi_collect(true) });
    unsafe { libmimalloc_sys::mi_collect(true) };
}

/// Run a load on its own thread while this one, with the GIL released,
/// watches it: about every 100 ms it checks for signals (so Ctrl-C works
/// during a long load) and calls `callback(phase, done, total)`. Either one
/// raising cancels the load, which stops soon after, and that error is
/// returned. The callback is called once more at the end.
fn watched<T: Send + 'static>(
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

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBundle>()?;
    m.add_function(wrap_pyfunction!(read_concept, m)?)?;
    m.add_function(wrap_pyfunction!(fused_order, m)?)?;
    m.add_function(wrap_pyfunction!(fairness_order, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
