"""The result of a resolution: ``Context`` and its lazy passage sequence (SPEC §5.2, §5.9).

Passages are held as arrays (source, position, score); a :class:`Passage`
object is built only when a caller reads it, so ``len()``, slicing a few and
the digest never materialise the whole list.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import numpy.typing as npt

from okfast.model import Diagnostic, Exclusion, Passage, passage_from_row

if TYPE_CHECKING:
    from okfast.bundle import Bundle
    from okfast.catalog import Source
    from okfast.query import Query


@dataclass(frozen=True)
class Searched:
    """A source that was searched, with the snapshot it was searched in."""

    source: Source
    bundle: Bundle


class PassageList(Sequence[Passage]):
    """The ordered passages of a context, materialised on access."""

    def __init__(
        self,
        text: str,
        searched: Sequence[Searched],
        src: npt.NDArray[np.uint32],
        pos: npt.NDArray[np.int32],
        score: npt.NDArray[np.uint32],
        fused: npt.NDArray[np.float64] | None,
        now_us: int,
    ) -> None:
        self._text = text
        self._searched = searched
        self._src = src
        self._pos = pos
        self._score = score
        self._fused = fused
        self._now_us = now_us
        self._cache: dict[int, Passage] = {}

    def __len__(self) -> int:
        return len(self._pos)

    @overload
    def __getitem__(self, i: int) -> Passage: ...
    @overload
    def __getitem__(self, i: slice) -> list[Passage]: ...
    def __getitem__(self, i: int | slice) -> Passage | list[Passage]:
        if isinstance(i, slice):
            return [self._build(k) for k in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"passage index {i} out of range for {n} passages")
        return self._build(i % n if n else i)

    def __iter__(self) -> Iterator[Passage]:
        for k in range(len(self)):
            yield self._build(k)

    def __repr__(self) -> str:
        return f"<PassageList: {len(self)} passages>"

    def keys(self) -> list[tuple[str, str, int]]:
        """``(source_id, concept_id, score)`` of every passage, without building them."""
        out = []
        for s, p, sc in zip(
            self._src.tolist(), self._pos.tolist(), self._score.tolist(), strict=True
        ):
            out.append((self._searched[s].source.id, self._searched[s].bundle.concept_ids[p], sc))
        return out

    def _build(self, k: int) -> Passage:
        cached = self._cache.get(k)
        if cached is not None:
            return cached
        entry = self._searched[int(self._src[k])]
        native = entry.bundle._native
        pos = int(self._pos[k])
        row = native.passage_row(pos, self._text)
        stale_us = row[9]
        passage = passage_from_row(
            row,
            source_id=entry.source.id,
            score=int(self._score[k]),
            priority=entry.source.priority,
            default_authority=entry.source.authority,
            is_stale=stale_us is not None and self._now_us >= stale_us,
            body=lambda: native.body(pos),
            fused_score=None if self._fused is None else float(self._fused[k]),
        )
        self._cache[k] = passage
        return passage


def canonical_json(obj: Any) -> bytes:
    """Keys sorted by code point, no insignificant white space, UTF-8 (SPEC §5.9)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True)
class Context:
    """What a resolution returns (SPEC §5.2)."""

    query: Query
    generation: int
    passages: PassageList
    diagnostics: tuple[Diagnostic, ...]
    exclusions: tuple[Exclusion, ...]

    @cached_property
    def digest(self) -> str:
        """``sha256:`` + hex SHA-256 of the canonical JSON of SPEC §5.9:
        independent of ``explain``, time and the catalog generation."""
        doc = {
            "passages": [[s, c, sc, c + ".md"] for s, c, sc in self.passages.keys()],
            "diagnostics": [[d.code, d.source_id, d.message] for d in self.diagnostics],
            "exclusions": [[e.source_id, e.concept_id, e.reason] for e in self.exclusions],
        }
        return "sha256:" + hashlib.sha256(canonical_json(doc)).hexdigest()
