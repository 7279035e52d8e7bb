"""The cut of a ranking-only search (docs/spec.md §5.2): with
``exclusions=False`` each source may be asked for its first ``limit``
passages only, and the context is still exactly the one whole lists give."""

from __future__ import annotations

import json
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import write_bundle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from okfast import Catalog, Query, Resolver, StalePolicy
from okfast.bundle import Bundle
from okfast.cutoff import settled

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
WORDS = ["data", "files", "file", "retention", "the", "order", "keep", "old"]


def text(max_words: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(WORDS), max_size=max_words).map(" ".join)


#: (title, description, body, stale_after, declaration): declarations that
#: governance decides per passage (supersession) and ones it does not
#: (a conflict, a broken reference, an unknown authority).
DECLARATIONS = [
    "",
    "superseded_by: c00\n",
    "supersedes: [c01]\n",
    "conflicts_with: c02\n",
    "supersedes: [nowhere]\n",
    "authority: odd\n",
    "authority: canonical\n",
]
concepts = st.lists(
    st.tuples(
        text(3),
        text(3),
        text(10),
        st.sampled_from([None, "2026-05-01", "2027-01-01"]),
        st.sampled_from(DECLARATIONS[:3] * 4 + DECLARATIONS),
    ),
    min_size=1,
    max_size=12,
)


def concept_file(title: str, desc: str, body: str, stale: str | None, decl: str) -> str:
    extra = (f"stale_after: {stale}\n" if stale else "") + decl
    return (
        f"---\ntype: T\ntitle: {json.dumps(title)}\n"
        f"description: {json.dumps(desc)}\n{extra}---\n{body}\n"
    )


def name(k: int) -> str:
    """Concept ``k``'s file: ``c00``… for the first three (the declarations
    name them), then ids whose id order is not their ordinal order
    (``c/05`` before ``c-04`` in id order, after it in ordinal order)."""
    return f"c{k:02}.md" if k < 3 else f"c{'-/'[k % 2]}{k:02}.md"


def catalog(root: Path, bundles: list[list[Any]]) -> Catalog:
    sources = []
    for i, cs in enumerate(bundles):
        write_bundle(root / f"b{i}", {name(k): concept_file(*c) for k, c in enumerate(cs)})
        sources.append({"id": f"s{i}", "path": f"./b{i}", "priority": i % 2})
    (root / "catalog.json").write_text(json.dumps({"version": 1, "sources": sources}))
    return Catalog.load(root / "catalog.json")


