"""Property tests: the native loader and scorer equal the reference exactly.

`tests/reference/` is a slow, literal reading of SPEC §1–§3 and
docs/frontmatter-yaml.md; these tests generate bundles (unicode, CRLF, BOM,
malformed frontmatter of every kind) and queries, and require ids, fields,
diagnostics, scores, order and excerpts to be identical.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import okfast
import reference
import strategies as S
from conftest import write_bundle
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from okfast import Bundle
from okfast.bundle import read_concept
from okfast.model import Diagnostic

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def native_fields(c: okfast.Concept) -> dict[str, Any]:
    """A loaded concept's fields in the reference's shapes."""

    def actor(a: okfast.Actor) -> dict[str, str | None]:
        return {"by": a.by, "at": a.at}

    return {
        "concept_id": c.concept_id,
        "path": c.path,
        "type": c.type,
        "title": c.title,
        "description": c.description,
        "tags": list(c.tags),
        "resource": c.resource,
        "status": c.status,
        "status_known": c.status_known,
        "stale_after": c.stale_after,
        "generated": None if c.generated is None else actor(c.generated),
        "verified": [actor(a) for a in c.verified],
        "trust_tier": c.trust_tier,
        "authority": c.authority,
        "supersedes": list(c.supersedes),
        "superseded_by": list(c.superseded_by),
        "conflicts_with": list(c.conflicts_with),
        "body": c.body,
        "frontmatter": c.frontmatter,
    }


def diag_rows(ds: tuple[Diagnostic, ...]) -> list[tuple[str, str, str | None, str]]:
    return [(d.code, d.message, d.path, d.severity) for d in ds]


def ref_fields(c: reference.RefConcept) -> dict[str, Any]:
    return {
        "concept_id": c.concept_id,
        "path": c.path,
        "type": c.type,
        "title": c.title,
        "description": c.description,
        "tags": c.tags,
        "resource": c.resource,
        "status": c.status,
        "status_known": c.status_known,
        "stale_after": c.stale_after,
        "generated": c.generated,
        "verified": c.verified,
        "trust_tier": c.trust_tier,
        "authority": c.authority,
        "supersedes": c.supersedes,
        "superseded_by": c.superseded_by,
        "conflicts_with": c.conflicts_with,
        "body": c.body,
        "frontmatter": c.frontmatter,
    }


def ref_diags(ds: list[reference.RefDiagnostic]) -> list[tuple[str, str, str, str]]:
    return [(d.code, d.message, d.path, d.severity) for d in ds]


@SETTINGS
@given(S.concept_bytes())
def test_read_concept_matches_reference(data: bytes) -> None:
    got, got_diags = read_concept("dir/x.md", data)
    want, want_diags = reference.read_concept("dir/x.md", data)
    assert diag_rows(got_diags) == ref_diags(want_diags)
    assert (got is None) == (want is None)
    if got is not None and want is not None:
        assert native_fields(got) == ref_fields(want)


@settings(max_examples=600, deadline=None)
@given(S.chaos_lines)
@example(["[\xa0"])  # found by this test: an empty plain scalar at the end is unterminated
@example(["a: 1", '"\\q"'])  # a quoted key's escapes are read once its `:` is found
@example(["k:", "- \xa0by: x"])  # a compact node's content starting with NBSP
def test_yaml_chaos_matches_reference(lines: list[str]) -> None:
    data = ("---\n" + "\n".join(lines) + "\n---\nbody").encode()
    got, got_diags = read_concept("c.md", data)
    want, want_diags = reference.read_concept("c.md", data)
    assert diag_rows(got_diags) == ref_diags(want_diags)
    if got is not None and want is not None:
        assert got.frontmatter == want.frontmatter


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=S.bundle_files(), data=st.data())
def test_bundle_and_search_match_reference(files: dict[str, bytes], data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = write_bundle(Path(tmp) / "b", dict(files))
        nb = Bundle.load(root)
        rb = reference.load_bundle(str(root))
        assert list(nb.concept_ids) == [c.concept_id for c in rb.concepts]
        assert [(d.code, d.message, d.path, d.severity) for d in nb.diagnostics] == ref_diags(
            rb.diagnostics
        )
        assert nb.okf_version == rb.okf_version
        for c in rb.concepts:
            assert native_fields(nb.concept(c.concept_id)) == ref_fields(c)
        words = [w for c in rb.concepts for t in reference.field_texts(c) for w in t.split()]
        tags = [t for c in rb.concepts for t in c.tags]
        for _ in range(4):
            q = data.draw(S.query_for(words), label="query")
            tag = data.draw(st.one_of(st.none(), st.sampled_from(tags or ["x"])), label="tag")
            want = reference.search(rb, q, tag=tag)
            got = [(h.concept_id, h.score, h.excerpt) for h in nb.search(q, tag=tag)]
            assert got == want
            k = data.draw(st.integers(0, len(want) + 1), label="limit")
            pos, scores = nb.search_arrays(q, tag=tag, limit=k)
            assert [(nb.concept_ids[p], int(s)) for p, s in zip(pos, scores, strict=True)] == [
                (cid, s) for cid, s, _ in want[:k]
            ]
