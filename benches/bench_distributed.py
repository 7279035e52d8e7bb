"""The fan-out overhead of ``RayResolver`` (docs/scale-out.md): ``S`` shards,
each one synthetic source of ``N`` concepts, on a local 2-CPU Ray cluster,
against the same search in one process; every context's digest is checked
equal to the local one.

Knobs: ``OKFAST_BENCH_RAY_SHARDS`` (default 4), ``OKFAST_BENCH_RAY_SIZE``
(concepts per shard; default 250000 as a script, the smallest of
``OKFAST_BENCH_SIZES`` under pytest), ``OKFAST_BENCH_QUERIES`` (rounds),
``OKFAST_BENCH_RAY_SPLIT`` (``k``: instead of one source per shard, one
source of ``SHARDS × SIZE`` concepts split ``k`` ways, docs/spec.md §15.5).

Run as a script for the table quoted in docs/scale-out.md (p50/p90 per
scorer, one process and Ray, and the shards' resident memory)::

    OPENBLAS_NUM_THREADS=1 python benches/bench_distributed.py

or with the other benchmarks (pytest-benchmark groups ``ray-fanout-SxN``)::

    python -m pytest benches/bench_distributed.py -p no:cacheprovider --benchmark-only
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from random import Random
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402

SEED = int(os.environ.get("OKFAST_BENCH_SEED", "42"))
SHARDS = int(os.environ.get("OKFAST_BENCH_RAY_SHARDS", "4"))
# The script measures 4 x 250k by default; the pytest suite (`make bench`)
# the smallest of OKFAST_BENCH_SIZES unless OKFAST_BENCH_RAY_SIZE says.
_SIZES = os.environ.get("OKFAST_BENCH_SIZES", "10000").replace(",", " ").split()
SIZE = int(
    os.environ.get(
        "OKFAST_BENCH_RAY_SIZE",
        "250000" if __name__ == "__main__" else min(_SIZES, key=lambda x: int(x.replace("_", ""))),
    ).replace("_", "")
)
ROUNDS = int(os.environ.get("OKFAST_BENCH_QUERIES", "100"))
SPLIT = int(os.environ.get("OKFAST_BENCH_RAY_SPLIT", "0"))
MODES = {"weighted_count": "merged", "bm25f": "merged"}


def catalog_path() -> Path:
    if SPLIT:
        root = corpus.ensure_corpus(SIZE * SHARDS, SEED)
        doc = {"version": 1, "sources": [{"id": "whole", "path": f"./{root.name}"}]}
        p = corpus.CORPUS_DIR / f"catalog-ray-{SIZE * SHARDS}-split.json"
        p.write_text(json.dumps(doc))
        return p
    roots = [corpus.ensure_corpus(SIZE, SEED + i) for i in range(SHARDS)]
    doc = {
        "version": 1,
        "sources": [
            {"id": f"src{i}", "path": f"./{r.name}", "priority": i % 2} for i, r in enumerate(roots)
        ],
    }
    p = corpus.CORPUS_DIR / f"catalog-ray-{SHARDS}x{SIZE}.json"
    p.write_text(json.dumps(doc))
    return p


def queries() -> list[str]:
    """Two-term queries of long mid-frequency words (vocabulary ranks 2 000
    to 20 000, log-uniform): hundreds to a few thousand matches in a million
    concepts, as a question usually has. The broad queries of
    ``corpus.sample_queries`` match up to half the corpus, and then both
    resolvers spend seconds listing the exclusions beyond ``limit``
    (docs/scale-out.md), which hides the fan-out."""
    words = corpus.vocabulary(SEED).words
    rng = Random(SEED)
    out: list[str] = []
    while len(out) < ROUNDS:
        # Words of 7 letters or more: the weighted count matches a term inside
        # longer words (docs/spec.md §3.3), so a short one matches many.
        pair = [words[int(2000 * 10 ** rng.random())] for _ in range(2)]
        if all(len(w) >= 7 for w in pair):
            out.append(" ".join(pair))
    return out


def start() -> tuple[Any, Any]:
    """A local 2-CPU cluster, the local resolver and the Ray one, both warm."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import okfast
    import ray
    from okfast.distributed import RayResolver

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    cat = okfast.Catalog.load(catalog_path())
    local = okfast.Resolver(cat, max_staleness=3600)
    split = {"whole": SPLIT} if SPLIT else None
    remote = RayResolver(cat, shards=SHARDS, split=split, max_staleness=3600, timeout=120)
    for scorer in MODES:
        q = okfast.Query("warm up", strategy="merged", scorer=scorer)
        local.search(q)
        remote.search(q)
    return local, remote


