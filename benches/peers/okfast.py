"""okfast itself, three ways to open a bundle, and its pure-Python reference.

okfast scores the exact weighted substring count of docs/spec.md §3 (every
match ranked, no corpus statistics); the reference (``tests/reference.py``)
is the oracle the property tests hold the native code to.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import corpus
from corpus import Document

from peers.base import Peer

if TYPE_CHECKING:
    from tempfile import TemporaryDirectory

TESTS = Path(__file__).resolve().parents[2] / "tests"
#: The persistent cache ``okfast-warm`` reopens (on the corpora's disk).
CACHE = corpus.CORPUS_DIR / "okfast-cache"


class Okfast(Peer):
    """okfast's default load: walk, read, parse and index the files, writing the
    cache file on the way through an empty cache directory (the texts are then
    read from that file, not held in memory)."""

    name = "okfast"

    def __init__(self) -> None:
        import okfast

        self._okfast = okfast
        self.bundle: Any = None
        self._empty: TemporaryDirectory[str] | None = None

    def options(self) -> dict[str, Any]:
        assert self._empty is not None, "before_load makes the empty cache directory"
        return {"cache_dir": self._empty.name}

    def before_load(self, root: Path) -> None:
        from tempfile import TemporaryDirectory

        self._drop_scratch()
        self._empty = TemporaryDirectory(prefix="okfast-cold-")

    def load(self, root: Path, docs: Sequence[Document]) -> None:
        self.bundle = self._okfast.Bundle.load(root, **self.options())

    def search(self, query: str, k: int | None) -> Any:
        return self.bundle.search_arrays(query, limit=k)

    def search_hits(self, query: str, k: int | None) -> Any:
        """The same search returned as ``Hit`` objects (what most callers use)."""
        return self.bundle.search(query, limit=k)

    def ids(self, result: Any) -> list[str]:
        ids = self.bundle.concept_ids
        return [ids[int(p)] for p in result[0]]

    def scored_ids(self, query: str, k: int | None) -> list[tuple[str, int]]:
        pos, scores = self.search(query, k)
        ids = self.bundle.concept_ids
        return [(ids[int(p)], int(s)) for p, s in zip(pos, scores, strict=True)]

    def count(self) -> int:
        return len(self.bundle)

    def info(self) -> dict[str, Any]:
        return {"cache_status": self.bundle.cache_status}

    def close(self) -> None:
        self.bundle = None
        self._drop_scratch()

    def _drop_scratch(self) -> None:
        if self._empty is not None:
            self._empty.cleanup()
            self._empty = None


class OkfastNoCache(Okfast):
    """okfast with ``cache=False``: nothing written, texts kept in memory. The
    like-for-like comparison with the engines and the OKF libraries, which
    persist nothing either."""

    name = "okfast-nocache"

    def options(self) -> dict[str, Any]:
        return {"cache": False}

    def before_load(self, root: Path) -> None:
        pass


class OkfastBm25f(OkfastNoCache):
    """okfast ranking by BM25F (docs/spec.md §12) with its default parameters
    and the bundle's own statistics: the like-for-like comparison with the
    engines' BM25 top-k."""

    name = "okfast-bm25f"

    def search(self, query: str, k: int | None) -> Any:
        return self.bundle.search_arrays(query, limit=k, scorer="bm25f")

    def search_hits(self, query: str, k: int | None) -> Any:
        return self.bundle.search(query, limit=k, scorer="bm25f")

    def scored_ids(self, query: str, k: int | None) -> list[tuple[str, int]]:
        pos, scores = self.search(query, k)
        ids = self.bundle.concept_ids
        return [
            (ids[int(p)], round(float(s) * 1_000_000)) for p, s in zip(pos, scores, strict=True)
        ]


class OkfastWarm(Okfast):
    """okfast reopening an unchanged bundle through its persistent cache."""

    name = "okfast-warm"

    def options(self) -> dict[str, Any]:
        return {"cache_dir": CACHE}

    def prime(self, root: Path) -> None:
        # A file modified less than 2 s before a cache file was written is
        # read again by the next load (docs/spec.md §9.4): a corpus generated
        # just now becomes a hit once a load has seen its files 2 s old.
        load = self._okfast.Bundle.load
        load(root, cache_dir=CACHE)
        for _ in range(3):
            if load(root, cache_dir=CACHE).cache_status == "hit":
                return
            time.sleep(2.1)

    def before_load(self, root: Path) -> None:
        pass

    def load(self, root: Path, docs: Sequence[Document]) -> None:
        super().load(root, docs)
        if self.bundle.cache_status != "hit":
            # A miss would time a cold load under the warm name.
            raise RuntimeError(f"{root}: cache {self.bundle.cache_status}, not a hit (primed?)")


class Reference(Peer):
    """The pure-Python oracle of docs/spec.md §3 (``tests/reference.py``)."""

    name = "reference"
    # It scores and sorts every concept (docs/spec.md §3.4): no top-k, and
    # seconds per query, so there is nothing to warm and each query counts.
    has_top_k = False
    warm_up = False

    def __init__(self) -> None:
        if str(TESTS) not in sys.path:
            sys.path.append(str(TESTS))
        import reference

        self._ref = reference
        self.bundle: Any = None

    def load(self, root: Path, docs: Sequence[Document]) -> None:
        self.bundle = self._ref.load_bundle(str(root))

    def search(self, query: str, k: int | None) -> Any:
        hits = self._ref.search(self.bundle, query)
        return hits if k is None else hits[:k]

    def ids(self, result: Any) -> list[str]:
        return [h[0] for h in result]

    def scored_ids(self, query: str, k: int | None) -> list[tuple[str, int]]:
        return [(h[0], int(h[1])) for h in self.search(query, k)]

    def count(self) -> int:
        return len(self.bundle.concepts)

    def close(self) -> None:
        self.bundle = None
