"""One shard of a :class:`~okfast.distributed.RayResolver` (docs/spec.md §15).

A shard is a plain class (Ray makes it an actor; nothing here imports Ray):
it loads its bundles from their directories through its own node's cache,
keeps them fresh as a local resolver does (:class:`okfast.snapshots.Snapshots`,
docs/spec.md §5.10), and answers with arrays and small records — never a
native object, never a passage. Every reply names the snapshot it came from
(``version``), and a snapshot stays readable for later passage reads until
two newer ones replaced it.

Requests and replies cross as bytes of the C pickler (:meth:`Shard.call`),
and units by the number the driver gave them, each sent once: Ray's own
pickling of objects (``cloudpickle``) runs Python code for every object it
meets, and a unit carries its whole catalog entry.
"""

from __future__ import annotations

import contextlib
import pickle
import uuid
from collections import OrderedDict
from dataclasses import dataclass, fields
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from okfast import governance
from okfast.bundle import Bm25fQuery, Bm25fStats, QueryTerms
from okfast.catalog import Source, link_on_path
from okfast.distributed.rows import Explained, Read, Row, rows_of
from okfast.errors import BundleNotFoundError, OkfastError
from okfast.exclusions import iso
from okfast.governance import Declared
from okfast.model import Diagnostic, Exclusion
from okfast.paths import directory_key
from okfast.query import StalePolicy
from okfast.scoring import BM25FParams, fuse
from okfast.snapshots import CachedBundle, Snapshots

_V = TypeVar("_V")

#: A held snapshot and the version the driver knows it by.
Held = tuple[str, CachedBundle]

#: How many snapshots of one bundle a shard holds: the current one and the
#: one before, so a context keeps reading the passages it was given while
#: its shard refreshes once.
HELD = 2

#: How many let-go versions a shard remembers, to tell a passage of a
#: snapshot replaced twice from one of a shard restarted since (§15.3).
DROPPED = 4096

#: Why a passage of a unit the driver retired cannot be read (§15.3).
GONE = "no enabled source of the catalog names its directory now; its snapshot was let go"


@dataclass(frozen=True)
class Unit:
    """What a shard searches for one source: the source, the analyzer
    language, and which of the source's ``parts`` it holds — the concepts
    whose ids are in ``[lo, hi)`` (docs/spec.md §1.10, §15.5); ``root``,
    the catalog root its path is checked for links from (§5.10)."""

    source: Source
    language: str | None
    part: int = 0
    parts: int = 1
    lo: str | None = None
    hi: str | None = None
    root: str | None = None


@dataclass(frozen=True)
class Request:
    """One search, as every shard receives it (docs/spec.md §15.2).

    ``units`` are the numbers the driver gave them (:meth:`Shard.call`).
    ``stats[i]`` is what ``units[i]`` scores with: ``None`` for the weighted
    count, ``"own"`` for its bundle's own BM25F statistics (``grouped``),
    else statistics the driver summed — the catalog's, or a split source's
    over its parts. ``versions[i]`` is the snapshot ``units[i]`` must be
    searched in: ``None`` takes the current one (after the freshness
    check); with summed statistics, a ``(version, True)`` pair is only
    expected, and a shard whose current snapshot differs answers
    :class:`Stale` instead of searching.
    """

    text: str
    tag: str | None
    bm25f: BM25FParams | None
    stats: tuple[Bm25fStats | str | None, ...]
    stale_policy: StalePolicy
    now_us: int
    pin: tuple[str, str] | None
    #: every token of the searched sources' queries (the catalog's df keys)
    tokens: tuple[str, ...]
    units: tuple[int, ...]
    versions: tuple[tuple[str, bool] | None, ...]
    #: how many of each source's first passages to send the fields of
    #: (and explanations, with ``explain``): the page a caller reads first
    prefetch: int = 0
    explain: bool = False
    #: ``Scorer.FUSION``: each source's weighted-count and BM25F lists fused
    #: by reciprocal rank with ``rrf_k`` (docs/spec.md §12.10)
    fusion: bool = False
    rrf_k: int = 60


