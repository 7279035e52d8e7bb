"""One shard of a :class:`~okfast.distributed.RayResolver` (docs/spec.md §15).

A shard is a plain class (Ray makes it an actor; nothing here imports Ray):
it loads its bundles from their directories through its own node's cache,
keeps them fresh as a local resolver does (:class:`okfast.snapshots.Snapshots`,
docs/spec.md §5.10), and answers with arrays and small records — never a
native object, never a passage. Every reply names the snapshot it came from
(``version``), and a snapshot stays readable for later passage reads until
two newer ones replaced it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from okfast import governance
from okfast.bundle import Bm25fQuery, Bm25fStats, Bundle, QueryTerms
from okfast.catalog import Source
from okfast.errors import BundleNotFoundError, OkfastError
from okfast.exclusions import iso
from okfast.model import Diagnostic, Exclusion
from okfast.paths import directory_key
from okfast.query import StalePolicy
from okfast.scoring import BM25FParams, fuse
from okfast.snapshots import CachedBundle, Snapshots

#: How many snapshots of one bundle a shard holds: the current one and the
#: one before, so a context keeps reading the passages it was given while
#: its shard refreshes once.
HELD = 2


@dataclass(frozen=True)
class Unit:
    """What a shard searches for one source: the source, the analyzer
    language, and which of ``parts`` equal position ranges it serves."""

    source: Source
    language: str | None
    part: int = 0
    parts: int = 1


@dataclass(frozen=True)
class Request:
    """One search, as every shard receives it (docs/spec.md §15.2).

    ``stats`` is ``None`` for the weighted count, ``"own"`` for a source's
    own BM25F statistics (``grouped``), else the catalog's. ``versions[i]``
    is the snapshot ``units[i]`` must be searched in: ``None`` takes the
    current one (after the freshness check); with catalog statistics, a
    ``(version, True)`` pair is only expected, and a shard whose current
    snapshot differs answers :class:`Stale` instead of searching.
    """

    text: str
    tag: str | None
    bm25f: BM25FParams | None
    stats: Bm25fStats | str | None
    stale_policy: StalePolicy
    now_us: int
    pin: tuple[str, str] | None
    #: every token of the searched sources' queries (the catalog's df keys)
    tokens: tuple[str, ...]
    units: tuple[Unit, ...]
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
    """What one unit's search found, in its own order (score desc, id), after
    the stale filter: positions, scores, concept ids, ordinal and authority
    ranks, the pinned mask (when pinning was asked), and what governance
    needs of the matched concepts."""

    version: str
    pos: npt.NDArray[np.int32]
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
    #: the fields (and explanation) of the first ``Request.prefetch`` passages
    rows: list[tuple[Fields, Explained | None]]


@dataclass(frozen=True)
class Fields:
    """What a passage shows of a concept (the attributes
    :func:`okfast.model.passage_from_fields` reads)."""

    concept_id: str
    title: str | None
    excerpt: str
    path: str
    type: str | None
    tags: list[str]
    description: str | None
    trust_tier: str
    status: str
    stale_after_us: int | None
    authority: str | None


@dataclass(frozen=True)
class TermFields:
    term: str
    title: bool
    tags_desc: bool
    body: bool


@dataclass(frozen=True)
class FieldPart:
    field: str
    tf: int
    length: int
    weighted_tf: float
    contribution: float


@dataclass(frozen=True)
class TermPart:
    token: str
    idf: float
    weighted_tf: float
    score: float
    fields: list[FieldPart]


#: An explanation's parts: BM25F's per token and the weighted count's per
#: term, each when that scorer ranked the passage.
Explained = tuple["list[TermPart] | None", "list[TermFields] | None"]


@dataclass(frozen=True)
class Read:
    """Which passages of one unit to read, and how their excerpt and
    explanation are made."""

    unit: Unit
    version: str
    positions: tuple[int, ...]
    text: str
    bm25f: BM25FParams | None
    stats: Bm25fStats | None
    explain: bool
    fusion: bool = False


class Shard:
    """The bundles of some units, loaded, kept fresh and searched."""

    def __init__(self, units: list[Unit], max_staleness: float) -> None:
        self._bundles = Snapshots(max_staleness)
        #: bundle key → [(version, snapshot)], newest last
        self._held: dict[str, list[tuple[str, CachedBundle]]] = {}
        for u in units:
            if u.source.directory is not None and u.source.directory.is_dir():
                self._current(u)

    def ready(self) -> bool:
        return True

    # -- snapshots -------------------------------------------------------------------

    @staticmethod
    def _key(u: Unit) -> str:
        assert u.source.directory is not None
        return f"{directory_key(u.source.directory)}\0{u.language}"

    def _current(self, u: Unit) -> tuple[str, CachedBundle]:
        """The unit's snapshot after the freshness check (docs/spec.md §5.10)."""
        if u.source.directory is None or not u.source.directory.is_dir():
            raise BundleNotFoundError(f"{u.source.directory} is not a directory")
        snap = self._bundles.get(u.source, u.language)
        held = self._held.setdefault(self._key(u), [])
        if held and held[-1][1] is snap:
            return held[-1]
        held.append((uuid.uuid4().hex, snap))
        del held[:-HELD]
        return held[-1]

    def _at(self, u: Unit, version: str) -> CachedBundle:
        for v, snap in self._held.get(self._key(u), []):
            if v == version:
                return snap
        raise OkfastError(
            f"source {u.source.id!r}: its snapshot was replaced twice since this search"
        )

    # -- the requests ----------------------------------------------------------------

    def stats(self, units: list[Unit], tokens: list[str]) -> list[tuple[str, Bm25fStats] | str]:
        """Per unit its current version and own statistics for ``tokens``,
        or the error that kept it from loading."""
        out: list[tuple[str, Bm25fStats] | str] = []
        for u in units:
            try:
                version, snap = self._current(u)
            except (OSError, OkfastError) as e:
                out.append(str(e))
                continue
            out.append((version, snap.bundle.bm25f_stats(tokens)))
        return out

    def search(self, r: Request) -> list[Found | Stale | Unavailable]:
        out: list[Found | Stale | Unavailable] = []
        for u, want in zip(r.units, r.versions, strict=True):
            try:
                if want is None or want[1]:
                    version, snap = self._current(u)
                else:
                    version, snap = want[0], self._at(u, want[0])
            except (OSError, OkfastError) as e:
                out.append(Unavailable(str(e)))
                continue
            if want is not None and want[1] and want[0] != version:
                out.append(Stale(version, snap.bundle.bm25f_stats(list(r.tokens))))
                continue
            out.append(self._search(r, u, version, snap))
        return out

    def _search(self, r: Request, u: Unit, version: str, snap: CachedBundle) -> Found:
        """docs/spec.md §5.4 for one source: search, keep this part's
        positions, apply the stale filter (as ``_Engine.search`` does)."""
        b = snap.bundle
        own: Bm25fStats | None = None
        used: Bm25fStats | None = None
        terms: QueryTerms | Bm25fQuery
        if r.stats is None:
            terms = QueryTerms(r.text)
            pos, score = b.search_arrays(terms, tag=r.tag)
        else:
            assert r.bm25f is not None
            terms = b.bm25f_query(r.text, r.bm25f)
            own = b.bm25f_stats(terms.tokens) if isinstance(r.stats, str) else None
            used = own if own is not None else r.stats if isinstance(r.stats, Bm25fStats) else None
            assert used is not None
            pos, score = b.search_bm25f(terms, used, r.bm25f, tag=r.tag)
            if r.fusion:
                # docs/spec.md §12.10: the scorer's own lists, before the
                # stale filter, as the other scorers' are.
                counted, _ = b.search_arrays(QueryTerms(r.text), tag=r.tag)
                pos, score = fuse(counted, pos, snap.ordinal, r.rrf_k)
        if u.parts > 1:
            n = len(b)
            lo, hi = u.part * n // u.parts, (u.part + 1) * n // u.parts
            mine = (pos >= lo) & (pos < hi)
            pos, score = pos[mine], score[mine]
        ids = b.concept_ids
        admit = r.stale_policy.admits_us(snap.stale_us[pos], r.now_us)
        stale: list[Exclusion] = []
        if not bool(np.all(admit)):
            for p in pos[~admit].tolist():
                when = iso(int(snap.stale_us[p]))
                stale.append(Exclusion(u.source.id, ids[p], "stale", f"stale_after {when}"))
            pos, score = pos[admit], score[admit]
        d = governance.declarations(b)
        here = set(pos.tolist()) if not d.empty else set()
        auth = d.auth[pos]
        return Found(
            version=version,
            pos=pos,
            score=score,
            ids="\n".join(map(ids.__getitem__, pos.tolist())),
            ordinal=snap.ordinal[pos],
            auth=auth,
            pinned=None if r.pin is None else b.pinned(pos, *r.pin),
            raw_authority={
                int(p): b.authority_at(int(p)) for p in pos[auth == governance.UNKNOWN].tolist()
            },
            stale=stale,
            diagnostics=b.diagnostics if u.part == 0 else (),
            stats=own,
            superseded={p: v for p, v in d.superseded.items() if p in here},
            conflicts={p: v for p, v in d.conflicts.items() if p in here},
            broken=tuple(x for x in d.broken if x[0] in here),
            any_unknown=d.any_unknown,
            rows=_rows(
                b, pos[: r.prefetch].tolist(), r.text, terms, used, r.bm25f, r.explain, r.fusion
            ),
        )

    def read(self, reads: list[Read]) -> list[list[tuple[Fields, Explained | None]]]:
        """Each asked passage's fields and, when asked, its explanation parts."""
        out = []
        for rd in reads:
            b = self._at(rd.unit, rd.version).bundle
            terms: QueryTerms | Bm25fQuery = QueryTerms(rd.text)
            if rd.stats is not None:
                assert rd.bm25f is not None
                terms = b.bm25f_query(rd.text, rd.bm25f)
            rows = _rows(
                b, list(rd.positions), rd.text, terms, rd.stats, rd.bm25f, rd.explain, rd.fusion
            )
            out.append(rows)
        return out

    def body(self, unit: Unit, version: str, position: int) -> str:
        return self._at(unit, version).bundle.body_at(position)


