"""Weighted-count lists computed once while a resolver's ``reusing_counts()``
block is open (docs/spec.md §14.1): ``okfast tune`` runs hundreds of
configurations over the same queries, and a snapshot's list for the same
terms and tag is the same list whatever the configuration."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from okfast.bundle import Bundle, QueryTerms
from okfast.matches import Scores


class CountMemo:
    """The lists of the open blocks. Blocks are counted: a nested block, or
    another thread's, that ends does not end the reuse of one still open;
    the lists are let go when the last one ends."""

    def __init__(self) -> None:
        self._memo: dict[tuple[Bundle, tuple[str, ...], str | None], Any] | None = None
        self._open = 0
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def block(self) -> Iterator[None]:
        with self._lock:
            self._open += 1
            if self._memo is None:
                self._memo = {}
        try:
            yield
        finally:
            with self._lock:
                self._open -= 1
                if not self._open:
                    self._memo = None

    def counts(
        self, bundle: Bundle, terms: QueryTerms, tag: str | None
    ) -> tuple[npt.NDArray[np.int32], Scores]:
        """``bundle.search_arrays(terms, tag=tag)``, computed once while a
        block is open (a snapshot is immutable, so a reused list is the list)."""
        memo = self._memo
        if memo is None:
            return bundle.search_arrays(terms, tag=tag)
        key = (bundle, tuple(terms.written), tag)
        found = memo.get(key)
        if found is None:
            found = memo[key] = bundle.search_arrays(terms, tag=tag)
        return found
