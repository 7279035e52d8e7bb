"""The evaluation that chose BM25FParams' defaults (docs/scoring.md).

Every configuration of a grid over k1, the per-field b, the analyzer
language and stop words is scored on the three shared judged sets together
(nDCG@10, trec_eval's ndcg_cut_10, `merged` strategy, depth 100); a
configuration qualifies when it clears every set's gate, and the defaults are
the qualifying one with the best mean. Prints a markdown table of the best
rows (``--top N``) and the defaults' row.

    python benches/bm25f_grid.py [--quick] [--top 15]

Needs ../shared (the corpora and their judged sets) and the eval extra.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from dataclasses import replace
from pathlib import Path

from okfast import BM25FParams, Catalog, JudgedQuery, JudgedSet, Query, Resolver, evaluate

SHARED = Path(__file__).resolve().parents[2] / "shared"
GCP = ("acme_retail", "crypto_bitcoin", "ga4", "stackoverflow")
SETS = {
    "gcp-samples": [{"id": s, "path": f"./gcp-samples/{s}"} for s in GCP],
    "react": [{"id": "react", "path": "./saschb2b/react"}],
    "databricks": [{"id": "databricks", "path": "./databricks"}],
}
GATES = {"gcp-samples": 0.875, "react": 0.88, "databricks": 0.64}


def grid(quick: bool) -> list[BM25FParams]:
    k1s = [1.2, 2.0] if quick else [0.8, 1.0, 1.2, 1.4, 1.7, 2.0, 2.5]
    body_bs = [0.6, 0.75] if quick else [0.4, 0.6, 0.75, 0.85, 0.95]
    short_bs = [0.2, 0.8] if quick else [0.2, 0.5, 0.8]
    analyzers = [(None, False), ("english", False), ("english", True)]
    out = []
    for (lang, stop), k1, bb, bt, bd in itertools.product(
        analyzers, k1s, body_bs, short_bs, short_bs
    ):
        out.append(
            BM25FParams(
                k1=k1,
                title_b=bt,
                tags_b=bt,
                description_b=bd,
                body_b=bb,
                language=lang,
                stop_words=stop,
            )
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="a small grid")
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    corpora = SHARED / "corpora"
    if not corpora.is_dir():
        print(f"no shared corpora at {corpora}", file=sys.stderr)
        return 2
    sets = {}
    for name, sources in SETS.items():
        cat = Catalog.parse(
            json.dumps({"version": 1, "sources": sources}), base_dir=corpora, root=corpora
        )
        sets[name] = (
            Resolver(cat, max_staleness=math.inf),
            JudgedSet.load(SHARED / "qrels" / f"{name}.jsonl"),
        )

    def ndcg(p: BM25FParams) -> dict[str, float]:
        out = {}
        for name, (resolver, judged) in sets.items():

            def make(q: JudgedQuery, p: BM25FParams = p) -> Query:
                return Query(q.text, strategy="merged", scorer="bm25f", bm25f=p, limit=100)

            out[name] = evaluate(resolver, judged, query=make).metrics["ndcg@10"]
        return out

    rows = []
    for p in grid(args.quick):
        r = ndcg(p)
        margin = min(r[n] - GATES[n] for n in SETS)
        rows.append((margin >= 0, sum(r.values()) / len(r), margin, p, r))
    rows.sort(key=lambda x: (not x[0], -x[1]))
    default = BM25FParams()
    head = (
        "| k1 | b title/tags | b description | b body | language | stop words | "
        + " | ".join(SETS)
        + " | mean |"
    )
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    shown = rows[: args.top] + [next(r for r in rows if r[3] == default)]
    for ok, mean, _margin, p, r in shown:
        mark = " (default)" if replace(p) == default else ""
        cells = " | ".join(f"{r[n]:.3f}" for n in SETS)
        print(
            f"| {p.k1}{mark} | {p.title_b} | {p.description_b} | {p.body_b} | {p.language or 'none'} | "
            f"{'yes' if p.stop_words else 'no'} | {cells} | {mean:.3f}{'' if ok else ' (misses a gate)'} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
