"""Governance (SPEC §5.8, §7): authority, supersession, conflicts, exact-title pins.

What a bundle declares is read once per snapshot (:func:`declarations`); what
a resolution keeps is decided over arrays (:func:`govern`, :func:`pin_order`),
so a query whose sources declare nothing pays a few numpy operations.

Decisions beyond the SPEC, in one place:

- Supersession is declared, never inferred: ``supersedes: [old, …]`` on the
  new concept or ``superseded_by: new`` on the old one, both naming concepts of
  the same bundle. A name that is missing (or the concept itself) is
  ``BrokenSupersession`` (an error) and supersedes nothing: a concept whose
  declared replacement does not exist is kept. So is a concept on a
  supersession cycle (``a`` supersedes ``b``, ``b`` supersedes ``a``, or
  longer): each declaration along the cycle is ``BrokenSupersession``.
- ``conflicts_with`` names concepts of the same bundle; declared on either
  side, a pair is one pair. A missing name is ``BrokenConflict`` (a warning).
- Steps after ordering, in this order: superseded concepts are removed
  (unless ``include_historical``), then those below ``min_authority``
  (``outranked``), then the losers of declared conflicts among what is left
  (pairs in id order; a loser drops out of its later pairs); then pinning,
  ``min_score`` and ``limit`` (the resolver).
- A concept's authority is its frontmatter's, else its source's catalog
  ``authority``, else ``reference``; an unknown value ranks below
  ``historical`` and is reported once per passage as ``UnknownAuthority``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

from okfast import _native
from okfast.catalog import AUTHORITIES
from okfast.model import Diagnostic, DiagnosticCode, Exclusion

if TYPE_CHECKING:
    from okfast.bundle import Bundle
    from okfast.passages import SourceSnapshot

UNKNOWN: int = _native.AUTHORITY_UNKNOWN  # rank of a value that is not an authority
ABSENT: int = _native.AUTHORITY_ABSENT  # rank of a concept that declares none
_RANK = {a: i for i, a in enumerate(AUTHORITIES)}
# docs/spec.md white space (not Python's str.split set), as the core splits on it.
_WS = re.compile("[" + re.escape(_native.WHITE_SPACE) + "]+")


def authority_rank(name: str | None) -> int:
    return _RANK.get(name, UNKNOWN) if name is not None else _RANK["reference"]


#: Appended to a broken reference's key when the concept it names exists but
#: supersedes the declarer in turn, through a cycle (docs/spec.md §7).
CYCLE = "/cycle"


def authority_name(rank: int) -> str:
    return AUTHORITIES[rank] if rank < UNKNOWN else "unknown"


@dataclass(frozen=True)
class Declarations:
    """What one bundle snapshot declares, by position."""

    #: superseded position → the ids that replace it, in id order
    superseded: dict[int, tuple[str, ...]] = field(default_factory=dict)
    #: position → the positions it is in a declared conflict with (both ways)
    conflicts: dict[int, tuple[int, ...]] = field(default_factory=dict)
    #: (position, field, missing id) of every reference that names nothing
    broken: tuple[tuple[int, str, str], ...] = ()
    #: each concept's authority rank as declared (``ABSENT`` when not)
    auth: npt.NDArray[np.uint8] = field(default_factory=lambda: np.zeros(0, np.uint8))
    #: whether any concept declares an authority that is not one
    any_unknown: bool = False

    @property
    def empty(self) -> bool:
        return not (self.superseded or self.conflicts or self.broken)


def declarations(bundle: Bundle) -> Declarations:
    """The bundle's supersession and conflict graph (computed once per snapshot)."""
    cached = bundle.__dict__.get("_declarations")
    if isinstance(cached, Declarations):
        return cached
    ids = bundle.concept_ids
    decls = [
        Declared(d.position, ids[d.position], d.supersedes, d.superseded_by, d.conflicts_with)
        for d in bundle.governance()
    ]
    auth = bundle.authority_ranks()
    d = graph(decls, bundle.position, auth, bool((auth == UNKNOWN).any()))
    bundle.__dict__["_declarations"] = d
    return d


@dataclass(frozen=True)
class Declared:
    """What one concept declares about others: its position and id, and the
    names it gives under each key."""

    position: int
    concept_id: str
    supersedes: Sequence[str]
    superseded_by: Sequence[str]
    conflicts_with: Sequence[str]


