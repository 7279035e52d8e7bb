"""Batch search (docs/spec.md §3.7, §5.2): ``Bundle.search_many``,
``Bundle.search_arrays_many`` and ``Resolver.search_many`` give exactly what a
loop of single searches gives, score their queries natively in one call per
snapshot, and release the GIL while they do."""

from __future__ import annotations

import json
import sys
import tempfile
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import MakeBundle, write_bundle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from okfast import (
    BM25FParams,
    Bundle,
    Catalog,
    Context,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    Query,
    Resolver,
    Scorer,
    StalePolicy,
)
from okfast.bundle import Bm25fQuery

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Words that match in several fields, fold, stem (running/runs), split
# (React.memo) and make bigrams (東京都); "the", "of" and "a" are English
# stop words, so a query of them has no BM25F tokens.
WORDS = ["data", "Data,", "files", "file", "retention", "the", "of", "a", "x.y"]
WORDS += ["React.memo", "東京都", "running", "runs", "ß", "order"]
TAGS = ["t1", "T2", "misc"]


def text(max_words: int) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(WORDS), max_size=max_words).map(" ".join)


#: (title, tags, description, body, stale_after or None)
concepts = st.lists(
    st.tuples(
        text(3),
        st.lists(st.sampled_from(TAGS), max_size=2),
        text(3),
        text(12),
        st.sampled_from([None, "2026-05-01", "2027-01-01"]),
    ),
    min_size=1,
    max_size=14,
)
#: Query texts for a bundle: blank ones and stop words only included.
texts = st.lists(st.one_of(text(4), st.sampled_from(["", "   ", "the of", "..."])), max_size=8)
tags = st.sampled_from([None, "t1", "t2", "misc", "absent", "  "])
limits = st.sampled_from([None, 0, 1, 3])
params = st.one_of(
    st.none(),
    st.builds(
        BM25FParams,
        k1=st.floats(0, 3),
        title_weight=st.floats(0, 4),
        body_b=st.floats(0, 1),
        language=st.sampled_from([None, "english"]),
        stop_words=st.booleans(),
    ),
)


def concept_file(title: str, tags: list[str], desc: str, body: str, stale: str | None) -> str:
    extra = f"stale_after: {stale}\n" if stale else ""
    return (
        f"---\ntype: T\ntitle: {json.dumps(title)}\ntags: {json.dumps(tags)}\n"
        f"description: {json.dumps(desc)}\n{extra}---\n{body}\n"
    )


def files_of(cs: list[tuple[str, list[str], str, str, str | None]]) -> dict[str, str | bytes]:
    return {f"c{i:02}.md": concept_file(*c) for i, c in enumerate(cs)}


def same_arrays(got: list[Any], want: list[Any]) -> None:
    """The same positions and scores, dtypes and bits included."""
    assert len(got) == len(want)
    for (gp, gs), (wp, ws) in zip(got, want, strict=True):
        assert (gp.dtype, gs.dtype) == (wp.dtype, ws.dtype)
        assert gp.tobytes() == wp.tobytes()
        assert gs.tobytes() == ws.tobytes()


# -- Bundle ---------------------------------------------------------------------


@SETTINGS
@given(concepts, texts, st.sampled_from(list(Scorer)), tags, limits, params)
def test_bundle_search_many_is_search_of_each(
    cs: list[tuple[str, list[str], str, str, str | None]],
    qs: list[str],
    scorer: Scorer,
    tag: str | None,
    limit: int | None,
    p: BM25FParams | None,
) -> None:
    language = p.language if p is not None else None
    with tempfile.TemporaryDirectory() as tmp:
        b = Bundle.load(write_bundle(Path(tmp) / "b", files_of(cs)), language=language)
        kw: dict[str, Any] = {"scorer": scorer, "bm25f": p, "tag": tag, "limit": limit}
        want = [b.search(q, **kw) for q in qs]
        assert b.search_many(qs, **kw) == want
        # Scores of the right type: whole numbers or floats, as one by one.
        got_types = [type(h.score) for hits in b.search_many(qs, **kw) for h in hits]
        assert got_types == [type(h.score) for hits in want for h in hits]
        same_arrays(b.search_arrays_many(qs, **kw), [b.search_arrays(q, **kw) for q in qs])
        # A tuple of texts, and terms split beforehand, are queries too.
        assert b.search_many(tuple(qs), **kw) == want


