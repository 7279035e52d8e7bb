"""Evaluation and tuning on the shared judged sets (docs/spec.md §11, §14).

Groups:
- ``eval-1000-databricks``: ``evaluate`` of 1,000 judged queries (the 20 of
  ``databricks.jsonl`` repeated under distinct qids) with the default BM25F,
  merged, depth 100;
- ``tune-3sets``: ``tune`` with a budget of 500 configurations on each of
  the three shared sets (so 1,500 configurations measured in all), seed 0.

Needs ../shared and the eval extra; skipped with a reason without them.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

# The shared sets as the BM25F grid reads them: one catalog source per sub-bundle.
from bm25f_grid import SETS, SHARED  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not (SHARED / "qrels").is_dir(), reason=f"no judged sets at {SHARED}"),
]


def _resolver(name: str) -> Any:
    pytest.importorskip("ir_measures", reason="the eval extra (okfast[eval]) is not installed")
    from okfast import Catalog, Resolver

    corpora = SHARED / "corpora"
    doc = {"version": 1, "sources": SETS[name]}
    cat = Catalog.parse(json.dumps(doc), base_dir=corpora, root=corpora)
    r = Resolver(cat, max_staleness=math.inf)
    r.refresh()
    return r


def test_eval_1000_queries(benchmark: Any) -> None:
    from okfast import JudgedSet, Query, evaluate

    resolver = _resolver("databricks")
    lines = (SHARED / "qrels" / "databricks.jsonl").read_text().splitlines()
    many = []
    for i in range(50):
        for line in lines:
            d = json.loads(line)
            many.append(json.dumps(d | {"qid": f"{d['qid']}-{i}"}))
    judged = JudgedSet.parse_jsonl("\n".join(many))
    assert len(judged.queries) == 1000

    def make(q: Any) -> Query:
        return Query(q.text, strategy="merged", scorer="bm25f", limit=100)

    benchmark.group = "eval-1000-databricks"
    report = benchmark.pedantic(
        lambda: evaluate(resolver, judged, query=make), rounds=3, iterations=1
    )
    benchmark.extra_info["ndcg@10"] = report.metrics["ndcg@10"]


def test_tune_500_configurations_on_each_set(benchmark: Any) -> None:
    from okfast import JudgedSet
    from okfast.tune import tune

    runs = {
        name: (_resolver(name), JudgedSet.load(SHARED / "qrels" / f"{name}.jsonl")) for name in SETS
    }

    def all_sets() -> dict[str, Any]:
        return {name: tune(r, j, budget=500, seed=0) for name, (r, j) in runs.items()}

    benchmark.group = "tune-3sets"
    reports = benchmark.pedantic(all_sets, rounds=1, iterations=1)
    for name, rep in reports.items():
        benchmark.extra_info[f"{name} configurations"] = len(rep.trials)
        benchmark.extra_info[f"{name} holdout"] = rep.holdout
        benchmark.extra_info[f"{name} current"] = rep.current
