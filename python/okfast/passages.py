"""The result of a resolution: ``Context`` and its lazy passage sequence (SPEC §5.2, §5.9).

Passages are held as arrays (source, position, score); a :class:`Passage`
object is built only when a caller reads it, so ``len()``, slicing a few and
the digest never materialise the whole list.
"""

from __future__ import annotations

import hashlib
import json
import numbers
import operator
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import repeat
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import numpy.typing as npt

from okfast import _native
from okfast.model import (
    Diagnostic,
    Exclusion,
    Explanation,
    FieldScore,
    Passage,
    TermMatch,
    TokenScore,
    passage_from_fields,
)
from okfast.scoring import digest_score

if TYPE_CHECKING:
    from okfast.bundle import Bm25fQuery, Bm25fStats, Bundle, QueryTerms
    from okfast.catalog import Source
    from okfast.query import Query
    from okfast.scoring import BM25FParams


@dataclass(frozen=True)
class SourceSnapshot:
    """A source that was searched: the snapshot it was searched in, the
    query's terms (or BM25F tokens) for it, for BM25F and fusion the
    statistics its passages were scored with, and for fusion the weighted
    count's terms too (its ``explain`` shows both rankings' reasons)."""

    source: Source
    bundle: Bundle
    terms: QueryTerms | Bm25fQuery
    stats: Bm25fStats | None = None
    counted: QueryTerms | None = None


@dataclass(frozen=True)
class ExplainInfo:
    """What ``explain=True`` needs beyond the passages: the strategy, the
    quota, and which passages were pinned (in final order)."""

    strategy: str
    fairness_quota: int | None
    pinned: npt.NDArray[np.bool_] | None


#: Each field's name and weight in `explain` (docs/spec.md §3.3).
_WEIGHTS: tuple[tuple[str, int], ...] = _native.FIELD_WEIGHTS