def test_bundle_search_many_finds_and_keeps_order(make_bundle: MakeBundle) -> None:
    files: dict[str, str | bytes] = {
        f"c{i:03}.md": concept_file(f"order {i % 7}", ["t1"] if i % 2 else [], "", "data", None)
        for i in range(300)
    }
    b = Bundle.load(make_bundle(files))
    qs = [f"order {k}" for k in range(7)] + ["data", "nothing"]
    for scorer in Scorer:
        many = b.search_many(qs, scorer=scorer, limit=5)
        assert many == [b.search(q, scorer=scorer, limit=5) for q in qs]
        assert [len(h) for h in many] == [5] * 8 + [0]
        tagged = b.search_many(qs, scorer=scorer, tag="T1")
        assert all(int(h.concept_id[1:]) % 2 == 1 for hits in tagged for h in hits)
        assert sum(map(len, tagged)) > 0


def test_an_empty_batch_has_no_results_but_its_arguments_are_checked(
    make_bundle: MakeBundle,
) -> None:
    b = Bundle.load(make_bundle({"a.md": concept_file("data", [], "", "data", None)}))
    for scorer in Scorer:
        assert b.search_many([], scorer=scorer) == []
        assert b.search_arrays_many([], scorer=scorer) == []
        with pytest.raises(InvalidArgumentError, match="limit must be >= 0"):
            b.search_many([], scorer=scorer, limit=-1)
        with pytest.raises(InvalidArgumentError, match="limit must be >= 0"):
            b.search_arrays_many([], scorer=scorer, limit=-1)


def test_bad_arguments_raise_what_a_single_search_raises(make_bundle: MakeBundle) -> None:
    b = Bundle.load(make_bundle({"a.md": concept_file("data", [], "", "data", None)}))
    cases: list[dict[str, Any]] = [{"limit": -2}, {"scorer": "nope"}]
    cases += [{"limit": -1, "scorer": "bm25f"}]
    for kw in cases:
        with pytest.raises(InvalidArgumentError) as one:
            b.search("data", **kw)
        with pytest.raises(InvalidArgumentError) as many:
            b.search_many(["data"], **kw)
        assert str(many.value) == str(one.value)
        with pytest.raises(InvalidArgumentError) as arrays:
            b.search_arrays_many(["data"], **kw)
        assert str(arrays.value) == str(one.value)
    # One string is not a batch (it would be searched a character at a time).
    with pytest.raises(InvalidArgumentError, match="sequence of queries"):
        b.search_many("data")
    with pytest.raises(InvalidArgumentError, match="sequence of queries"):
        b.search_arrays_many("data")


def test_search_bm25f_many_checks_its_queries_and_statistics(make_bundle: MakeBundle) -> None:
    b = Bundle.load(make_bundle({"a.md": concept_file("running", [], "", "data", None)}))
    p = BM25FParams()
    q = b.bm25f_query("running data", p)
    stats = b.bm25f_stats(q.tokens)
    same_arrays(
        b.search_bm25f_many([q, q], [stats, stats], p, limit=1),
        [b.search_bm25f(q, stats, p, limit=1)] * 2,
    )
    with pytest.raises(InvalidArgumentError, match="2 queries but 1 statistics"):
        b.search_bm25f_many([q, q], [stats], p)
    english = Bm25fQuery("running", "english", False)
    with pytest.raises(InvalidArgumentError, match="tokens are for english") as one:
        b.search_bm25f(english, stats, p)
    with pytest.raises(InvalidArgumentError) as many:
        b.search_bm25f_many([q, english], [stats, stats], p)
    assert str(many.value) == str(one.value)


# -- the GIL --------------------------------------------------------------------


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    files: dict[str, str | bytes] = {
        f"d{i % 20}/c{i:05}.md": concept_file(
            f"order {i % 97} data", ["t1"], "retention files", f"running {i % 13} data " * 20, None
        )
        for i in range(4000)
    }
    return Bundle.load(write_bundle(tmp_path_factory.mktemp("big"), files), cache=False)


@pytest.mark.parametrize(
    "call",
    [
        lambda b, qs: b.search_arrays_many(qs),
        lambda b, qs: b.search_many(qs, limit=3),
        lambda b, qs: b.search_arrays_many(qs, scorer="bm25f"),
    ],
    ids=["arrays", "hits", "bm25f"],
)
def test_a_batch_releases_the_gil_while_it_scores(
    big: Bundle, call: Callable[[Bundle, list[str]], object]
) -> None:
    """With a switch interval far longer than the batch, another Python
    thread gets the GIL during the native call only if the call releases it:
    held, the other thread cannot run before the call returns, whatever the
    timing. The other thread is woken just before the call; it is tried a
    few times, so an unlucky schedule of the other thread does not fail it."""
    b = big
    qs = [f"order {i % 97} running {i % 13} data" for i in range(600)]
    old = sys.getswitchinterval()
    sys.setswitchinterval(60.0)
    ran_during: list[bool] = []
    try:
        for _ in range(10):
            go, ran = threading.Event(), threading.Event()
            other = threading.Thread(target=lambda go=go, ran=ran: (go.wait(), ran.set()))
            other.start()
            go.set()
            call(b, qs)
            ran_during.append(ran.is_set())
            other.join()
            if ran_during[-1]:
                break
    finally:
        sys.setswitchinterval(old)
    assert ran_during[-1], ran_during


