"""The resolver's exclusions (docs/spec.md §5.8): the records of passages it
left out, and their order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import numpy.typing as npt

from okfast import governance
from okfast.model import Exclusion
from okfast.passages import SourceSnapshot
from okfast.query import NEVER_US


@dataclass(frozen=True)
class Run:
    """Passages left out for one reason and detail, as positions: built
    into exclusions only once ordered (a limit may leave out thousands)."""

    src: npt.NDArray[np.uint32]
    pos: npt.NDArray[np.int32]
    reason: str
    detail: str


def in_order(
    excl: list[Exclusion], runs: list[Run], searched: Sequence[SourceSnapshot]
) -> list[Exclusion]:
    """``excl`` and ``runs`` (``src`` indexing ``searched``) as exclusions,
    by source id, concept id in id order (§1.2; a source's own exclusion,
    with no concept, first), reason, detail. A bundle keeps its concepts in
    id order, so a concept's position is its rank there; an id its source's
    searched bundle does not hold (none today) falls back to comparing id
    segments."""
    where = {e.source.id: k for k, e in enumerate(searched)}
    at: list[int] = []
    for e in excl:
        k = where.get(e.source_id)
        p = (
            -1
            if not e.concept_id
            else None
            if k is None
            else searched[k].bundle.position(e.concept_id)
        )
        if p is None:
            every = excl + [x for r in runs for x in _built(r, searched)]
            return sorted(
                every,
                key=lambda e: (e.source_id, governance.id_key(e.concept_id), e.reason, e.detail),
            )
        at.append(p)
    names = [e.source.id for e in searched]
    rank = _ranks([e.source_id for e in excl] + names)
    reasons = _ranks([e.reason for e in excl] + [r.reason for r in runs])
    details = _ranks([e.detail for e in excl] + [r.detail for r in runs])
    by_searched = np.array([rank[n] for n in names] or [0], np.int64)
    # Stable, so equal keys (equal exclusions) keep their order.
    order = np.lexsort(
        (
            _column([details[e.detail] for e in excl], [(r, details[r.detail]) for r in runs]),
            _column([reasons[e.reason] for e in excl], [(r, reasons[r.reason]) for r in runs]),
            _column(at, [r.pos for r in runs]),
            _column([rank[e.source_id] for e in excl], [by_searched[r.src] for r in runs]),
        )
    )
    n = len(excl)
    ids = [e.bundle.concept_ids for e in searched]
    src = np.concatenate([r.src for r in runs]).tolist() if runs else []
    pos = np.concatenate([r.pos for r in runs]).tolist() if runs else []
    which = [k for k, r in enumerate(runs) for _ in range(len(r.pos))]
    out: list[Exclusion] = []
    for i in order.tolist():
        if i < n:
            out.append(excl[i])
        else:
            j = i - n
            s, r = src[j], runs[which[j]]
            out.append(Exclusion(names[s], ids[s][pos[j]], r.reason, r.detail))
    return out


def _column(
    single: list[int], parts: Sequence[npt.NDArray[Any] | tuple[Run, int]]
) -> npt.NDArray[np.int64]:
    """One sort key over the single exclusions then the runs' passages (a
    ``(run, value)`` part repeats the value over the run)."""
    chunks = [np.array(single, np.int64)]
    for p in parts:
        chunks.append(
            np.full(len(p[0].pos), p[1], np.int64) if isinstance(p, tuple) else p.astype(np.int64)
        )
    return np.concatenate(chunks)


def _ranks(values: list[str]) -> dict[str, int]:
    """Each distinct string's rank (code-point order, as ``str`` compares)."""
    return {v: i for i, v in enumerate(sorted(set(values)))}


def _built(r: Run, searched: Sequence[SourceSnapshot]) -> list[Exclusion]:
    named = [(e.source.id, e.bundle.concept_ids) for e in searched]
    return [
        Exclusion(named[s][0], named[s][1][p], r.reason, r.detail)
        for s, p in zip(r.src.tolist(), r.pos.tolist(), strict=True)
    ]


def iso(us: int) -> str:
    """A stale-after instant as exclusions write it."""
    if us == NEVER_US:
        return "never"
    # Integer microseconds from the epoch: exact, and defined up to
    # 9999-12-31T23:59:59.999999Z (a float division rounds both away).
    return (_EPOCH + timedelta(microseconds=us)).isoformat()


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