@dataclass(frozen=True)
class Stale:
    """The unit's snapshot is not the one its catalog statistics were summed
    for: its version now and its own statistics for the asked tokens."""

    version: str
    stats: Bm25fStats


@dataclass(frozen=True)
class Unavailable:
    """The unit's bundle could not be loaded (docs/spec.md §5.3)."""

    error: str


@dataclass(frozen=True)
class Found:
    """What one unit's search found, after the stale filter. The matches are
    listed in position order (the order the driver numbers them in: a split
    source's parts then simply follow each other) with their concept ids,
    ordinal and authority ranks and pinned mask (when pinning was asked);
    ``order`` and ``score`` give the unit's own list (score desc, then
    position: docs/spec.md §3.4); and what governance needs of the matched
    concepts — for a part of a split source only the authorities, as its
    declarations may name concepts of other parts (the driver resolves
    them: :meth:`Shard.declared`)."""

    version: str
    #: how many concepts the unit's snapshot holds
    size: int
    #: the matched positions, ascending
    pos: npt.NDArray[np.int32]
    #: the unit's list in its own order, as indices into ``pos``
    order: npt.NDArray[np.int32]
    #: the scores of the list, in its order
    score: npt.NDArray[np.uint32] | npt.NDArray[np.float64]
    #: the concept ids, joined by ``\n`` (never in an id: docs/spec.md §1.2),
    #: so they cross as one string rather than one object each
    ids: str
    ordinal: npt.NDArray[np.uint32]
    auth: npt.NDArray[np.uint8]
    pinned: npt.NDArray[np.bool_] | None
    raw_authority: dict[int, str | None]
    stale: list[Exclusion]
    diagnostics: tuple[Diagnostic, ...]
    stats: Bm25fStats | None
    superseded: dict[int, tuple[str, ...]]
    conflicts: dict[int, tuple[int, ...]]
    broken: tuple[tuple[int, str, str], ...]
    any_unknown: bool
    #: the fields (and explanation) of the list's first ``Request.prefetch``
    rows: list[tuple[Row, Explained | None]]
    #: ``Scorer.FUSION`` on a part of a split source: the part's weighted-count
    #: and BM25F lists (positions and scores, each in its order, before the
    #: stale filter), which the driver fuses by their ranks in the whole
    #: source's lists (docs/spec.md §12.10); ``order`` and ``score`` are then
    #: the part's own and unused
    counted_pos: npt.NDArray[np.int32] | None = None
    counted_score: npt.NDArray[np.uint32] | None = None
    ranked_pos: npt.NDArray[np.int32] | None = None
    ranked_score: npt.NDArray[np.float64] | None = None

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # numpy pickles an array through Python code, which costs more than
        # the rest of a reply; its dtype and raw bytes cross for nothing.
        return _found, tuple(
            _pack(getattr(self, f)) if f in _ARRAYS else getattr(self, f) for f in _FOUND
        )


def _pack(a: npt.NDArray[Any] | None) -> tuple[str, bytes] | None:
    return None if a is None else (a.dtype.str, a.tobytes())


def _found(*values: Any) -> Found:
    """A :class:`Found` from its ``__reduce__`` values (arrays read-only, on the bytes)."""
    args: list[Any] = [
        np.frombuffer(v[1], v[0]) if f in _ARRAYS and v is not None else v
        for f, v in zip(_FOUND, values, strict=True)
    ]
    return Found(*args)


_FOUND = tuple(f.name for f in fields(Found))
_ARRAYS = frozenset(
    {
        "pos",
        "order",
        "score",
        "ordinal",
        "auth",
        "pinned",
        "counted_pos",
        "counted_score",
        "ranked_pos",
        "ranked_score",
    }
)


