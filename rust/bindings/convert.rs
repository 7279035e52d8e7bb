//! Single values that cross to Python: a concept with every field, a
//! diagnostic, the outcome of reading one concept file. Each is a frozen
//! class with named fields.

use okfast_core::concept::{parse_frontmatter, Actor, Concept};
use okfast_core::diagnostic::Diagnostic;
use okfast_core::yaml::Value;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::to_py;

/// One diagnostic (docs/spec.md §1.6).
#[pyclass(frozen, get_all, module = "okfast._native", name = "Diagnostic")]
pub struct PyDiagnostic {
    code: &'static str,
    message: String,
    path: String,
    severity: &'static str,
}

impl PyDiagnostic {
    pub fn of(d: &Diagnostic) -> PyDiagnostic {
        PyDiagnostic {
            code: d.code.as_str(),
            message: d.message.clone(),
            path: d.path.clone(),
            severity: d.severity(),
        }
    }
}

/// `{by, at}` of `generated` or of one `verified` entry.
#[pyclass(frozen, get_all, module = "okfast._native", name = "Actor")]
pub struct PyActor {
    by: Option<String>,
    at: Option<String>,
}

impl PyActor {
    fn of(a: &Actor) -> PyActor {
        PyActor {
            by: a.by.clone(),
            at: a.at.clone(),
        }
    }
}

/// Every field of a concept (docs/spec.md §1.4), its body and its frontmatter.
#[pyclass(frozen, get_all, module = "okfast._native", name = "ConceptFields")]
pub struct ConceptFields {
    concept_id: String,
    path: String,
    #[pyo3(name = "type")]
    kind: Option<String>,
    title: Option<String>,
    description: Option<String>,
    tags: Vec<String>,
    resource: Option<String>,
    status: &'static str,
    status_known: bool,
    /// Microseconds since the epoch; `None` when there is no `stale_after`.
    stale_after_us: Option<i64>,
    generated: Option<Py<PyActor>>,
    verified: Vec<Py<PyActor>>,
    trust_tier: &'static str,
    authority: Option<String>,
    supersedes: Vec<String>,
    superseded_by: Vec<String>,
    conflicts_with: Vec<String>,
    body: String,
    /// Every frontmatter key as written, in file order.
    frontmatter: Py<PyDict>,
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

impl ConceptFields {
    pub fn of(py: Python<'_>, c: &Concept) -> PyResult<ConceptFields> {
        // One read (and checksum) of a stored concept's texts serves both.
        let texts = c.source.read().map_err(|e| to_py(py, e.into()))?;
        let frontmatter = map_to_py(py, &parse_frontmatter(&texts.frontmatter))?.unbind();
        let g = c.governance.as_deref().cloned().unwrap_or_default();
        Ok(ConceptFields {
            concept_id: c.id.clone(),
            path: c.path(),
            kind: c.kind.clone(),
            title: c.title.clone(),
            description: c.description.clone(),
            tags: c.tags.clone(),
            resource: c.resource.clone(),
            status: c.status.as_str(),
            status_known: c.status_known,
            stale_after_us: c.stale_after,
            generated: c
                .generated
                .as_ref()
                .map(|a| Py::new(py, PyActor::of(a)))
                .transpose()?,
            verified: c
                .verified
                .iter()
                .map(|a| Py::new(py, PyActor::of(a)))
                .collect::<PyResult<_>>()?,
            trust_tier: c.trust_tier.as_str(),
            authority: c.authority.clone(),
            supersedes: g.supersedes,
            superseded_by: g.superseded_by,
            conflicts_with: g.conflicts_with,
            body: texts.body.into_owned(),
            frontmatter,
        })
    }
}

/// What reading one concept file gave: its concept, unless it was skipped,
/// and its diagnostics in the documented order.
#[pyclass(frozen, get_all, module = "okfast._native", name = "ConceptRead")]
pub struct ConceptRead {
    concept: Option<Py<ConceptFields>>,
    diagnostics: Vec<Py<PyDiagnostic>>,
}

/// Diagnostics as Python objects.
pub fn diagnostics(py: Python<'_>, ds: &[Diagnostic]) -> PyResult<Vec<Py<PyDiagnostic>>> {
    ds.iter()
        .map(|d| Py::new(py, PyDiagnostic::of(d)))
        .collect()
}

/// Read one concept file's bytes as a bundle would (docs/spec.md §1.3–1.4,
/// without the walk's id and size checks). The memory store checks what it
/// writes with it, and the property tests compare it with the reference.
#[pyfunction]
pub fn read_concept(py: Python<'_>, path: &str, data: &[u8]) -> PyResult<ConceptRead> {
    let id = path.strip_suffix(".md").unwrap_or(path);
    let r = okfast_core::concept::read_concept(id, path, data);
    Ok(ConceptRead {
        concept: r
            .concept
            .as_ref()
            .map(|c| Py::new(py, ConceptFields::of(py, c)?))
            .transpose()?,
        diagnostics: diagnostics(py, &r.diagnostics)?,
    })
}
