"""Queries of many distinct words (docs/spec.md §3.1, §12.1): a pasted
document as a query costs time linear in its words, not quadratic.

Groups:
- ``long-query``: the bundled example catalog, queries of 10,000 and 40,000
  distinct random words (plus four that match), through ``Bundle.search``
  on its bakery bundle and ``Resolver.search`` (``merged``) over the
  catalog, under each scorer.

Before the distinct terms and tokens were looked up by hash (2026-12-05),
40,000 words took 0.15–32 s a query (the resolver's BM25F the worst).
"""

from __future__ import annotations

import random
import string
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _query(words: int) -> str:
    rnd = random.Random(words)
    made = ("".join(rnd.choice(string.ascii_lowercase) for _ in range(8)) for _ in range(words))
    return " ".join([*made, "bread", "oven", "refund", "policy"])


@pytest.mark.parametrize("scorer", ["weighted_count", "bm25f", "fusion"])
@pytest.mark.parametrize("words", [10_000, 40_000])
@pytest.mark.parametrize("where", ["bundle", "resolver"])
def test_long_query(benchmark: Any, where: str, words: int, scorer: str) -> None:
    from okfast import Bundle, Catalog, Query, Resolver

    benchmark.group = "long-query"
    benchmark.extra_info.update({"where": where, "words": words, "scorer": scorer})
    text = _query(words)
    if where == "bundle":
        b = Bundle.load(EXAMPLES / "bakery-ops", cache=False)
        benchmark.pedantic(b.search, args=(text,), kwargs={"scorer": scorer}, rounds=5)
    else:
        r = Resolver(Catalog.load(EXAMPLES / "catalog.json"))
        q = Query(text, scorer=scorer, strategy="merged")
        benchmark.pedantic(r.search, args=(q,), rounds=5)


@pytest.fixture(scope="module")
def unique_words() -> Iterator[Path]:
    """10,000 concepts, each holding one word no other holds."""
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        for i in range(10_000):
            text = f"---\ntype: T\ntitle: T\n---\nline one\nbody u{i}x text\n"
            (root / f"c{i}.md").write_text(text)
        yield root


@pytest.mark.parametrize("scorer", ["weighted_count", "bm25f", "fusion"])
@pytest.mark.parametrize("words", [2_500, 10_000])
@pytest.mark.parametrize("limit", [None, 10])
def test_long_query_every_word_matching(
    benchmark: Any, unique_words: Path, words: int, scorer: str, limit: int | None
) -> None:
    """Group ``long-query-matching``: every word of the query matches its own
    concept, so a query of n words has n hits: their excerpts, and BM25F's
    top 10, once cost hits × words (5.5 s for 10,000, before 2026-12-07)."""
    from okfast import Bundle

    benchmark.group = "long-query-matching"
    benchmark.extra_info.update({"words": words, "scorer": scorer, "limit": limit})
    b = Bundle.load(unique_words, cache=False)
    text = " ".join(f"u{i}x" for i in range(words))
    kwargs = {"scorer": scorer, "limit": limit}
    benchmark.pedantic(b.search, args=(text,), kwargs=kwargs, rounds=3)
