"""Resolution across sources: a catalog of 10 synthetic sources × 10k
concepts, ``merged`` with a fairness quota of 2, 3-term queries.

Groups (peer ``okfast`` is the baseline of each table):
- ``resolve-10x10000``: full result list (``len(context.passages)``), and the
  same in pure Python over the reference scorer (sort + fairness in Python);
- ``resolve-first20-10x10000``: building the first 20 passages of a resolved
  context (the cost on top of the search);
- ``freshness-100000``: one freshness check of an unchanged 100k-concept source.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import corpus
import pytest
from conftest import SEED, query_rounds

N_SOURCES = 10
SIZE = 10_000


def _tag(benchmark: Any, group: str, peer: str, measures: str) -> None:
    benchmark.group = group
    benchmark.extra_info.update({"peer": peer, "measures": measures})


@pytest.fixture(scope="module")
def catalog_path() -> Path:
    roots = [corpus.ensure_corpus(SIZE, SEED + i) for i in range(N_SOURCES)]
    base = corpus.CORPUS_DIR
    doc = {
        "version": 1,
        "sources": [
            {"id": f"src{i}", "path": f"./{r.name}", "priority": i % 3} for i, r in enumerate(roots)
        ],
    }
    p = base / f"catalog-{N_SOURCES}x{SIZE}.json"
    p.write_text(json.dumps(doc))
    return p


@pytest.fixture(scope="module")
def three_term_queries() -> list[str]:
    rng = random.Random(SEED)
    pool = [q for q in corpus.sample_queries(400, SEED) if len(q.split()) >= 3]
    return [" ".join(q.split()[:3]) for q in rng.sample(pool, min(100, len(pool)))]


@pytest.fixture(scope="module")
def resolver(catalog_path: Path) -> Any:
    okfast = pytest.importorskip("okfast")
    r = okfast.Resolver(okfast.Catalog.load(catalog_path), max_staleness=3600)
    r.search("warm")  # load every source once
    return r


def _rounds(benchmark: Any, fn: Any, queries: list[str], rounds: int) -> None:
    it = iter(range(10**9))

    def setup() -> tuple[tuple[str], dict[str, Any]]:
        return (queries[next(it) % len(queries)],), {}

    benchmark.pedantic(fn, setup=setup, rounds=rounds, warmup_rounds=0)


def test_resolve_full(benchmark: Any, resolver: Any, three_term_queries: list[str]) -> None:
    from okfast import Query

    _tag(benchmark, f"resolve-{N_SOURCES}x{SIZE}", "okfast", "merged, quota 2, full list")
    _rounds(
        benchmark,
        lambda q: len(resolver.search(Query(q, strategy="merged", fairness_quota=2)).passages),
        three_term_queries,
        query_rounds(),
    )


def test_resolve_first20(benchmark: Any, resolver: Any, three_term_queries: list[str]) -> None:
    """Only the cost on top of the search: building the first 20 passages of a
    context that was resolved (untimed) just before."""
    from okfast import Query

    _tag(benchmark, f"resolve-first20-{N_SOURCES}x{SIZE}", "okfast", "first 20 passages, on top")
    it = iter(range(10**9))

    def setup() -> tuple[tuple[Any], dict[str, Any]]:
        q = three_term_queries[next(it) % len(three_term_queries)]
        return (resolver.search(Query(q, strategy="merged", fairness_quota=2)),), {}

    benchmark.pedantic(
        lambda ctx: ctx.passages[:20], setup=setup, rounds=query_rounds(), warmup_rounds=0
    )


def _python_resolve(bundles: list[tuple[str, int, Any]], q: str, quota: int) -> list[Any]:
    """The same resolution in pure Python over the reference scorer."""
    import reference

    hits = []
    for sid, prio, rb in bundles:
        for cid, score, _ in reference.search(rb, q):
            hits.append((score, prio, sid, cid))
    hits.sort(key=lambda h: (-h[0], -h[1], h[2], h[3]))
    out: list[Any] = []
    rest = hits
    run_src, run_len = None, 0
    while rest:
        pick = 0
        if rest[0][2] == run_src and run_len >= quota:
            pick = next((j for j, h in enumerate(rest) if h[2] != run_src), 0)
        h = rest.pop(pick)
        run_src, run_len = (run_src, run_len + 1) if h[2] == run_src else (h[2], 1)
        out.append(h)
    return out


def test_resolve_full_python(
    benchmark: Any, catalog_path: Path, three_term_queries: list[str]
) -> None:
    import reference

    doc = json.loads(catalog_path.read_text())
    bundles = [
        (s["id"], s["priority"], reference.load_bundle(str(catalog_path.parent / s["path"])))
        for s in doc["sources"]
    ]
    _tag(benchmark, f"resolve-{N_SOURCES}x{SIZE}", "reference", "pure Python, same resolution")
    _rounds(benchmark, lambda q: len(_python_resolve(bundles, q, 2)), three_term_queries, 1)


def test_freshness_check(benchmark: Any) -> None:
    okfast = pytest.importorskip("okfast")
    bundle = okfast.Bundle.load(corpus.ensure_corpus(100_000, SEED))
    _tag(benchmark, "freshness-100000", "okfast", "check an unchanged 100k source")
    assert benchmark.pedantic(bundle.refresh, rounds=10, warmup_rounds=1) is None


@pytest.fixture(scope="module")
def one_source() -> Any:
    okfast = pytest.importorskip("okfast")
    root = corpus.ensure_corpus(SIZE, SEED)
    doc = {"version": 1, "sources": [{"id": "src", "path": f"./{root.name}"}]}
    p = corpus.CORPUS_DIR / f"catalog-1x{SIZE}.json"
    p.write_text(json.dumps(doc))
    r = okfast.Resolver(okfast.Catalog.load(p), max_staleness=3600)
    r.search("warm")
    return r


@pytest.mark.parametrize("explain", [False, True], ids=["plain", "explain"])
def test_resolve_read_all(
    benchmark: Any, one_source: Any, three_term_queries: list[str], explain: bool
) -> None:
    """Resolve on one 10k source and read every passage, with and
    without ``explain`` (target: explain ≤ 3× plain)."""
    from okfast import Query

    _tag(
        benchmark,
        f"explain-1x{SIZE}",
        "okfast explain" if explain else "okfast",
        "merged, every passage read" + (", explain=True" if explain else ""),
    )
    _rounds(
        benchmark,
        lambda q: len(
            list(one_source.search(Query(q, strategy="merged", explain=explain)).passages)
        ),
        three_term_queries,
        max(10, query_rounds() // 5),
    )


def test_governance_share(benchmark: Any, resolver: Any, three_term_queries: list[str]) -> None:
    """The governance step alone (no concept declares anything), on the
    ordered arrays of the ``resolve-10x10000`` resolution — compare with that
    group's full-list median (target: ≤ 10% of it)."""
    from okfast import Query, governance
    from okfast.bundle import query_terms
    from okfast.matches import Scoring
    from okfast.resolver import MergedResolver

    _tag(benchmark, f"resolve-{N_SOURCES}x{SIZE}", "governance step", "govern() on the same arrays")
    engine = MergedResolver(resolver)
    it = iter(range(10**9))

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        q = Query(three_term_queries[next(it) % len(three_term_queries)], strategy="merged")
        selected, _generation = engine.select(q, resolver.catalog.snapshot(), [], [])
        sources = engine.deduplicate(selected, [], [])
        how = Scoring(
            resolver.default_scorer,
            query_terms(q.text),
            resolver.default_bm25f,
            resolver.default_rrf_k,
            None,
        )
        found = engine.search(q, how, sources, 0, {})
        src, pos, _score, _fused = engine.order(q, found, 2)
        return (found.searched, src, pos), {}

    benchmark.pedantic(
        lambda s, src, pos: governance.govern(
            s, src, pos, include_historical=False, min_authority=None
        ),
        setup=setup,
        rounds=query_rounds(),
        warmup_rounds=0,
    )
