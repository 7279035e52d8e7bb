"""The driver's view of what shards found (docs/spec.md §15.3).

A :class:`RemoteBundle` stands, in a resolution's
:class:`~okfast.passages.SourceSnapshot`, for one source's snapshot on its
shards. It knows only the concepts the query matched: their positions are
renumbered ``0..m-1`` in position order (so every comparison of positions the
pipeline makes keeps its outcome), and it answers the reads the resolver and
governance make — concept ids, pinning, authorities, declarations — from
arrays the shards sent with the search. Passage fields, bodies and
explanations are read from the shards when a passage is first read, a page
of passages per round trip (:class:`RemotePassages`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from okfast import _native
from okfast.bundle import Bm25fQuery, Bm25fStats, Bundle, QueryTerms
from okfast.distributed.shard import Explained, Fields, Read, Unit
from okfast.passages import PassageList
from okfast.scoring import BM25FParams

#: How many passages one read fetches from the shards.
PAGE = 64

#: ``call(shard, method, args)`` for every shard at once: each shard's reply.
Fanout = Callable[[dict[int, tuple[str, tuple[Any, ...]]]], dict[int, Any]]


class RemoteBundle(Bundle):
    """One searched source's matched concepts, held by the driver. Positions
    are indices into :attr:`concept_ids` (the matches, in id order)."""

    def __init__(
        self,
        fanout: Fanout,
        parts: list[tuple[int, Unit, str]],
        real: npt.NDArray[np.int32],
        owner: npt.NDArray[np.intp],
        ids: tuple[str, ...],
        pinned: npt.NDArray[np.bool_] | None,
        raw_authority: dict[int, str | None],
        read: tuple[str, BM25FParams | None, Bm25fStats | None, bool, bool],
    ) -> None:
        # No native snapshot: every read this class serves is overridden below.
        self.__dict__["concept_ids"] = ids
        self._fanout = fanout
        self._parts = parts
        self._real = real
        self._owner = owner
        self._pinned = pinned
        self._raw_authority = raw_authority
        self._read = read
        self._fields: dict[int, Fields] = {}
        self._explained: dict[int, Explained] = {}

    def __len__(self) -> int:
        return len(self._real)

    def __repr__(self) -> str:
        return f"<okfast.distributed.RemoteBundle: {len(self)} matched concepts>"

    def pinned(
        self, positions: npt.NDArray[np.int32], title_key: str, id_key: str
    ) -> npt.NDArray[np.bool_]:
        assert self._pinned is not None  # the search asked for it
        return self._pinned[positions]

    def authority_at(self, position: int) -> str | None:
        return self._raw_authority[position]

    def passage_fields(
        self, position: int, terms: QueryTerms | Bm25fQuery
    ) -> _native.PassageFields:
        if position not in self._fields:
            fetch({self: [position]})
        return cast(_native.PassageFields, self._fields[position])

    def explain_at(self, position: int, terms: QueryTerms) -> list[_native.TermFields]:
        if position not in self._explained:
            fetch({self: [position]})
        return cast(list[_native.TermFields], self._explained[position][1])

    def explain_bm25f(
        self, position: int, query: Bm25fQuery, stats: Bm25fStats, params: BM25FParams
    ) -> list[_native.Bm25fTermPart]:
        if position not in self._explained:
            fetch({self: [position]})
        return cast(list[_native.Bm25fTermPart], self._explained[position][0])

    def body_at(self, position: int) -> str:
        shard, unit, version = self._parts[int(self._owner[position])]
        args = (unit, version, int(self._real[position]))
        body = self._fanout({shard: ("body", args)})[shard]
        assert isinstance(body, str)
        return body


def fetch(wanted: dict[RemoteBundle, list[int]]) -> None:
    """Read the fields (and explanations) of ``wanted`` positions from their
    shards: one round trip, every shard at once."""
    calls: dict[int, list[Read]] = {}
    where: dict[int, list[tuple[RemoteBundle, list[int]]]] = {}
    fanout: Fanout | None = None
    for rb, positions in wanted.items():
        fanout = rb._fanout
        text, bm25f, stats, explain, fusion = rb._read
        by_part: dict[int, list[int]] = {}
        for p in positions:
            by_part.setdefault(int(rb._owner[p]), []).append(p)
        for part, ps in by_part.items():
            shard, unit, version = rb._parts[part]
            real = tuple(int(rb._real[p]) for p in ps)
            calls.setdefault(shard, []).append(
                Read(unit, version, real, text, bm25f, stats, explain, fusion)
            )
            where.setdefault(shard, []).append((rb, ps))
    if fanout is None:
        return
    replies = fanout({shard: ("read", (reads,)) for shard, reads in calls.items()})
    for shard, reply in replies.items():
        for (rb, ps), rows in zip(where[shard], reply, strict=True):
            for p, (fields, explained) in zip(ps, rows, strict=True):
                rb._fields[p] = fields
                if explained is not None:
                    rb._explained[p] = explained


class RemotePassages(PassageList):
    """A :class:`PassageList` whose sources are :class:`RemoteBundle` s: the
    first read of a passage fetches its page (:data:`PAGE` passages from it
    on) from the shards in one round trip."""

    def _build(self, k: int) -> Any:
        if k not in self._cache:
            self._page(k)
        return super()._build(k)

    def _page(self, k: int) -> None:
        wanted: dict[RemoteBundle, list[int]] = {}
        searched: Sequence[Any] = self._searched
        for i in range(k, min(k + PAGE, len(self))):
            rb = searched[int(self._src[i])].bundle
            p = int(self._pos[i])
            if isinstance(rb, RemoteBundle) and p not in rb._fields:
                wanted.setdefault(rb, []).append(p)
        fetch(wanted)
