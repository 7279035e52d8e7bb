"""``Resolver.reusing_counts()`` (docs/spec.md §14.1): within an open block a
source's weighted-count list for the same terms and tag is computed once; a
nested block, or another thread's, that ends keeps an outer one open; the
lists are let go when the last block ends."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from okfast import Bundle, Catalog, Resolver, Settings

EXAMPLES = Path(__file__).parent.parent / "examples" / "catalog.json"


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> tuple[Resolver, list[int]]:
    calls = [0]
    real = Bundle.search_arrays

    def counting(self: Bundle, *args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Bundle, "search_arrays", counting)
    resolver = Resolver(Catalog.load(EXAMPLES))
    resolver.search("croissant")  # every snapshot loaded
    return resolver, calls


def lists_computed(resolver: Resolver, calls: list[int]) -> int:
    calls[0] = 0
    resolver.search("croissant")
    return calls[0]


def test_a_nested_block_that_ends_keeps_the_outer_one_open(
    counted: tuple[Resolver, list[int]],
) -> None:
    resolver, calls = counted
    every = lists_computed(resolver, calls)
    assert every > 0
    with resolver.reusing_counts():
        assert (lists_computed(resolver, calls), lists_computed(resolver, calls)) == (every, 0)
        with resolver.reusing_counts():
            assert lists_computed(resolver, calls) == 0
        assert lists_computed(resolver, calls) == 0  # computed again before
        # A resolver configured from this one shares its blocks.
        assert lists_computed(resolver.configured(Settings()), calls) == 0
    assert lists_computed(resolver, calls) == every  # let go with the last block


def test_another_threads_block_that_ends_keeps_this_one_open(
    counted: tuple[Resolver, list[int]],
) -> None:
    resolver, calls = counted
    with resolver.reusing_counts():
        lists_computed(resolver, calls)

        def other() -> None:
            with resolver.reusing_counts():
                pass

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert lists_computed(resolver, calls) == 0