class PassageList(Sequence[Passage]):
    """The ordered passages of a context, materialised on access."""

    def __init__(
        self,
        searched: Sequence[SourceSnapshot],
        bm25f: BM25FParams,
        src: npt.NDArray[np.uint32],
        pos: npt.NDArray[np.int32],
        score: npt.NDArray[np.uint32] | npt.NDArray[np.float64],
        fused: npt.NDArray[np.float64] | None,
        now_us: int,
        explain: ExplainInfo | None = None,
    ) -> None:
        self._explain = explain
        self._bm25f = bm25f
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
        # As a list's: any integer (numpy's too), never a float.
        try:
            i = operator.index(i)
        except TypeError:
            raise TypeError(
                f"passage indices must be integers or slices, not {type(i).__name__}"
            ) from None
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"passage index {i} out of range for {n} passages")
        return self._build(i % n if n else i)

    def __iter__(self) -> Iterator[Passage]:
        for k in range(len(self)):
            yield self._build(k)

    def __repr__(self) -> str:
        return f"<PassageList: {len(self)} passages>"

    def index(self, value: object, start: int = 0, stop: int | None = None) -> int:
        """As a list's ``index``, with its message: ``Sequence``'s raises a
        ``ValueError`` that says nothing."""
        try:
            return super().index(value, start, stop)  # type: ignore[arg-type]
        except ValueError:
            raise ValueError(f"{value!r} is not among the passages") from None

    def __eq__(self, other: object) -> bool:
        # Equal passages in the same order, as two lists of them compare
        # (docs/spec.md §5.2): two resolutions that return the same passages
        # are equal results, and so are their contexts.
        if not isinstance(other, PassageList | list):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        # Consistent with equality: a frozen `Context` hashes its passages.
        return hash(tuple(self))

    def keys(self) -> list[tuple[str, str, int | float]]:
        """``(source_id, concept_id, score)`` of every passage, without building them."""
        sources = [(e.source.id, e.bundle.concept_ids) for e in self._searched]
        src, pos, score = self._src.tolist(), self._pos.tolist(), self._score.tolist()
        if len(sources) == 1:  # the loops in C: a judged set's searches read only this
            sid, ids = sources[0]
            return list(zip(repeat(sid, len(pos)), map(ids.__getitem__, pos), score, strict=True))
        return [
            (sources[s][0], sources[s][1][p], sc) for s, p, sc in zip(src, pos, score, strict=True)
        ]

    def digest_keys(self) -> list[tuple[str, str, int]]:
        """:meth:`keys` as the digest records them: a BM25F score as whole
        micro-units (docs/spec.md §12.7), a weighted count as it is."""
        if self._score.dtype.kind != "f":
            return [(s, c, int(sc)) for s, c, sc in self.keys()]
        return [(s, c, digest_score(float(sc))) for s, c, sc in self.keys()]

    def _build(self, k: int) -> Passage:
        cached = self._cache.get(k)
        if cached is not None:
            return cached
        entry = self._searched[int(self._src[k])]
        bundle = entry.bundle
        pos = int(self._pos[k])
        fields = bundle.passage_fields(pos, entry.terms)
        stale_us = fields.stale_after_us
        score = self._score[k]
        passage = passage_from_fields(
            fields,
            source_id=entry.source.id,
            score=float(score) if self._score.dtype.kind == "f" else int(score),
            priority=entry.source.priority,
            default_authority=entry.source.authority,
            is_stale=stale_us is not None and self._now_us >= stale_us,
            body=lambda: bundle.body_at(pos),
            fused_score=None if self._fused is None else float(self._fused[k]),
            explanation=None if self._explain is None else self._explanation(k, entry, pos),
        )
        self._cache[k] = passage
        return passage

    def _explanation(self, k: int, entry: SourceSnapshot, pos: int) -> Explanation:
        info = self._explain
        assert info is not None
        matches: list[TermMatch] = []
        tokens: list[TokenScore] = []
        if entry.stats is not None:
            terms = entry.terms
            assert not isinstance(terms, _native.QueryTerms)
            for part in entry.bundle.explain_bm25f(pos, terms, entry.stats, self._bm25f):
                parts = tuple(
                    FieldScore(p.field, p.tf, p.length, p.weighted_tf, p.contribution)
                    for p in part.fields
                )
                tokens.append(TokenScore(part.token, part.idf, part.weighted_tf, part.score, parts))
        counted = entry.counted if entry.stats is not None else entry.terms
        if counted is not None:
            assert isinstance(counted, _native.QueryTerms)
            for t in entry.bundle.explain_at(pos, counted):
                hit = {"title": t.title, "tags_desc": t.tags_desc, "body": t.body}
                fields = tuple(name for name, _w in _WEIGHTS if hit[name])
                weight = sum(w for name, w in _WEIGHTS if hit[name])
                matches.append(TermMatch(t.term, fields, weight))
        score = float(self._score[k]) if self._score.dtype.kind == "f" else int(self._score[k])
        sid, cid = entry.source.id, entry.bundle.concept_ids[pos]
        prio = entry.source.priority
        keys: dict[str, tuple[tuple[str, Any], ...]] = {
            "grouped": (("source", sid), ("score", score), ("concept_id", cid)),
            "merged": (
                ("score", score),
                ("priority", prio),
                ("source_id", sid),
                ("concept_id", cid),
            ),
            "priority_weighted": (
                ("priority", prio),
                ("score", score),
                ("source_id", sid),
                ("concept_id", cid),
            ),
            "reciprocal_rank": (
                ("fused_score", None if self._fused is None else float(self._fused[k])),
                ("priority", prio),
                ("source_id", sid),
                ("concept_id", cid),
            ),
        }
        return Explanation(
            strategy=info.strategy,
            sort_key=keys[info.strategy],
            matches=tuple(matches),
            bm25f=tuple(tokens),
            pinned=bool(info.pinned[k]) if info.pinned is not None else False,
            rank=k + 1,
            fairness_quota=info.fairness_quota,
        )


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
        return digest_of(
            [[s, c, sc, c + ".md"] for s, c, sc in _digest_keys(self.passages)],
            [[d.code, d.source_id, d.message] for d in self.diagnostics],
            [[e.source_id, e.concept_id, e.reason] for e in self.exclusions],
        )


def _digest_keys(passages: Sequence[Passage]) -> list[tuple[str, str, int]]:
    """A resolver's list says; any other sequence of passages (a context
    made by hand) by each score's type: a whole number as it is, any other
    as BM25F's micro-units (docs/spec.md §5.9, §12.7)."""
    if isinstance(passages, PassageList):
        return passages.digest_keys()
    return [
        (
            p.source_id,
            p.concept_id,
            int(p.score) if isinstance(p.score, numbers.Integral) else digest_score(p.score),
        )
        for p in passages
    ]


def digest_of(
    passages: list[list[Any]], diagnostics: list[list[Any]], exclusions: list[list[Any]]
) -> str:
    """SPEC §5.9 over rows already in order: ``[source_id, concept_id, score,
    path]``, ``[code, source_id, message]``, ``[source_id, concept_id, reason]``.
    ``tests/digest_vectors.json`` holds inputs and outputs another
    implementation can check itself against."""
    doc = {"passages": passages, "diagnostics": diagnostics, "exclusions": exclusions}
    return "sha256:" + hashlib.sha256(canonical_json(doc)).hexdigest()
