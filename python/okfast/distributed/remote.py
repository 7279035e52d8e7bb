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
from okfast.distributed.rows import Explained, Fields, Read, Row
from okfast.distributed.shard import Found
from okfast.governance import Declarations
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
        #: per part: its shard, its unit's number there, its snapshot version
        parts: list[tuple[int, int, str]],
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
        self._fields: dict[int, Row] = {}
        self._explained: dict[int, Explained] = {}

    def __len__(self) -> int:
        return len(self._real)

    def position(self, concept_id: str) -> int | None:
        """The position of a matched concept (its index in :attr:`concept_ids`)."""
        at = self.__dict__.get("_at")
        if at is None:
            at = self.__dict__["_at"] = {c: p for p, c in enumerate(self.concept_ids)}
        return at.get(concept_id)

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
        return cast(_native.PassageFields, Fields(*self._fields[position]))

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


def merge(
    fanout: Fanout,
    versions: list[tuple[int, int, str]],
    parts: list[Found],
    read: tuple[str, BM25FParams | None, Bm25fStats | None, bool, bool],
    declared: Declarations | None = None,
    rrf_k: int | None = None,
) -> tuple[RemoteBundle, Any, Any, Any]:
    """One source's parts (``versions``: each one's shard, unit number and
    snapshot) as one list in its own order (score desc, then
    position: docs/spec.md §3.4), renumbered ``0..m-1`` in position order.
    Each part lists its matches in position order and the parts are
    consecutive ranges of positions, so their matches simply follow each
    other. A split source's lists are merged by score then position across
    its parts (``Scorer.FUSION``, ``rrf_k`` given: its parts' scorer lists
    fused by their ranks in the whole source's lists), its concept ranks
    taken among its matches, and its governance from ``declared``, the graph
    over the whole source (docs/spec.md §15.5)."""
    sizes = [len(r.pos) for r in parts]
    offset = [sum(sizes[:k]) for k in range(len(sizes))]
    ids = tuple(i for r in parts if r.ids for i in r.ids.split("\n"))
    owner = np.repeat(np.arange(len(parts), dtype=np.intp), sizes)
    raw: dict[int, str | None]
    if len(parts) == 1:
        r = parts[0]
        real, auth, ordinal, pinned = r.pos, r.auth, r.ordinal, r.pinned
        order, score = r.order, r.score

        def at(p: int) -> int:
            return int(np.searchsorted(real, p))

        def matched(p: int) -> bool:
            k = at(p)
            return k < len(real) and int(real[k]) == p

        raw = {at(p): a for p, a in r.raw_authority.items()}
        decl = Declarations(
            {at(p): v for p, v in r.superseded.items()},
            {at(p): tuple(at(t) for t in v if matched(t)) for p, v in r.conflicts.items()},
            tuple((at(b[0]), b[1], b[2]) for b in r.broken),
            auth,
            r.any_unknown,
        )
    else:
        real = np.concatenate([r.pos for r in parts])
        auth = np.concatenate([r.auth for r in parts])
        pinned = None
        if parts[0].pinned is not None:
            pinned = np.concatenate([r.pinned for r in parts if r.pinned is not None])
        # Positions in the whole source: each part's concepts follow the
        # previous parts' (its range comes after theirs in id order).
        base = np.cumsum([0] + [r.size for r in parts[:-1]]).astype(np.int64)
        whole = real.astype(np.int64) + base[owner]
        # Concept ranks in ordinal order, among the matches: only their
        # relative order is ever compared (docs/spec.md §5.4).
        ordinal = np.empty(len(ids), np.uint32)
        ordinal[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids), dtype=np.uint32)
        if rrf_k is not None:
            order, score = _fused(parts, base, whole, ordinal, rrf_k)
        else:
            order = np.concatenate([r.order + o for r, o in zip(parts, offset, strict=True)])
            score = np.concatenate([r.score for r in parts])
            by = np.lexsort((whole[order], -score.astype(np.float64)))
            order, score = order[by], score[by]
        assert declared is not None
        raw = {o + p: a for r, o in zip(parts, offset, strict=True) for p, a in _local(r).items()}
        decl = _restricted(declared, whole, auth, any(r.any_unknown for r in parts))
    rb = RemoteBundle(fanout, versions, real, owner, ids, pinned, raw, read)
    rb.__dict__["_declarations"] = decl
    for r, o in zip(parts, offset, strict=True):
        for k, (fields, explained) in zip(r.order[: len(r.rows)].tolist(), r.rows, strict=True):
            rb._fields[k + o] = fields
            if explained is not None:
                rb._explained[k + o] = explained
    return rb, order, score, ordinal


def _local(r: Found) -> dict[int, str | None]:
    """A part's raw authorities by its own match index."""
    return {int(np.searchsorted(r.pos, p)): a for p, a in r.raw_authority.items()}


def _restricted(
    d: Declarations, whole: npt.NDArray[np.int64], auth: npt.NDArray[np.uint8], any_unknown: bool
) -> Declarations:
    """The graph ``d`` of a whole source (positions ``whole`` of its matches)
    as its matches see it: renumbered, only the matched concepts' entries,
    conflicts only with matched concepts (as :func:`merge` keeps them for a
    source in one part)."""
    at = {int(p): k for k, p in enumerate(whole.tolist())} if not d.empty else {}
    return Declarations(
        {at[p]: v for p, v in d.superseded.items() if p in at},
        {at[p]: tuple(at[t] for t in v if t in at) for p, v in d.conflicts.items() if p in at},
        tuple((at[b[0]], b[1], b[2]) for b in d.broken if b[0] in at),
        auth,
        any_unknown,
    )


def _fused(
    parts: list[Found],
    base: npt.NDArray[np.int64],
    whole: npt.NDArray[np.int64],
    ordinal: npt.NDArray[np.uint32],
    k: int,
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]:
    """docs/spec.md §12.10 over a split source: each scorer's list of the
    whole source (its parts' lists merged by score desc, then position), a
    matched concept scoring ``1/(k + r)`` for each list it is in, as
    :func:`okfast.scoring.fuse` adds the shares; the matches (indices into
    ``whole``) by that score desc, then ordinal rank."""

    def shares(pos: str, score: str) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
        p = np.concatenate(
            [getattr(r, pos).astype(np.int64) + b for r, b in zip(parts, base, strict=True)]
        )
        sc = np.concatenate([getattr(r, score).astype(np.float64) for r in parts])
        listed = p[np.lexsort((p, -sc))]
        share = 1.0 / (k + np.arange(1, len(listed) + 1, dtype=np.float64))
        i = np.searchsorted(whole, listed)
        hit = i < len(whole)
        hit[hit] = whole[i[hit]] == listed[hit]
        return i[hit], share[hit]

    total = np.zeros(len(whole), np.float64)
    i, share = shares("counted_pos", "counted_score")
    total[i] = share
    i, share = shares("ranked_pos", "ranked_score")
    total[i] += share
    order = np.lexsort((ordinal, -total))
    return order.astype(np.int32), total[order]


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
