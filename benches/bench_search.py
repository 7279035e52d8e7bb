"""Load and query benchmarks: okfast against tantivy, bm25s and the reference.

Groups (one pytest-benchmark table each, per corpus size n):

- ``load-{n}``        okfast / reference: walk + read + parse + index from files;
                      okfast-warm: reopen of an unchanged bundle via its cache;
                      tantivy / bm25s: index build from in-memory documents.
- ``query-top10-{n}`` one query → top 10 (okfast ``search_arrays(limit=10)``,
                      okfast-hits ``search(limit=10)``, okfast-bm25f the same
                      with ``scorer="bm25f"``, tantivy, bm25s, reference).
- ``query-full-{n}``  one query → every match in result order (okfast arrays and
                      hits, reference).

Every query benchmark is ``pedantic`` with one query per round: round i uses
``queries[i % len(queries)]`` from a fixed seeded list, so medians are medians
over distinct queries and every peer sees the same sequence.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import peers
import pytest
from conftest import SUITE_PEERS, load_rounds, make_peer, query_rounds, ref_query_rounds

WARMUP_QUERIES = 3


def _tag(benchmark: Any, group: str, peer: str, size: int, **extra: Any) -> None:
    benchmark.group = group
    benchmark.extra_info.update({"peer": peer, "n": size, **extra})


# --- load / build ------------------------------------------------------------


# okfast-bm25f loads as okfast does (cache=False): its load is that one.
@pytest.mark.parametrize("peer", [p for p in SUITE_PEERS if p != "okfast-bm25f"])
def test_load(benchmark, peer, size, corpus_root, documents, peer_cache):
    p = make_peer(peer)  # skips early if the library is missing
    if not p.reads_files:
        what = "index build from in-memory docs"
    elif peer == "okfast-warm":
        what = "reopen from the cache"
    else:
        what = "load+index from files"
    p.prime(corpus_root)

    def setup() -> tuple[tuple[peers.Peer], dict[str, Any]]:
        fresh = make_peer(peer)
        fresh.before_load(corpus_root)
        return (fresh,), {}

    def target(fresh: peers.Peer) -> peers.Peer:
        fresh.load(corpus_root, documents)
        return fresh

    _tag(benchmark, f"load-{size}", peer, size, measures=what)
    peer_cache.pop(peer, None)
    gc.collect()
    # Each round builds a fresh object (at most two copies alive at once).
    built = benchmark.pedantic(
        target, setup=setup, rounds=load_rounds(size, peer), iterations=1, warmup_rounds=0
    )
    peer_cache[peer] = built  # reused by the query benchmarks of this size


# --- queries -------------------------------------------------------------------


def _bench_queries(
    benchmark: Any,
    queries: list[str],
    call: Callable[[str], Any],
    rounds: int,
    warmup: int = WARMUP_QUERIES,
) -> None:
    for q in queries[len(queries) - warmup :]:  # warm caches with queries not measured first
        call(q)
    it = iter(range(10**9))

    def setup() -> tuple[tuple[str], dict[str, Any]]:
        return (queries[next(it) % len(queries)],), {}

    benchmark.pedantic(call, setup=setup, rounds=rounds, warmup_rounds=0)


TOP10 = {
    "okfast": lambda p: lambda q: p.search(q, 10),
    "okfast-hits": lambda p: lambda q: p.search_hits(q, 10),
    "okfast-bm25f": lambda p: lambda q: p.search(q, 10),
    "tantivy": lambda p: lambda q: p.search(q, 10),
    "bm25s": lambda p: lambda q: p.search(q, 10),
    "reference": lambda p: lambda q: p.search(q, 10),
}


@pytest.mark.parametrize("peer", list(TOP10))
def test_query_top10(benchmark, peer, size, queries, ready_peer):
    base = "okfast" if peer == "okfast-hits" else peer
    p = ready_peer(base)
    rounds = ref_query_rounds(size) if peer == "reference" else query_rounds()
    _tag(benchmark, f"query-top10-{size}", peer, size, k=10)
    # The pure-Python reference has no caches to warm and costs seconds per query.
    _bench_queries(benchmark, queries, TOP10[peer](p), rounds, 0 if peer == "reference" else 3)


FULL = {
    "okfast": lambda p: lambda q: p.search(q, None),
    "okfast-hits": lambda p: lambda q: p.search_hits(q, None),
    "reference": lambda p: lambda q: p.search(q, None),
}


@pytest.mark.parametrize("peer", list(FULL))
def test_query_full(benchmark, peer, size, queries, ready_peer):
    base = "okfast" if peer == "okfast-hits" else peer
    p = ready_peer(base)
    rounds = ref_query_rounds(size) if peer == "reference" else query_rounds()
    _tag(benchmark, f"query-full-{size}", peer, size, k=None)
    _bench_queries(benchmark, queries, FULL[peer](p), rounds, 0 if peer == "reference" else 3)