def graph(
    decls: Sequence[Declared],
    find: Callable[[str], int | None],
    auth: npt.NDArray[np.uint8],
    any_unknown: bool,
) -> Declarations:
    """The supersession and conflict graph of ``decls`` (in position order),
    ``find`` giving the position of a concept id of the same bundle. A source
    loaded in parts (docs/spec.md §15.5) builds its graph from every part's
    declarations, positions counted across the parts, with the same code."""
    sup: dict[int, set[str]] = {}
    con: dict[int, set[int]] = {}
    # In declaration order: a broken reference (position, key, name), or a
    # supersession edge, kept until the cycles are known.
    events: list[tuple[int, str, str] | _Edge] = []

    def target(pos: int, key: str, name: str) -> int | None:
        t = find(name)
        if t is None or t == pos:
            events.append((pos, key, name))
            return None
        return t

    for decl in decls:
        pos = decl.position
        for name in decl.supersedes:
            t = target(pos, "supersedes", name)
            if t is not None:
                events.append(_Edge(t, pos, pos, "supersedes", name, decl.concept_id))
        for name in decl.superseded_by:
            t = target(pos, "superseded_by", name)
            if t is not None:
                events.append(_Edge(pos, t, pos, "superseded_by", name, name))
        for name in decl.conflicts_with:
            t = target(pos, "conflicts_with", name)
            if t is not None:
                con.setdefault(pos, set()).add(t)
                con.setdefault(t, set()).add(pos)
    # An edge inside a supersession cycle names no replacement the resolver
    # could trust: it supersedes nothing, and is reported (docs/spec.md §7).
    component = _components([(e.old, e.new) for e in events if isinstance(e, _Edge)])
    broken: list[tuple[int, str, str]] = []
    for e in events:
        if not isinstance(e, _Edge):
            broken.append(e)
        elif component[e.old] == component[e.new]:
            broken.append((e.declarer, e.key + CYCLE, e.name))
        else:
            sup.setdefault(e.old, set()).add(e.replacer)
    return Declarations(
        {p: tuple(sorted(v, key=id_key)) for p, v in sup.items()},
        {p: tuple(sorted(v)) for p, v in con.items()},
        tuple(broken),
        auth,
        any_unknown,
    )


class _Edge(NamedTuple):
    """``old`` superseded by ``new``, as ``declarer`` declared it under ``key``."""

    old: int
    new: int
    declarer: int
    key: str
    name: str
    replacer: str