# -- Resolver -------------------------------------------------------------------


def _catalog(root: Path, a: list[Any], b: list[Any], lang: str | None) -> Catalog:
    write_bundle(root / "A", files_of(a))
    write_bundle(root / "B", files_of(b))
    sources = [
        {"id": "alpha", "path": "./A", "priority": 1},
        {"id": "beta", "path": "./B", "priority": 5},
        {"id": "again", "path": "./A", "priority": 0},  # A's directory twice
        {"id": "gone", "path": "./missing", "priority": 2},  # unavailable
        {"id": "off", "path": "./B", "enabled": False},
    ]
    if lang is not None:
        sources[1]["language"] = lang
    (root / "catalog.json").write_text(json.dumps({"version": 1, "sources": sources}))
    (root / "missing").mkdir()
    cat = Catalog.load(root / "catalog.json")
    (root / "missing").rmdir()  # gone after the catalog was loaded
    return cat


queries = st.lists(
    st.builds(
        Query,
        st.one_of(text(4).filter(lambda t: bool(t.strip())), st.just("...")),
        strategy=st.sampled_from(
            [None, "grouped", "merged", "priority_weighted", "reciprocal_rank"]
        ),
        fairness_quota=st.sampled_from([None, 1]),
        stale_policy=st.sampled_from([StalePolicy.use(), StalePolicy.strict()]),
        tag=tags,
        limit=limits,
        min_score=st.sampled_from([None, 0.5, 2]),
        pin_exact_title=st.booleans(),
        explain=st.booleans(),
        scorer=st.sampled_from([None, "weighted_count", "bm25f", "fusion"]),
        bm25f=params,
        permitted_source_ids=st.sampled_from([None, ["beta"], ["alpha", "gone"]]),
    ),
    max_size=10,
)


def same_context(got: Context, want: Context) -> None:
    assert got.digest == want.digest
    assert got.query == want.query
    assert got.generation == want.generation
    assert got.passages.keys() == want.passages.keys()
    assert [type(s) for _, _, s in got.passages.keys()] == [
        type(s) for _, _, s in want.passages.keys()
    ]
    assert list(got.passages) == list(want.passages)
    assert got.diagnostics == want.diagnostics
    assert got.exclusions == want.exclusions


@SETTINGS
@given(concepts, concepts, queries, st.sampled_from([None, "english"]), st.sampled_from(Scorer))
def test_resolver_search_many_is_search_of_each(
    a: list[Any], b: list[Any], qs: list[Query], lang: str | None, default: Scorer
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cat = _catalog(Path(tmp), a, b, lang)
        r = Resolver(cat, clock=lambda: NOW, default_scorer=default, max_staleness=60)
        want = [r.search(q) for q in qs]
        got = r.search_many(qs)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            same_context(g, w)
        # A fresh resolver (bundles loaded by the batch itself) agrees too.
        fresh = Resolver(cat, clock=lambda: NOW, default_scorer=default, max_staleness=60)
        for g, w in zip(fresh.search_many(qs), want, strict=True):
            same_context(g, w)


def test_resolver_search_many_edge_cases(tmp_path: Path) -> None:
    cs = [("data", [], "", "data", None)]
    r = Resolver(_catalog(tmp_path, cs, cs, None), clock=lambda: NOW)
    assert r.search_many([]) == []
    # Strings are queries, as in search.
    got = r.search_many(["data", Query("data", strategy="merged")])
    same_context(got[0], r.search("data"))
    same_context(got[1], r.search(Query("data", strategy="merged")))
    with pytest.raises(InvalidArgumentError, match="sequence"):
        r.search_many("data")
    # Not a sequence: a type error, as Bundle.search_many's (docs/spec.md §5.2).
    for bad in (5, None, iter(["data"])):
        with pytest.raises(InvalidArgumentTypeError, match="queries must be a sequence"):
            r.search_many(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError) as one:
        r.search("  ")
    with pytest.raises(InvalidArgumentError) as many:
        r.search_many(["data", "  "])
    assert str(many.value) == str(one.value)
