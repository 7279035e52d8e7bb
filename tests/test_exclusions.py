"""The order of a context's exclusions (docs/spec.md §5.8): by source id,
concept id in id order (§1.2), reason, detail — however they were gathered."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from conftest import write_bundle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from okfast import Catalog, Query, Resolver, StalePolicy
from okfast.bundle import query_terms
from okfast.exclusions import Run, in_order, iso
from okfast.governance import id_key
from okfast.model import Exclusion
from okfast.passages import SourceSnapshot

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
#: Ids whose id order differs from plain string order ("a-b" < "a/b" as
#: strings, but segment "a" < "a-b").
IDS = ["a", "a-b", "a/b", "a/b/c", "a/c", "ab", "b", "z/a"]


def by_key(excl: list[Exclusion]) -> list[Exclusion]:
    return sorted(excl, key=lambda e: (e.source_id, id_key(e.concept_id), e.reason, e.detail))


def test_beyond_limit_stale_and_source_exclusions_are_in_id_order(tmp_path: Path) -> None:
    for name, stale in (("one", "2026-05-01"), ("two", None)):
        files = {}
        for k, cid in enumerate(IDS):
            extra = f"stale_after: {stale}\n" if stale and k % 3 == 0 else ""
            body = "word " * (len(IDS) - k)
            files[f"{cid}.md"] = f"---\ntype: T\ntitle: t\n{extra}---\n{body}\n"
        write_bundle(tmp_path / name, files)
    sources = [
        {"id": "two", "path": "./two", "priority": 1},
        {"id": "one", "path": "./one"},
        {"id": "again", "path": "./one"},  # a duplicate directory: a source-level exclusion
    ]
    (tmp_path / "catalog.json").write_text(json.dumps({"version": 1, "sources": sources}))
    r = Resolver(Catalog.load(tmp_path / "catalog.json"), clock=lambda: NOW)
    seen: set[str] = set()
    for strategy in ("grouped", "merged", "reciprocal_rank"):
        for q in (
            Query("word", strategy=strategy, limit=3, stale_policy=StalePolicy.strict()),
            Query("word", strategy=strategy, limit=2, min_score=3, scorer="bm25f"),
        ):
            got = list(r.search(q).exclusions)
            assert got == by_key(got)
            assert len({e.concept_id for e in got if e.reason == "not-relevant"}) > 3
            seen |= {e.reason for e in got}
    assert {"not-relevant", "stale", "duplicate-directory"} <= seen


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> list[SourceSnapshot]:
    """Two searched sources holding every id of :data:`IDS`."""
    root = tmp_path_factory.mktemp("b")
    for sid in ("s1", "s2"):
        write_bundle(root / sid, {f"{cid}.md": "---\ntype: T\n---\nx\n" for cid in IDS})
    doc = {"version": 1, "sources": [{"id": s, "path": f"./{s}"} for s in ("s1", "s2")]}
    cat = Catalog.parse(json.dumps(doc), base_dir=root)
    r = Resolver(cat)
    out = []
    for s in cat.sources:
        b = r.snapshot(s)
        assert b.concept_ids == tuple(sorted(IDS, key=id_key))
        out.append(SourceSnapshot(s, b, query_terms("x")))
    return out


single = st.tuples(st.sampled_from(["s1", "s2", "gone"]), st.sampled_from(["", *IDS]))
run = st.tuples(
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, len(IDS) - 1)), max_size=6),
    st.sampled_from(["not-relevant", "stale"]),
    st.sampled_from(["beyond limit 2", "score below min_score 1"]),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(single, max_size=8), st.lists(run, max_size=3))
def test_in_order_is_the_sort_by_id_order(
    searched: list[SourceSnapshot],
    singles: list[tuple[str, str]],
    runs: list[tuple[list[tuple[int, int]], str, str]],
) -> None:
    excl = [
        Exclusion(sid, "", "source-unavailable", "d")
        if sid == "gone"
        else Exclusion(sid, cid, "x", "d")
        for sid, cid in singles
    ]
    made = [
        Run(
            np.array([s for s, _ in items], np.uint32),
            np.array([p for _, p in items], np.int32),
            reason,
            detail,
        )
        for items, reason, detail in runs
    ]
    flat = [
        Exclusion(("s1", "s2")[s], searched[s].bundle.concept_ids[p], reason, detail)
        for items, reason, detail in runs
        for s, p in items
    ]
    assert in_order(excl, made, searched) == by_key(excl + flat)
    # An id its source's bundle does not hold is still placed by id order.
    odd = [*excl, Exclusion("s1", "a/b/zz", "x", "d")]
    assert in_order(odd, made, searched) == by_key(odd + flat)


@pytest.mark.parametrize(
    "instant",
    [
        "1000-01-01T00:00:00.000001+00:00",
        "1969-12-31T23:59:59.999999+00:00",
        "2300-01-01T00:00:00.000001+00:00",
        "5000-06-15T12:34:56.789013+00:00",
        "9999-12-31T23:59:59.999999+00:00",
    ],
)
def test_a_stale_after_instant_is_written_to_the_microsecond(instant: str) -> None:
    """docs/spec.md §5.4: the detail names the instant itself, at every
    instant §2.2 reads (a float division lost microseconds, and failed in
    year 9999)."""
    when = datetime.fromisoformat(instant)
    us = (when - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(microseconds=1)
    assert iso(us) == instant
