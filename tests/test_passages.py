"""A context's passage sequence (docs/spec.md §5.2): equal passages in the
same order make equal sequences and equal contexts."""

from __future__ import annotations

from pathlib import Path

import pytest
from okfast import Catalog, Query, Resolver

EXAMPLES = Path(__file__).parent.parent / "examples" / "catalog.json"


def test_two_searches_for_the_same_query_are_equal_results() -> None:
    resolver = Resolver(Catalog.load(EXAMPLES))
    one, two = resolver.search(Query("croissant")), resolver.search(Query("croissant"))
    assert len(one.passages) > 1 and one.passages is not two.passages
    assert one.passages == two.passages and one == two
    assert hash(one.passages) == hash(two.passages) and hash(one) == hash(two)
    assert one.passages == list(two.passages) and list(one.passages) == two.passages
    assert resolver.search_many([Query("croissant")]) == [one]


def test_other_passages_or_another_order_are_not_equal() -> None:
    resolver = Resolver(Catalog.load(EXAMPLES))
    croissant = resolver.search(Query("croissant")).passages
    assert croissant != resolver.search(Query("oven")).passages
    assert croissant != list(croissant)[::-1]
    assert croissant != list(croissant)[:-1]
    assert croissant != resolver.search(Query("croissant", limit=1)).passages
    assert croissant != tuple(croissant)  # as a list is never equal to a tuple
    assert resolver.search(Query("croissant")) != resolver.search(Query("oven"))


def test_index_finds_a_passage_and_says_what_it_did_not_find() -> None:
    """As a list's ``index`` (docs/spec.md §5.2); Sequence's said nothing."""
    passages = Resolver(Catalog.load(EXAMPLES)).search(Query("croissant")).passages
    assert passages.index(passages[2]) == 2 == list(passages).index(passages[2])
    with pytest.raises(ValueError, match="None is not among the passages"):
        passages.index(None)
    with pytest.raises(ValueError, match="is not among the passages"):
        passages.index(passages[0], 1)
