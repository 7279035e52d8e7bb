"""Batch search: 1,000 natural questions in one ``search_many`` call against
a loop of 1,000 single searches, on the shared corpora (docs/spec.md §3.7,
§5.2). Needs ``../shared/corpora`` beside the project (skipped otherwise).

Groups (peer ``loop`` is the baseline of each table; one round = the whole
batch, so a round's time divided by 1,000 is the cost per query):

- ``many-arrays-{scorer}``  databricks, top 10 as arrays: ``search_arrays_many``
                            vs a loop of ``search_arrays``;
- ``many-hits-{scorer}``    databricks, top 10 as hits (excerpts included):
                            ``search_many`` vs a loop of ``search``;
- ``many-resolve-{scorer}`` 100 of the queries, the three corpora in one catalog, ``merged``,
                            ``limit=10``: ``Resolver.search_many`` vs a loop
                            of ``Resolver.search`` (the Python pipeline —
                            order, governance, passages — runs per query in
                            both; only the native scoring is batched).

The queries are the judged questions of ``../shared/qrels/*.jsonl`` (60),
each also with one of its words left out, in a fixed order: 1,000 queries.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPORA = Path(os.environ.get("OKFAST_CORPORA", SHARED / "corpora"))
QRELS = SHARED / "qrels"
N_QUERIES = 1000
ROUNDS = 5
CORPUS_NAMES = ("databricks", "gcp-samples", "saschb2b")

pytestmark = pytest.mark.skipif(
    not (CORPORA / "databricks").is_dir() or not QRELS.is_dir(),
    reason=f"shared corpora or judged questions not found under {SHARED}",
)


def _tag(benchmark: Any, group: str, peer: str, measures: str) -> None:
    benchmark.group = group
    benchmark.extra_info.update({"peer": peer, "measures": measures, "queries": N_QUERIES})


@pytest.fixture(scope="module")
def questions() -> list[str]:
    natural = [
        json.loads(line)["query"]
        for f in sorted(QRELS.glob("*.jsonl"))
        for line in f.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    out = list(natural)
    k = 0
    while len(out) < N_QUERIES:
        words = natural[k % len(natural)].split()
        drop = (k // len(natural)) % len(words)
        out.append(" ".join(words[:drop] + words[drop + 1 :]) or natural[k % len(natural)])
        k += 1
    return out[:N_QUERIES]


@pytest.fixture(scope="module")
def bundle() -> Any:
    okfast = pytest.importorskip("okfast")
    return okfast.Bundle.load(CORPORA / "databricks")


@pytest.fixture(scope="module")
def resolver(tmp_path_factory: pytest.TempPathFactory) -> Any:
    okfast = pytest.importorskip("okfast")
    where = tmp_path_factory.mktemp("many")
    doc = {
        "version": 1,
        "sources": [
            {"id": name, "path": os.path.relpath(CORPORA / name, where), "priority": i}
            for i, name in enumerate(CORPUS_NAMES)
            if (CORPORA / name).is_dir()
        ],
    }
    path = where / "catalog.json"
    path.write_text(json.dumps(doc))
    r = okfast.Resolver(okfast.Catalog.load(path, root=CORPORA), max_staleness=3600)
    for scorer in ("weighted_count", "bm25f"):
        r.search(okfast.Query("warm", scorer=scorer))  # load every source once
    return r


SCORERS = ["weighted_count", "bm25f"]


@pytest.mark.parametrize("scorer", SCORERS)
@pytest.mark.parametrize("peer", ["loop", "many"])
def test_arrays(benchmark: Any, bundle: Any, questions: list[str], scorer: str, peer: str) -> None:
    if peer == "many":

        def run() -> int:
            found = bundle.search_arrays_many(questions, scorer=scorer, limit=10)
            return sum(len(p) for p, _ in found)
    else:

        def run() -> int:
            return sum(len(bundle.search_arrays(q, scorer=scorer, limit=10)[0]) for q in questions)

    _tag(benchmark, f"many-arrays-{scorer}", peer, "1,000 queries, top 10 as arrays")
    assert benchmark.pedantic(run, rounds=ROUNDS, iterations=1, warmup_rounds=1) > 0


@pytest.mark.parametrize("scorer", SCORERS)
@pytest.mark.parametrize("peer", ["loop", "many"])
def test_hits(benchmark: Any, bundle: Any, questions: list[str], scorer: str, peer: str) -> None:
    if peer == "many":

        def run() -> int:
            return sum(map(len, bundle.search_many(questions, scorer=scorer, limit=10)))
    else:

        def run() -> int:
            return sum(len(bundle.search(q, scorer=scorer, limit=10)) for q in questions)

    _tag(benchmark, f"many-hits-{scorer}", peer, "1,000 queries, top 10 hits with excerpts")
    assert benchmark.pedantic(run, rounds=ROUNDS, iterations=1, warmup_rounds=1) > 0


@pytest.mark.parametrize("scorer", SCORERS)
@pytest.mark.parametrize("peer", ["loop", "many"])
def test_resolve(
    benchmark: Any, resolver: Any, questions: list[str], scorer: str, peer: str
) -> None:
    okfast = pytest.importorskip("okfast")
    # 100 queries: a resolution's Python pipeline costs ~0.1-0.4 s per query here.
    queries = [okfast.Query(q, strategy="merged", limit=10, scorer=scorer) for q in questions[:100]]
    if peer == "many":

        def run() -> int:
            return sum(len(c.passages) for c in resolver.search_many(queries))
    else:

        def run() -> int:
            return sum(len(resolver.search(q).passages) for q in queries)

    _tag(benchmark, f"many-resolve-{scorer}", peer, "100 queries over 3 corpora, merged, top 10")
    assert benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=1) > 0
