"""Resolving judged questions on a shared corpus (docs/spec.md §5.2, §5.8):
the 20 questions of ``databricks.jsonl``, BM25F, ``merged``, ``limit`` 10.

Groups:
- ``questions-databricks``: one pass over the 20 with the context's
  exclusions (every match beyond the limit, ~4,890 a question), and one
  reading only the rankings (``exclusions=False``, the cut of §5.2).

Needs ../shared; skipped with a reason without it.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from bm25f_grid import SETS, SHARED

pytestmark = [
    pytest.mark.skipif(not (SHARED / "qrels").is_dir(), reason=f"no judged sets at {SHARED}"),
]


@pytest.fixture(scope="module")
def questions() -> tuple[Any, list[Any]]:
    from okfast import Catalog, Query, Resolver

    corpora = SHARED / "corpora"
    doc = {"version": 1, "sources": SETS["databricks"]}
    r = Resolver(
        Catalog.parse(json.dumps(doc), base_dir=corpora, root=corpora), max_staleness=math.inf
    )
    r.refresh()
    lines = (SHARED / "qrels" / "databricks.jsonl").read_text().splitlines()
    qs = [Query(json.loads(x)["query"], strategy="merged", scorer="bm25f", limit=10) for x in lines]
    return r, qs


@pytest.mark.parametrize("exclusions", [True, False], ids=["with-exclusions", "ranking-only"])
def test_twenty_questions(
    benchmark: Any, questions: tuple[Any, list[Any]], exclusions: bool
) -> None:
    r, qs = questions
    benchmark.group = "questions-databricks"
    ctxs = benchmark(lambda: [r.search(q, exclusions=exclusions) for q in qs])
    assert all(len(c.passages) == 10 for c in ctxs)