def _components(edges: list[tuple[int, int]]) -> dict[int, int]:
    """Each node's strongly connected component (Tarjan's, iterative): two
    positions share one exactly when each supersedes the other, directly or
    through others."""
    succ: dict[int, list[int]] = {}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
        succ.setdefault(b, [])
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    comp: dict[int, int] = {}
    stack: list[int] = []
    on: set[int] = set()
    for root in succ:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on.add(v)
            if i < len(succ[v]):
                work.append((v, i + 1))
                w = succ[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp[w] = v
                    if w == v:
                        break
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return comp


def id_key(concept_id: str) -> list[str]:
    """SPEC §1.2 id order: segment lists compared element-wise, prefix first."""
    return concept_id.split("/")


def unknown_authority(concept_id: str, raw: str | None, source_id: str | None) -> Diagnostic:
    """``UnknownAuthority``: the value is not one of SPEC §7's; it ranks last."""
    return Diagnostic(
        DiagnosticCode.UNKNOWN_AUTHORITY.value,
        f"Concept '{concept_id}' has authority '{raw}', which is not one of "
        f"{', '.join(AUTHORITIES)}; it ranks last.",
        concept_id + ".md",
        source_id,
        "warning",
    )


def broken_diagnostic(
    source_id: str | None, ids: Sequence[str], b: tuple[int, str, str]
) -> Diagnostic:
    pos, key, name = b
    if key.endswith(CYCLE):
        key, what = key.removesuffix(CYCLE), f"'{name}', which is on a supersession cycle with it"
    elif name == ids[pos]:
        what = "itself"
    else:
        what = f"'{name}', which is not in the bundle"
    if key == "conflicts_with":
        return Diagnostic(
            DiagnosticCode.BROKEN_CONFLICT.value,
            f"Concept '{ids[pos]}' declares conflicts_with {what}.",
            ids[pos] + ".md",
            source_id,
            "warning",
        )
    return Diagnostic(
        DiagnosticCode.BROKEN_SUPERSESSION.value,
        f"Concept '{ids[pos]}' declares {key} {what}; it supersedes nothing.",
        ids[pos] + ".md",
        source_id,
        "error",
    )


@dataclass
class Governed:
    """What :func:`govern` decided: a keep mask over the ordered passages."""

    keep: npt.NDArray[np.bool_]
    exclusions: list[Exclusion]
    diagnostics: list[Diagnostic]


def by_source(src: npt.NDArray[np.uint32], count: int) -> list[npt.NDArray[np.intp]]:
    """The indices of each source's passages (source ``k`` is ``src == k``),
    ascending, from one stable sort: a scan of every passage per source cost
    sources × passages."""
    order = np.argsort(src, kind="stable")
    bounds = np.searchsorted(src[order], np.arange(count + 1)).tolist()
    return [order[bounds[k] : bounds[k + 1]] for k in range(count)]


def ranks(
    searched: Sequence[SourceSnapshot],
    decls: Sequence[Declarations],
    groups: Sequence[npt.NDArray[np.intp]],
    pos: npt.NDArray[np.int32],
) -> npt.NDArray[np.uint8]:
    """Each passage's authority rank, with its source's default applied;
    ``groups`` as :func:`by_source` gives them."""
    out = np.empty(len(pos), np.uint8)
    for entry, d, idx in zip(searched, decls, groups, strict=True):
        if not len(idx):
            continue
        r = d.auth[pos[idx]]
        r[r == ABSENT] = authority_rank(entry.source.authority)
        out[idx] = r
    return out


def govern(
    searched: Sequence[SourceSnapshot],
    src: npt.NDArray[np.uint32],
    pos: npt.NDArray[np.int32],
    *,
    include_historical: bool,
    min_authority: str | None,
) -> Governed:
    """Supersession, ``min_authority`` and conflicts over ordered passages."""
    n = len(pos)
    g = Governed(np.ones(n, np.bool_), [], [])
    decls = [declarations(e.bundle) for e in searched]
    if min_authority is None and all(d.empty and not d.any_unknown for d in decls):
        return g  # nothing declared anywhere: the common case costs this much
    groups = by_source(src, len(searched))
    rank = ranks(searched, decls, groups, pos)
    any_unknown = any(d.any_unknown for d in decls)
    unknown = np.flatnonzero(rank == UNKNOWN) if any_unknown else np.zeros(0, np.intp)
    for i in unknown.tolist():
        entry = searched[int(src[i])]
        cid = entry.bundle.concept_ids[int(pos[i])]
        raw = entry.bundle.authority_at(int(pos[i]))
        g.diagnostics.append(unknown_authority(cid, raw, entry.source.id))
    for k, (entry, d) in enumerate(zip(searched, decls, strict=True)):
        if d.empty:
            continue
        ids = entry.bundle.concept_ids
        idx = groups[k]
        here = set(pos[idx].tolist())
        for b in d.broken:
            if b[0] in here:
                g.diagnostics.append(broken_diagnostic(entry.source.id, ids, b))
        if not include_historical and d.superseded:
            for i in idx.tolist():
                by = d.superseded.get(int(pos[i]))
                if by is not None:
                    g.keep[i] = False
                    g.exclusions.append(
                        Exclusion(
                            entry.source.id,
                            ids[int(pos[i])],
                            "superseded",
                            "superseded by " + ", ".join(by),
                        )
                    )
    if min_authority is not None:
        floor = _RANK[min_authority]
        for i in np.flatnonzero(g.keep & (rank > floor)).tolist():
            entry = searched[int(src[i])]
            g.keep[i] = False
            g.exclusions.append(
                Exclusion(
                    entry.source.id,
                    entry.bundle.concept_ids[int(pos[i])],
                    "outranked",
                    f"authority {authority_name(int(rank[i]))} is below min_authority {min_authority}",
                )
            )
    for k, (entry, d) in enumerate(zip(searched, decls, strict=True)):
        if d.conflicts:
            _conflicts(g, entry, d, groups[k][g.keep[groups[k]]], pos, rank)
    return g


def _conflicts(
    g: Governed,
    entry: SourceSnapshot,
    d: Declarations,
    idx: npt.NDArray[np.intp],
    pos: npt.NDArray[np.int32],
    rank: npt.NDArray[np.uint8],
) -> None:
    at = {int(pos[i]): int(i) for i in idx.tolist()}  # kept position → passage index
    ids = entry.bundle.concept_ids
    sid = entry.source.id
    for p in sorted(at):
        for t in d.conflicts.get(p, ()):
            if t <= p or t not in at or not g.keep[at[p]] or not g.keep[at[t]]:
                continue
            rp, rt = int(rank[at[p]]), int(rank[at[t]])
            a, b = ids[p], ids[t]
            if rp == rt:
                g.diagnostics.append(
                    Diagnostic(
                        DiagnosticCode.CONFLICT_AMBIGUOUS.value,
                        f"Concepts '{a}' and '{b}' declare a conflict and have the same "
                        f"authority ({authority_name(rp)}); both are kept.",
                        None,
                        sid,
                        "warning",
                    )
                )
                continue
            (win, wr), (lose, lr, li) = (
                ((a, rp), (b, rt, at[t])) if rp < rt else ((b, rt), (a, rp, at[p]))
            )
            g.keep[li] = False
            g.exclusions.append(
                Exclusion(
                    sid,
                    lose,
                    "conflict",
                    f"conflicts with {win} (authority {authority_name(wr)} outranks {authority_name(lr)})",
                )
            )
            g.diagnostics.append(
                Diagnostic(
                    DiagnosticCode.CONFLICT_DECLARED.value,
                    f"Concepts '{a}' and '{b}' conflict; kept '{win}' "
                    f"({authority_name(wr)}) over '{lose}' ({authority_name(lr)}).",
                    None,
                    sid,
                    "warning",
                )
            )


def pin_keys(text: str) -> tuple[str, str]:
    """``(title_key, id_key)`` of SPEC §5.8 pinning: the query with white-space
    runs collapsed to one space (folded natively), and lower-cased with runs
    replaced by ``-``."""
    words = [w for w in _WS.split(text) if w]
    return " ".join(words), "-".join(words).lower()


def pin_order(
    searched: Sequence[SourceSnapshot],
    src: npt.NDArray[np.uint32],
    pos: npt.NDArray[np.int32],
    text: str,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
    """A stable permutation putting pinned passages first, and the pinned mask
    (in the new order). The identity when nothing is pinned."""
    title_key, id_key = pin_keys(text)
    pinned = np.zeros(len(pos), np.bool_)
    for entry, m in zip(searched, by_source(src, len(searched)), strict=True):
        if len(m):
            pinned[m] = entry.bundle.pinned(pos[m], title_key, id_key)
    perm = np.concatenate([np.flatnonzero(pinned), np.flatnonzero(~pinned)])
    return perm, pinned[perm]


def validate(bundle: Bundle, source_authority: str | None = None) -> list[Diagnostic]:
    """Bundle-wide governance problems for ``okfast validate``: broken
    references, unknown authorities and conflicts no authority can settle."""
    ids = bundle.concept_ids
    d = declarations(bundle)
    out = [broken_diagnostic(None, ids, b) for b in d.broken]
    auth = d.auth.astype(np.int64)
    auth[auth == ABSENT] = authority_rank(source_authority)
    for p in np.flatnonzero(auth == UNKNOWN).tolist():
        raw = bundle.authority_at(p)
        out.append(unknown_authority(ids[p], raw, None))
    for p, partners in sorted(d.conflicts.items()):
        for t in partners:
            if t > p and auth[p] == auth[t]:
                out.append(
                    Diagnostic(
                        DiagnosticCode.CONFLICT_AMBIGUOUS.value,
                        f"Concepts '{ids[p]}' and '{ids[t]}' declare a conflict and have the "
                        f"same authority ({authority_name(int(auth[p]))}); a resolution keeps both.",
                        ids[p] + ".md",
                        None,
                        "warning",
                    )
                )
    return out
