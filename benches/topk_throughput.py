"""BM25F top-10 throughput against tantivy: queries per second over a pass of
distinct questions, each asked once per pass, the two systems interleaved pass
by pass in one process on the same documents.

    .venv/bin/python benches/topk_throughput.py PATH [--queries 200] [--passes 7]

Prints one JSON object: each system's queries per second (from the median
pass), the ratio, and the median over queries of each system's best of five
calls of that query. The two figures answer different questions: a pass
reads each query's lists from memory that the other queries have just
displaced from the CPU's caches, as a server answering many agents does; the
best of five keeps one query's lists in cache, so it measures the work alone.
Needs the bench extra (tantivy).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402
import peers  # noqa: E402

SYSTEMS = ("okfast-bm25f", "tantivy")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", type=Path)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--passes", type=int, default=7)
    args = ap.parse_args()
    docs = corpus.read_documents(args.path)
    queries = corpus.sample_queries(args.queries, 42)
    systems = {}
    for name in SYSTEMS:
        p = peers.make(name)
        p.load(args.path, docs)
        systems[name] = p
    del docs
    for p in systems.values():  # every list read once before timing
        for q in queries:
            p.search(q, 10)
    passes: dict[str, list[float]] = {n: [] for n in systems}
    for _ in range(args.passes):
        for name, p in systems.items():
            t = time.perf_counter()
            for q in queries:
                p.search(q, 10)
            passes[name].append(time.perf_counter() - t)
    best: dict[str, list[float]] = {n: [] for n in systems}
    for q in queries:
        for name, p in systems.items():
            calls = []
            for _ in range(5):
                t = time.perf_counter()
                p.search(q, 10)
                calls.append(time.perf_counter() - t)
            best[name].append(min(calls))
    qps = {n: len(queries) / statistics.median(v) for n, v in passes.items()}
    print(
        json.dumps(
            {
                "concepts": len(systems["okfast-bm25f"].bundle),
                "qps": {n: round(v) for n, v in qps.items()},
                "qps_ratio": round(qps["okfast-bm25f"] / qps["tantivy"], 2),
                "best_of_5_median_us": {
                    n: round(statistics.median(v) * 1e6, 1) for n, v in best.items()
                },
                "best_of_5_ratio": round(
                    statistics.median(best["tantivy"]) / statistics.median(best["okfast-bm25f"]), 2
                ),
            }
        )
    )


if __name__ == "__main__":
    main()