class Shard:
    """The bundles of some units, loaded, kept fresh and searched."""

    def __init__(self, units: dict[int, Unit], max_staleness: float) -> None:
        self._bundles = Snapshots(max_staleness, guard=self._links)
        #: directory key → the catalog root its path is checked from
        self._roots: dict[str, str | None] = {}
        #: the units by the driver's numbers
        self._units = dict(units)
        #: bundle key → [(version, snapshot)], newest last
        self._held: dict[tuple[str, str | None, str | None, str | None], list[Held]] = {}
        #: the versions this shard let go of (the latest DROPPED), each with
        #: why: a version it never held was served by a shard that is gone
        #: (§15.3)
        self._dropped: OrderedDict[str, str] = OrderedDict()
        #: the units the driver retired (the latest DROPPED): number → source id
        self._retired: OrderedDict[int, str] = OrderedDict()
        for u in units.values():
            if u.source.directory is not None and u.source.directory.is_dir():
                # One bundle that cannot be loaded (unreadable) must not kill
                # the actor and every other source it serves: the search
                # reports that source unavailable, as the local resolver does.
                with contextlib.suppress(OSError, OkfastError):
                    self._current(u)

    def ready(self) -> bool:
        return True

    def call(self, request: bytes) -> bytes:
        """One request as the driver sends it: ``(units, retired, method,
        args)`` pickled, ``units`` the numbered units this shard may not have
        been sent yet, ``retired`` the numbers of units whose directory the
        catalog no longer names; the method's reply, pickled."""
        units, retired, method, args = pickle.loads(request)
        self._units.update(units)
        self._retire(retired)
        if method not in _METHODS:
            raise OkfastError(f"a shard has no request {method!r}")
        return pickle.dumps(getattr(self, method)(*args), protocol=pickle.HIGHEST_PROTOCOL)

    # -- snapshots -------------------------------------------------------------------

    @staticmethod
    def _key(u: Unit) -> tuple[str, str | None, str | None, str | None]:
        assert u.source.directory is not None
        return directory_key(u.source.directory), u.language, u.lo, u.hi

    def _current(self, u: Unit) -> tuple[str, CachedBundle]:
        """The unit's snapshot after the freshness check (docs/spec.md §5.10)."""
        if u.source.directory is None or not u.source.directory.is_dir():
            raise BundleNotFoundError(f"{u.source.directory} is not a directory")
        self._roots[self._key(u)[0]] = u.root
        snap = self._bundles.get(u.source, u.language, id_range=(u.lo, u.hi))
        held = self._held.setdefault(self._key(u), [])
        if held and held[-1][1] is snap:
            return held[-1]
        held.append((uuid.uuid4().hex, snap))
        self._drop(held[:-HELD], "its snapshot was replaced twice since this search")
        del held[:-HELD]
        return held[-1]

    def _drop(self, held: list[Held], why: str) -> None:
        for v, _ in held:
            self._dropped[v] = why
        while len(self._dropped) > DROPPED:
            self._dropped.popitem(last=False)

    def _retire(self, numbers: list[int]) -> None:
        """Let go of the units a catalog reload left without a source
        (docs/spec.md §15.4): once no unit left names a directory, its
        snapshots, mapped cache files and change watches go."""
        if not numbers:
            return
        for n in numbers:
            u = self._units.pop(n, None)
            if u is not None:
                self._retired[n] = u.source.id
        while len(self._retired) > DROPPED:
            self._retired.popitem(last=False)
        live = {
            directory_key(u.source.directory)
            for u in self._units.values()
            if u.source.directory is not None
        }
        self._bundles.keep(live)
        why = GONE
        for k in [k for k in self._held if k[0] not in live]:
            self._drop(self._held.pop(k), why)
            self._roots.pop(k[0], None)

    def _unit(self, n: int) -> Unit:
        u = self._units.get(n)
        if u is None:
            source = self._retired.get(n)
            raise OkfastError(
                f"source {source!r}: {GONE}"
                if source is not None
                else f"a shard was sent no unit {n}"
            )
        return u

    def holding(self) -> list[str]:
        """The directory keys this shard holds a snapshot of, sorted."""
        return sorted({k[0] for k in self._held})

    def _links(self, source: Source) -> tuple[str | None, tuple[int, int] | None]:
        """docs/spec.md §5.10 on this node, as a local resolver checks: a link
        put on the source's path is not followed, nor a directory swapped in
        between that check and the load."""
        assert source.directory is not None
        return link_on_path(self._roots.get(directory_key(source.directory)), source)

    def _at(self, u: Unit, version: str) -> CachedBundle:
        for v, snap in self._held.get(self._key(u), []):
            if v == version:
                return snap
        why = self._dropped.get(version)
        if why is not None:
            raise OkfastError(f"source {u.source.id!r}: {why}")
        raise OkfastError(
            f"source {u.source.id!r}: the shard that served this search is gone "
            "(it was restarted since), and its snapshot with it"
        )

    # -- the requests ----------------------------------------------------------------

    def stats(self, units: list[int], tokens: list[str]) -> list[tuple[str, Bm25fStats] | str]:
        """Per unit its current version and own statistics for ``tokens``,
        or the error that kept it from loading."""
        out: list[tuple[str, Bm25fStats] | str] = []
        for n in units:
            try:
                version, snap = self._current(self._unit(n))
            except (OSError, OkfastError) as e:
                out.append(str(e))
                continue
            out.append((version, snap.bundle.bm25f_stats(tokens)))
        return out

    def search(self, r: Request) -> list[Found | Stale | Unavailable]:
        out: list[Found | Stale | Unavailable] = []
        # docs/spec.md §5.10: one snapshot of a unit per search, however
        # many of its sources name one directory (grouped searches each).
        taken: dict[tuple[str, str | None, str | None, str | None], tuple[str, CachedBundle]] = {}
        for n, want, stats in zip(r.units, r.versions, r.stats, strict=True):
            u = self._unit(n)
            try:
                if want is None or want[1]:
                    k = self._key(u)
                    if k not in taken:
                        taken[k] = self._current(u)
                    version, snap = taken[k]
                else:
                    version, snap = want[0], self._at(u, want[0])
            except (OSError, OkfastError) as e:
                out.append(Unavailable(str(e)))
                continue
            if want is not None and want[1] and want[0] != version:
                out.append(Stale(version, snap.bundle.bm25f_stats(list(r.tokens))))
                continue
            out.append(self._search(r, u, stats, version, snap))
        return out

    def _search(
        self,
        r: Request,
        u: Unit,
        stats: Bm25fStats | str | None,
        version: str,
        snap: CachedBundle,
    ) -> Found:
        """docs/spec.md §5.4 for one source (or one part of it): search,
        apply the stale filter (as ``_Engine.search`` does)."""
        b = snap.bundle
        own: Bm25fStats | None = None
        used: Bm25fStats | None = None
        terms: QueryTerms | Bm25fQuery
        lists: tuple[Any, ...] = (None, None, None, None)
        if stats is None:
            terms = QueryTerms(r.text)
            pos, score = b.search_arrays(terms, tag=r.tag)
        else:
            assert r.bm25f is not None
            terms = b.bm25f_query(r.text, r.bm25f)
            own = b.bm25f_stats(terms.tokens) if isinstance(stats, str) else None
            used = own if own is not None else stats if isinstance(stats, Bm25fStats) else None
            assert used is not None
            pos, score = b.search_bm25f(terms, used, r.bm25f, tag=r.tag)
            if r.fusion:
                # docs/spec.md §12.10: the scorer's own lists, before the
                # stale filter, as the other scorers' are.
                counted, counted_score = b.search_arrays(QueryTerms(r.text), tag=r.tag)
                if u.parts > 1:
                    lists = (counted, counted_score, pos, score)
                pos, score = fuse(counted, pos, snap.ordinal, r.rrf_k)
        ids = b.concept_ids
        admit = r.stale_policy.admits_us(snap.stale_us[pos], r.now_us)
        stale: list[Exclusion] = []
        if not bool(np.all(admit)):
            for p in pos[~admit].tolist():
                when = iso(int(snap.stale_us[p]))
                stale.append(Exclusion(u.source.id, ids[p], "stale", f"stale_after {when}"))
            pos, score = pos[admit], score[admit]
        d = governance.declarations(b)
        whole = u.parts == 1
        here = set(pos.tolist()) if whole and not d.empty else set()
        first = pos[: r.prefetch].tolist()
        by_pos = np.argsort(pos, kind="stable")
        order = np.empty(len(pos), np.int32)
        order[by_pos] = np.arange(len(pos), dtype=np.int32)
        pos = pos[by_pos]
        auth = d.auth[pos]
        return Found(
            version=version,
            size=len(b),
            pos=pos,
            order=order,
            score=score,
            ids="\n".join(map(ids.__getitem__, pos.tolist())),
            ordinal=snap.ordinal[pos],
            auth=auth,
            pinned=None if r.pin is None else b.pinned(pos, *r.pin),
            raw_authority={
                int(p): b.authority_at(int(p)) for p in pos[auth == governance.UNKNOWN].tolist()
            },
            stale=stale,
            diagnostics=b.diagnostics,
            stats=own,
            superseded=_within(d.superseded, here),
            conflicts=_within(d.conflicts, here),
            broken=tuple(x for x in d.broken if x[0] in here),
            any_unknown=d.any_unknown,
            rows=rows_of(b, first, r.text, terms, used, r.bm25f, r.explain, r.fusion),
            counted_pos=lists[0],
            counted_score=lists[1],
            ranked_pos=lists[2],
            ranked_score=lists[3],
        )

    def declared(self, asks: list[tuple[int, str]]) -> list[list[Declared]]:
        """For each ``(unit, version)``: what its concepts declare, in position
        order (docs/spec.md §7), for the driver to resolve across the parts
        of a split source."""
        out = []
        for n, version in asks:
            b = self._at(self._unit(n), version).bundle
            ids = b.concept_ids
            out.append(
                [
                    Declared(
                        d.position,
                        ids[d.position],
                        tuple(d.supersedes),
                        tuple(d.superseded_by),
                        tuple(d.conflicts_with),
                    )
                    for d in b.governance()
                ]
            )
        return out

    def present(self, asks: list[tuple[int, str, list[str]]]) -> list[list[int | None]]:
        """For each ``(unit, version, names)``: each name's position in that
        snapshot, or ``None``."""
        out = []
        for n, version, names in asks:
            b = self._at(self._unit(n), version).bundle
            out.append([b.position(name) for name in names])
        return out

    def read(self, reads: list[Read]) -> list[list[tuple[Row, Explained | None]]]:
        """Each asked passage's fields and, when asked, its explanation parts."""
        out = []
        for rd in reads:
            b = self._at(self._unit(rd.unit), rd.version).bundle
            terms: QueryTerms | Bm25fQuery = QueryTerms(rd.text)
            if rd.stats is not None:
                assert rd.bm25f is not None
                terms = b.bm25f_query(rd.text, rd.bm25f)
            rows = rows_of(
                b, list(rd.positions), rd.text, terms, rd.stats, rd.bm25f, rd.explain, rd.fusion
            )
            out.append(rows)
        return out

    def body(self, unit: int, version: str, position: int) -> str:
        return self._at(self._unit(unit), version).bundle.body_at(position)


#: What :meth:`Shard.call` answers.
_METHODS = frozenset({"ready", "holding", "stats", "search", "read", "body", "declared", "present"})


def _within(m: dict[int, _V], here: set[int]) -> dict[int, _V]:
    """The entries of ``m`` for positions in ``here``, walking the smaller."""
    if len(here) < len(m):
        return {p: m[p] for p in here if p in m}
    return {p: v for p, v in m.items() if p in here}