queries = st.builds(
    Query,
    text(3).filter(lambda t: bool(t.strip())),
    strategy=st.sampled_from(["grouped", "merged", "priority_weighted", "reciprocal_rank"]),
    stale_policy=st.sampled_from([StalePolicy.use(), StalePolicy.strict()]),
    limit=st.sampled_from([None, 0, 1, 2, 3, 5]),
    min_score=st.sampled_from([None, 0.5, 1.5]),
    min_authority=st.sampled_from([None, "canonical"]),
    include_historical=st.booleans(),
    fairness_quota=st.sampled_from([None, None, 1]),
    pin_exact_title=st.sampled_from([False, False, True]),
    explain=st.booleans(),
    scorer=st.sampled_from(["bm25f", "bm25f", "weighted_count", "fusion"]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(concepts, min_size=1, max_size=3), st.lists(queries, min_size=1, max_size=6))
def test_a_ranking_only_search_is_the_whole_search_without_exclusions(
    bundles: list[list[Any]], qs: list[Query]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        r = Resolver(catalog(Path(tmp), bundles), clock=lambda: NOW, max_staleness=60)
        for q in qs:
            whole = r.search(q)  # with exclusions: every list is read whole
            cut = r.search(q, exclusions=False)
            assert cut.passages.keys() == whole.passages.keys()
            assert list(cut.passages) == list(whole.passages)
            assert cut.diagnostics == whole.diagnostics
            assert cut.exclusions == ()


def _asked(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """The ``limit`` of every native BM25F search from now on."""
    asked: list[int | None] = []
    real = Bundle.search_bm25f

    def spy(self: Bundle, *args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs.get("limit"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Bundle, "search_bm25f", spy)
    return asked


def _many(n: int, stale_first: int = 0, decl: str = "") -> list[Any]:
    """``n`` concepts matching ``data``, each scoring less than the one
    before (no ties); the first ``stale_first`` score best and are stale."""
    out = []
    for k in range(n):
        stale = "2026-05-01" if k < stale_first else None
        body = "data " * (2 if k < stale_first else 1) + f"word{k}" + " pad" * k
        out.append(("data" if k < stale_first else "x", "", body, stale, decl if k == 0 else ""))
    return out


def test_the_sources_are_asked_for_limit_passages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = Resolver(catalog(tmp_path, [_many(8), _many(5)]), clock=lambda: NOW)
    q = Query("data", strategy="merged", scorer="bm25f", limit=3)
    whole = r.search(q)
    asked = _asked(monkeypatch)
    cut = r.search(q, exclusions=False)
    assert asked == [4, 4]  # one more: its score bounds the rest
    assert cut.passages.keys() == whole.passages.keys()
    asked.clear()
    r.search(q)  # exclusions name every passage beyond the limit: whole lists
    assert asked == [None, None]


def test_a_cut_that_matters_is_searched_again_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The three best passages are stale: a strict search keeps none of the
    # first three, so it needs the lists beyond them.
    r = Resolver(catalog(tmp_path, [_many(8, stale_first=3)]), clock=lambda: NOW)
    q = Query("data", scorer="bm25f", limit=3, stale_policy=StalePolicy.strict())
    whole = r.search(q)
    asked = _asked(monkeypatch)
    cut = r.search(q, exclusions=False)
    assert asked == [4, None]
    assert len(cut.passages) == 3
    assert cut.passages.keys() == whole.passages.keys()


@pytest.mark.parametrize(
    "decl", ["conflicts_with: c01\n", "supersedes: [nowhere]\n", "authority: odd\n"]
)
def test_no_cut_where_governance_weighs_passages_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, decl: str
) -> None:
    r = Resolver(catalog(tmp_path, [_many(6, decl=decl)]), clock=lambda: NOW)
    q = Query("data", scorer="bm25f", limit=2)
    whole = r.search(q)
    asked = _asked(monkeypatch)
    cut = r.search(q, exclusions=False)
    assert asked == [None]
    assert cut.passages.keys() == whole.passages.keys()
    assert cut.diagnostics == whole.diagnostics


def test_no_cut_with_a_quota_a_pinned_title_or_another_scorer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = Resolver(catalog(tmp_path, [_many(6)]), clock=lambda: NOW)
    asked = _asked(monkeypatch)
    for q in [
        Query("data", scorer="bm25f", limit=2, fairness_quota=1, strategy="merged"),
        Query("data", scorer="bm25f", limit=2, pin_exact_title=True),
        Query("data", scorer="fusion", limit=2),
        Query("data", scorer="bm25f"),
    ]:
        r.search(q, exclusions=False)
    assert asked == [None, None, None, None]


def test_settled_reads_the_last_kept_passage_against_each_cut_source() -> None:
    ordered_src = np.array([0, 1, 0, 1, 0], np.uint32)
    q = Query("x", limit=2)
    kept = np.array([0, 1])
    two = np.array([3.0, 2.0])
    assert settled([None, None], ordered_src, kept, two, q)
    assert settled([1.0, 1.0], ordered_src, kept, two, q)  # both sources go on after
    assert not settled([1.0, 1.0], ordered_src, np.array([0, 4]), two, q)  # past source 1's last
    assert settled([1.0, None], ordered_src, np.array([0, 4]), two, q)  # source 1 was not cut
    assert not settled([1.0, None], ordered_src, np.array([0]), two[:1], q)  # fewer than the limit
    floor = Query("x", limit=2, min_score=2.0)
    assert settled([1.0, None], ordered_src, np.array([0]), two[:1], floor)  # the rest is below it
    # A passage past the cut tying the last one kept may come before it.
    assert not settled([2.0, None], ordered_src, kept, two, q)


def test_a_tie_past_the_cut_broken_by_ordinal_order_is_searched_again_whole(
    tmp_path: Path,
) -> None:
    """Equal scores: a source's list breaks the tie in id order (``a/b``
    first), ``merged`` and ``priority_weighted`` in ordinal order (``a-b``
    first), so the passage past a cut of one comes first."""
    page = "---\ntype: T\ntitle: widget\n---\nwidget\n"
    write_bundle(tmp_path / "s", {"a/b.md": page, "a-b.md": page})
    (tmp_path / "catalog.json").write_text(
        json.dumps({"version": 1, "sources": [{"id": "s", "path": "./s"}]})
    )
    r = Resolver(Catalog.load(tmp_path / "catalog.json"))
    for strategy in ["merged", "priority_weighted", "grouped", "reciprocal_rank"]:
        q = Query("widget", strategy=strategy, scorer="bm25f", limit=1)
        whole = r.search(q)
        assert r.search(q, exclusions=False).passages.keys() == whole.passages.keys()
    merged = r.search(Query("widget", strategy="merged", scorer="bm25f", limit=1), exclusions=False)
    assert [p.concept_id for p in merged.passages] == ["a-b"]