def _rows(
    b: Bundle,
    positions: list[int],
    text: str,
    terms: QueryTerms | Bm25fQuery,
    stats: Bm25fStats | None,
    bm25f: BM25FParams | None,
    explain: bool,
    fusion: bool,
) -> list[tuple[Fields, Explained | None]]:
    """What passages show of ``positions``, with their explanations when asked."""
    rows: list[tuple[Fields, Explained | None]] = []
    for p in positions:
        f = b.passage_fields(p, terms)
        fields = Fields(
            f.concept_id,
            f.title,
            f.excerpt,
            f.path,
            f.type,
            list(f.tags),
            f.description,
            f.trust_tier,
            f.status,
            f.stale_after_us,
            f.authority,
        )
        rows.append(
            (fields, _explain(b, p, text, terms, stats, bm25f, fusion) if explain else None)
        )
    return rows


def _explain(
    b: Bundle,
    p: int,
    text: str,
    terms: QueryTerms | Bm25fQuery,
    stats: Bm25fStats | None,
    bm25f: BM25FParams | None,
    fusion: bool,
) -> Explained:
    """One passage's explanation parts (docs/spec.md §5.8, §12.5): the BM25F
    parts and the weighted count's term matches, each when its scorer ranked."""
    if isinstance(terms, QueryTerms):
        return None, _matches(b, p, terms)
    assert stats is not None and bm25f is not None
    parts = [
        TermPart(
            t.token,
            t.idf,
            t.weighted_tf,
            t.score,
            [FieldPart(f.field, f.tf, f.length, f.weighted_tf, f.contribution) for f in t.fields],
        )
        for t in b.explain_bm25f(p, terms, stats, bm25f)
    ]
    return parts, _matches(b, p, QueryTerms(text)) if fusion else None


def _matches(b: Bundle, p: int, terms: QueryTerms) -> list[TermFields]:
    return [TermFields(t.term, t.title, t.tags_desc, t.body) for t in b.explain_at(p, terms)]
