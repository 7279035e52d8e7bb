"""The cut of a ranking-only search (docs/spec.md §5.2): which sources'
lists may stop at the query's ``limit``, and whether the passages kept from
such lists are those the whole lists would have given."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from okfast import governance
from okfast.bundle import Bundle
from okfast.query import Query


def cut_depth(q: Query, quota: int | None, exclusions: bool) -> int | None:
    """How many passages a search may ask of each source: ``q.limit`` when
    it reads only its ranking and neither a fairness quota nor a pinned
    title can bring in a passage from further down; else ``None`` (all).
    The scorer and the bundles' declarations are weighed per search
    (:func:`cuttable`)."""
    if exclusions or not q.limit or quota is not None or q.pin_exact_title:
        return None
    return q.limit


def cuttable(bundle: Bundle) -> bool:
    """Whether governance decides each of this bundle's passages alone
    (supersession, ``min_authority``), so a list cut at a depth cannot
    change what it keeps or reports (docs/spec.md §5.2, §7)."""
    d = governance.declarations(bundle)
    return not (d.conflicts or d.broken or d.any_unknown)


def settled(
    beyond: list[float | None],
    ordered_src: npt.NDArray[np.uint32],
    kept: npt.NDArray[np.intp],
    kept_score: npt.NDArray[np.uint32] | npt.NDArray[np.float64],
    q: Query,
) -> bool:
    """Whether the passages kept from lists cut at a depth are those the
    whole lists give (docs/spec.md §5.2). ``beyond[k]`` is the best score of
    source ``k``'s passages past its cut (``None``: its list was whole).
    Those passages come, in every strategy's order, after the last of its
    passages that was ordered, unless one ties the last passage kept: a tie
    is broken by concept id in ordinal order in the strategy's order but in
    id order in the list (§12.3), so it may come first. They change nothing
    when the last passage kept (``kept`` indexes the ordered passages,
    ``kept_score`` are the kept passages' scores) precedes that one without
    tying them, or when ``min_score`` drops them all."""
    cut = [
        (k, best)
        for k, best in enumerate(beyond)
        if best is not None and (q.min_score is None or best >= q.min_score)
    ]
    if not cut:
        return True
    if q.limit is None or len(kept) < q.limit:
        return False
    # Each source's last ordered passage (-1: none), in one pass, and only
    # when some list was cut: one scan of the ordered passages per cut source
    # grew with sources × passages. (`beyond` may name fewer sources than
    # were ordered: a remote search's.)
    size = max(len(beyond), int(ordered_src.max(initial=0)) + 1)
    last = np.full(size, -1, np.int64)
    np.maximum.at(last, ordered_src, np.arange(len(ordered_src)))
    for k, best in cut:
        if last[k] < 0 or int(kept[-1]) > int(last[k]):
            return False
        if float(kept_score[-1]) == best:
            return False
    return True