def search(r: Any, text: str, scorer: str) -> Any:
    """One search as an agent makes it: the first ten passages, read."""
    from okfast import Query

    ctx = r.search(Query(text, strategy=MODES[scorer], scorer=scorer, limit=10))
    ctx.passages[:10]
    return ctx.digest


def shard_memory() -> list[int]:
    """Resident bytes of each shard actor's process."""
    import psutil

    out = []
    for p in psutil.process_iter(["cmdline"]):
        if any("ray::Shard" in part for part in p.info["cmdline"] or []):
            out.append(p.memory_info().rss)
    return sorted(out)


def main() -> None:
    local, remote = start()
    texts = queries()
    shape = f"one source of {SHARDS * SIZE} split {SPLIT} ways" if SPLIT else f"x {SIZE}"
    print(f"{SHARDS} shards {shape} concepts, {len(texts)} queries, merged, limit 10")
    rss = shard_memory()
    each = ", ".join(f"{m / 2**20:.0f}" for m in rss)
    print(f"shards' resident memory: {sum(rss) / 2**20:.0f} MiB ({each})")
    import psutil

    print(
        f"the driver (one process's resolver too): {psutil.Process().memory_info().rss / 2**20:.0f} MiB"
    )
    import ray

    empty = []
    for _ in range(100):
        t0 = time.perf_counter()
        ray.get([a.ready.remote() for a in remote.shards])
        empty.append(time.perf_counter() - t0)
    print(f"an empty {SHARDS}-shard round trip: p50 {ms(empty, 50):.2f} ms")
    for scorer in MODES:
        # Twice: BM25F's first pass meets every query token for the first
        # time (one more round trip, for the statistics); the second does not.
        for name in ("first pass", "again"):
            t_local, t_ray = [], []
            for text in texts:  # interleaved, so both see the same machine
                t0 = time.perf_counter()
                want = search(local, text, scorer)
                t1 = time.perf_counter()
                got = search(remote, text, scorer)
                t2 = time.perf_counter()
                assert got == want, text
                t_local.append(t1 - t0)
                t_ray.append(t2 - t1)
            over = [b - a for a, b in zip(t_local, t_ray, strict=True)]
            print(
                f"{scorer:15s} {name:10s} one process p50 {ms(t_local, 50):7.2f} ms"
                f" p90 {ms(t_local, 90):7.2f} | ray p50 {ms(t_ray, 50):7.2f} ms"
                f" p90 {ms(t_ray, 90):7.2f} | overhead p50 {ms(over, 50):6.2f} ms"
                " | digests identical"
            )


def ms(xs: list[float], q: int) -> float:
    return 1000 * statistics.quantiles(xs, n=100)[q - 1]


# -- pytest-benchmark ----------------------------------------------------------------


@pytest.fixture(scope="module")
def resolvers() -> Iterator[tuple[Any, Any]]:
    pytest.importorskip("ray")
    yield start()
    import ray

    ray.shutdown()


def _rounds(benchmark: Any, fn: Callable[[str], Any], texts: list[str]) -> None:
    it = iter(range(10**9))

    def setup() -> tuple[tuple[str], dict[str, Any]]:
        return (texts[next(it) % len(texts)],), {}

    benchmark.pedantic(fn, setup=setup, rounds=len(texts), warmup_rounds=0)


@pytest.mark.parametrize("scorer", list(MODES))
@pytest.mark.parametrize("peer", ["okfast", "okfast-ray"])
def test_fanout(benchmark: Any, resolvers: tuple[Any, Any], peer: str, scorer: str) -> None:
    local, remote = resolvers
    r = remote if peer == "okfast-ray" else local
    benchmark.group = f"ray-fanout-{SHARDS}x{SIZE}-{scorer}"
    benchmark.extra_info.update({"peer": peer, "measures": "merged, limit 10, 10 passages read"})
    texts = queries()
    for text in texts[:5]:
        assert search(remote, text, scorer) == search(local, text, scorer)
    _rounds(benchmark, lambda text: search(r, text, scorer), texts)


if __name__ == "__main__":
    main()
