"""Resolution across sources (SPEC §5): one ordered list of passages from many bundles.

``Resolver`` picks the strategy (the query's, else its default) and hands the
query to one class per strategy. All four share :class:`_Engine` — source
selection, visibility, source dedup, searching, the stale filter, trimming and
diagnostics — and differ only in how the found passages are ordered; the
fused orderings run natively over arrays (``okfast._native.fused_order``).
"""

from __future__ import annotations

import contextlib
import copy
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

import numpy as np
import numpy.typing as npt

from okfast import _native, governance
from okfast.arguments import callable_of, flag_of, of_type
from okfast.bundle import Bm25fQuery, Bm25fStats, Bundle, Progress, QueryTerms, query_terms
from okfast.catalog import Catalog, CatalogView, Source
from okfast.count_memo import CountMemo
from okfast.cutoff import cut_depth, cuttable, settled
from okfast.errors import (
    BundleNotFoundError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    OkfastError,
)
from okfast.exclusions import Run, in_order, iso
from okfast.matches import Matches as _Matches
from okfast.matches import Scores
from okfast.matches import Scoring as _Scoring
from okfast.matches import concat as _concat
from okfast.matches import no_tokens as _no_tokens
from okfast.model import Diagnostic, DiagnosticCode, Exclusion
from okfast.passages import Context, ExplainInfo, PassageList, SourceSnapshot
from okfast.paths import directory_key
from okfast.query import Query, Strategy, Visibility, micros, queries_of, query_of
from okfast.scoring import BM25FParams, Scorer, fuse, real_of, scorer_of
from okfast.settings import ResolverDefaults, Settings, settings_for
from okfast.snapshots import CachedBundle, Snapshots, Taken, source_language

Clock = Callable[[], datetime]
#: An ordering's result: per passage its source index, position, score and
#: fused score (reciprocal rank only).
Ordered = tuple[
    npt.NDArray[np.uint32],
    npt.NDArray[np.int32],
    Scores,
    "npt.NDArray[np.float64] | None",
]


def _system_clock() -> datetime:
    return datetime.now(timezone.utc)


class _Engine(ABC):
    """The fused engine every strategy shares; subclasses supply the order."""

    strategy: Strategy
    dedup = True

    def __init__(self, resolver: Resolver) -> None:
        self.r = of_type("resolver", resolver, Resolver)

    # -- the steps every strategy takes -------------------------------------------

    def select(
        self, q: Query, view: CatalogView, diags: list[Diagnostic], excl: list[Exclusion]
    ) -> tuple[list[Source], int]:
        """SPEC §5.3: enabled knowledge sources of ``view`` (the catalog's
        sources and generation, read together) by priority desc then id, then
        visibility; and the catalog generation they are of."""
        catalog_sources, generation = view
        enabled = [s for s in catalog_sources if s.enabled and s.role == "knowledge"]
        self.r._bundles.follow(enabled, generation)  # let go of the sources gone (§5.10)
        enabled.sort(key=lambda s: (-s.priority, s.id))
        if q.permitted_source_ids is not None:
            allowed = set(q.permitted_source_ids)
            chosen = [s for s in enabled if s.id in allowed]
        else:
            vis: Visibility | None = q.visibility or self.r.default_visibility
            chosen = [s for s in enabled if vis(q.scope, s)] if vis is not None else enabled
        if len(chosen) < len(enabled):
            shown = {s.id for s in chosen}
            why = "not permitted" if q.permitted_source_ids is not None else "hidden by visibility"
            excl.extend(
                Exclusion(s.id, "", "not-visible", f"source {why} for this query")
                for s in enabled
                if s.id not in shown
            )
        if not chosen:
            why = (
                "all enabled knowledge sources are hidden by visibility"
                if enabled
                else "the catalog has no enabled knowledge source"
            )
            diags.append(
                Diagnostic(
                    DiagnosticCode.NO_ENABLED_SOURCES.value,
                    f"No sources to search: {why}.",
                    severity="warning",
                )
            )
        return chosen, generation

    def deduplicate(
        self, sources: list[Source], diags: list[Diagnostic], excl: list[Exclusion]
    ) -> list[Source]:
        """SPEC §5.5: one search per resolved directory; the first in selection order survives."""
        if not self.dedup:
            return sources
        seen: dict[str, Source] = {}
        out = []
        for s in sources:
            key = directory_key(s.directory) if s.directory is not None else f"\0{s.id}"
            first = seen.get(key)
            if first is None:
                seen[key] = s
                out.append(s)
                continue
            excl.append(Exclusion(s.id, "", "duplicate-directory", f"searched as '{first.id}'"))
            diags.append(
                Diagnostic(
                    DiagnosticCode.DUPLICATE_DIRECTORY.value,
                    f"Source '{s.id}' resolves to the same directory as '{first.id}' and was searched once, as '{first.id}'.",
                    source_id=s.id,
                    severity="warning",
                )
            )
        return out

    def search(
        self, q: Query, how: _Scoring, sources: list[Source], now_us: int, taken: Taken
    ) -> _Matches:
        f = _Matches([], [], [], [], [], [], [], False)
        loaded: list[tuple[Source, CachedBundle]] = []
        # Each source that could not be loaded, after how many loaded ones:
        # its error goes between their diagnostics, in source order (§5.6).
        failed: list[tuple[int, str, str]] = []
        for s in sources:
            try:
                if s.directory is None:
                    raise BundleNotFoundError(f"{s.directory} is not a directory")
                language = source_language(s, how.bm25f.language, self.r.settings)
                loaded.append((s, self.r._bundles.take(taken, s, language)))
            except (OSError, OkfastError) as e:
                failed.append((len(loaded), s.id, str(e)))
        depth = how.depth
        if how.scorer is not Scorer.BM25F or not all(cuttable(sn.bundle) for _, sn in loaded):
            depth = None
        queries: list[QueryTerms | Bm25fQuery] = [how.terms] * len(loaded)
        stats: list[Bm25fStats | None] = [None] * len(loaded)
        if how.scorer is not Scorer.WEIGHTED_COUNT:
            tokens = [snap.bundle.bm25f_query(q.text, how.bm25f) for _, snap in loaded]
            queries = list(tokens)
            stats = list(self.bm25f_stats([snap.bundle for _, snap in loaded], tokens))
        failed.reverse()
        for k, ((s, snap), query, st) in enumerate(zip(loaded, queries, stats, strict=True)):
            while failed and failed[-1][0] == k:
                f.unavailable(*failed.pop()[1:])
            f.any_searched = True
            b = snap.bundle
            f.diagnostics.extend(
                Diagnostic(d.code, d.message, d.path, s.id, d.severity) for d in b.diagnostics
            )
            score: Scores
            if st is not None:
                assert isinstance(query, Bm25fQuery)
                # One passage more than the cut: its score bounds every
                # passage beyond it (cutoff.settled).
                ask = None if depth is None else depth + 1
                pos, score = b.search_bm25f(query, st, how.bm25f, tag=q.tag, limit=ask)
                if how.scorer is Scorer.FUSION:
                    # docs/spec.md §12.10: the scorer's own lists, before the
                    # stale filter, as the other scorers' are.
                    counted, _ = self.r._counts(b, how.terms, q.tag)
                    pos, score = fuse(counted, pos, snap.ordinal, how.rrf_k)
            else:
                pos, score = self.r._counts(b, how.terms, q.tag)
            cut_at = None
            if depth is not None and len(pos) > depth:
                cut_at = float(score[depth])
                pos, score = pos[:depth], score[:depth]
            f.found_any |= len(pos) > 0
            admit = q.stale_policy.admits_us(snap.stale_us[pos], now_us)
            if not bool(np.all(admit)):
                ids = b.concept_ids
                for p in pos[~admit].tolist():
                    f.exclusions.append(
                        Exclusion(
                            s.id, ids[p], "stale", f"stale_after {iso(int(snap.stale_us[p]))}"
                        )
                    )
                pos, score = pos[admit], score[admit]
            k = len(f.searched)
            counting = how.terms if how.scorer is Scorer.FUSION else None
            f.searched.append(SourceSnapshot(s, b, query, st, counting))
            f.snaps.append(snap)
            f.cut.append(cut_at)
            f.src.append(np.full(len(pos), k, dtype=np.uint32))
            f.pos.append(pos)
            f.score.append(score)
        while failed:
            f.unavailable(*failed.pop()[1:])
        return f

    def bm25f_stats(self, bundles: list[Bundle], queries: list[Bm25fQuery]) -> list[Bm25fStats]:
        """The statistics each source is scored with (docs/spec.md §12.4): the
        catalog's — every searched source's summed, over the tokens of all
        their queries — so a passage's score does not depend on which source
        holds the other concepts. ``grouped`` overrides this with each
        source's own."""
        # In order of first appearance, deduplicated by hash (a list's `in`
        # made a query of n distinct tokens cost n²).
        tokens = list(dict.fromkeys(t for query in queries for t in query.tokens))
        total = Bm25fStats.sum([b.bm25f_stats(tokens) for b in bundles])
        return [total] * len(bundles)

    #: The passage sequence a context holds (a distributed resolver reads
    #: passages from its shards: docs/spec.md §15).
    passages: type[PassageList] = PassageList

    @abstractmethod
    def order(self, q: Query, f: _Matches, quota: int | None) -> Ordered:
        """The strategy's order over all found passages: (src, pos, score, fused)."""

    # -- the whole run -------------------------------------------------------------

    def run(self, q: Query | str, exclusions: bool = True) -> Context:
        q, exclusions = query_of(q), flag_of("exclusions", exclusions)
        now_us = micros(self.r.clock())
        quota = q.fairness_quota or self.r.default_fairness_quota
        # docs/spec.md §5.2: the cut first, when it may apply; whole lists
        # when it may not, or turned out to matter.
        cut = cut_depth(q, quota, exclusions)
        # Both passes read one catalog and one snapshot of each directory (§5.10).
        start: tuple[CatalogView, Taken] = (self.r.catalog.snapshot(), {})
        ctx = None if cut is None else self._run(q, exclusions, now_us, quota, cut, start)
        if ctx is None:
            ctx = self._run(q, exclusions, now_us, quota, None, start)
            assert ctx is not None
        return ctx

    def _run(
        self,
        q: Query,
        exclusions: bool,
        now_us: int,
        quota: int | None,
        depth: int | None,
        start: tuple[CatalogView, Taken],
    ) -> Context | None:
        diags: list[Diagnostic] = []
        excl: list[Exclusion] = []
        runs: list[Run] = []  # passages left out in bulk (docs/spec.md §5.8)
        view, taken = start
        selected, generation = self.select(q, view, diags, excl)
        sources = self.deduplicate(selected, diags, excl)
        how = _Scoring(
            scorer_of(q.scorer) if q.scorer is not None else self.r.default_scorer,
            query_terms(q.text),  # split once, for every source and passage
            q.bm25f or self.r.default_bm25f,
            q.rrf_k if q.rrf_k is not None else self.r.default_rrf_k,
            depth,
        )
        found = self.search(q, how, sources, now_us, taken)
        diags.extend(found.diagnostics)
        excl.extend(found.exclusions)
        src, pos, score, fused = self.order(q, found, quota)
        ordered_src, at = src, np.arange(len(pos))
        g = governance.govern(
            found.searched,
            src,
            pos,
            include_historical=q.include_historical,
            min_authority=q.min_authority,
        )
        diags.extend(g.diagnostics)
        excl.extend(g.exclusions)
        if not bool(g.keep.all()):
            src, pos, score, at = src[g.keep], pos[g.keep], score[g.keep], at[g.keep]
            fused = None if fused is None else fused[g.keep]
        pinned = None
        if q.pin_exact_title and len(pos):
            perm, pinned = governance.pin_order(found.searched, src, pos, q.text)
            src, pos, score, at = src[perm], pos[perm], score[perm], at[perm]
            fused = None if fused is None else fused[perm]
        if q.min_score is not None:
            keep = score >= q.min_score
            if exclusions:
                why = f"score below min_score {q.min_score}"
                runs.append(Run(src[~keep], pos[~keep], "not-relevant", why))
            src, pos, score, at = src[keep], pos[keep], score[keep], at[keep]
            fused = None if fused is None else fused[keep]
            pinned = None if pinned is None else pinned[keep]
        if q.limit is not None and len(pos) > q.limit:
            if exclusions:
                why = f"beyond limit {q.limit}"
                runs.append(Run(src[q.limit :], pos[q.limit :], "not-relevant", why))
            src, pos, score = src[: q.limit], pos[: q.limit], score[: q.limit]
            at = at[: q.limit]
            fused = None if fused is None else fused[: q.limit]
            pinned = None if pinned is None else pinned[: q.limit]
        if not settled(found.cut, ordered_src, at, score, q):
            return None
        untokened = _no_tokens(found, q.text) if len(pos) == 0 else None
        if untokened is not None:
            diags.append(untokened)
        elif len(pos) == 0 and found.any_searched:
            # Matches there were, all excluded: said so, not "none matched" (§5.6).
            message = (
                f"No passages remain for query '{q.text}': every match was excluded."
                if found.found_any
                else f"No passages matched query '{q.text}'."
            )
            diags.append(Diagnostic(DiagnosticCode.NO_MATCHES.value, message, severity="warning"))
        explain = None
        if q.explain:
            fused_quota = quota if self.strategy is not Strategy.GROUPED else None
            explain = ExplainInfo(self.strategy.value, fused_quota, pinned)
        passages = self.passages(found.searched, how.bm25f, src, pos, score, fused, now_us, explain)
        excl = in_order(excl, runs, found.searched) if exclusions else []
        return Context(q, generation, passages, tuple(diags), tuple(excl))


class GroupedResolver(_Engine):
    """``grouped``: each selected source's hits in SPEC §3.4 order, sources
    concatenated in selection order (priority desc, then id) — exactly
    ``Bundle.search`` on each source in turn. No source dedup, no fusion; the
    fairness quota is ignored."""

    strategy = Strategy.GROUPED
    dedup = False

    def bm25f_stats(self, bundles: list[Bundle], queries: list[Bm25fQuery]) -> list[Bm25fStats]:
        """Each source scored with its own statistics, as ``Bundle.search``
        scores it (docs/spec.md §12.4)."""
        return [b.bm25f_stats(q.tokens) for b, q in zip(bundles, queries, strict=True)]

    def order(self, q: Query, f: _Matches, quota: int | None) -> Ordered:
        src, pos, score = _concat(f)
        return src, pos, score, None


class _FusedResolver(_Engine):
    """Shared by the fused strategies: one native sort with the strategy's key."""

    def order(self, q: Query, f: _Matches, quota: int | None) -> Ordered:
        src, pos, score = _concat(f)
        if len(pos) == 0:
            return src, pos, score, None
        by_id = sorted(range(len(f.searched)), key=lambda k: f.searched[k].source.id)
        source_rank = np.empty(len(f.searched), np.uint32)
        source_rank[by_id] = np.arange(len(by_id), dtype=np.uint32)
        priority = np.array([e.source.priority for e in f.searched], np.int32)
        concept_rank = np.concatenate(
            [snap.ordinal[p] for snap, p in zip(f.snaps, f.pos, strict=True)]
        ).astype(np.uint32)
        list_rank = np.concatenate([np.arange(1, len(p) + 1, dtype=np.uint32) for p in f.pos])
        perm = _native.fused_order(
            self.strategy.value,
            score.astype(np.float64),
            priority[src],
            source_rank[src],
            concept_rank,
            list_rank,
            quota,
        )
        fused = None
        if self.strategy is Strategy.RECIPROCAL_RANK:
            k = q.rrf_k if q.rrf_k is not None else self.r.default_rrf_k
            fused = 1.0 / (k + list_rank[perm].astype(np.float64))
        return src[perm], pos[perm], score[perm], fused


class MergedResolver(_FusedResolver):
    """``merged``: every passage of every (deduplicated) source by score desc,
    then priority desc, source id, concept id; then the fairness reorder when
    a quota is set. A deduplicated source contributes neither passages nor
    diagnostics other than ``DuplicateDirectory``."""

    strategy = Strategy.MERGED


class PriorityWeightedResolver(_FusedResolver):
    """``priority_weighted``: by priority desc, then score desc, source id,
    concept id — a higher-priority source's passage is never after a
    lower-priority one's, whatever the scores (before a fairness reorder). A
    deduplicated source contributes neither passages nor diagnostics other
    than ``DuplicateDirectory``."""

    strategy = Strategy.PRIORITY_WEIGHTED


class ReciprocalRankResolver(_FusedResolver):
    """``reciprocal_rank``: each passage's ``fused_score`` is ``1/(rrf_k + r)``,
    ``r`` its 1-based rank in its own source's list (after the stale filter);
    order by fused score desc, priority desc, source id, concept id. ``score``
    keeps the raw value. A deduplicated source contributes neither passages
    nor diagnostics other than ``DuplicateDirectory``."""

    strategy = Strategy.RECIPROCAL_RANK


_CLASSES: dict[Strategy, type[_Engine]] = {
    c.strategy: c
    for c in (GroupedResolver, MergedResolver, PriorityWeightedResolver, ReciprocalRankResolver)
}


class Resolver:
    """Searches a catalog's sources and returns one ordered list (SPEC §5.2).

    With neither a query strategy nor ``default_strategy`` set, the behaviour
    is exactly ``grouped``. ``settings`` (a :class:`Settings` or the path of
    a settings file; by default the file the catalog names, when it exists)
    supply the defaults an argument leaves ``None`` (docs/spec.md §13);
    ``settings_diagnostics`` lists their problems. ``max_staleness`` (seconds) bounds how old a
    bundle snapshot may be before it is checked against the disk; 0 checks
    before every search. ``progress`` is passed to every
    :meth:`Bundle.load` (a source's first load).
    """

    def __init__(
        self,
        catalog: Catalog,
        *,
        settings: Settings | str | os.PathLike[str] | None = None,
        default_strategy: Strategy | str | None = None,
        default_fairness_quota: int | None = None,
        default_visibility: Visibility | None = None,
        clock: Clock | None = None,
        max_staleness: float = 1.0,
        progress: Progress | None = None,
        default_scorer: Scorer | str | None = None,
        default_bm25f: BM25FParams | None = None,
        default_rrf_k: int | None = None,
    ) -> None:
        if not isinstance(catalog, Catalog):
            # A path is a common slip: say how to get a catalog from one.
            hint = (
                " (Catalog.load(path) reads one)" if isinstance(catalog, str | os.PathLike) else ""
            )
            raise InvalidArgumentTypeError(
                f"catalog must be a Catalog, got {type(catalog).__name__}{hint}"
            )
        if settings is not None and not isinstance(settings, Settings | str | os.PathLike):
            raise InvalidArgumentTypeError(
                f"settings must be a Settings or a path, got {type(settings).__name__}"
            )
        self.settings, self.settings_diagnostics = settings_for(catalog, settings)
        # Any real number but a bool, numpy's and Fractions too (docs/spec.md §5.1, §5.2).
        staleness = real_of(max_staleness)
        if staleness is None:
            raise InvalidArgumentTypeError(
                f"max_staleness must be a number of seconds, got {max_staleness!r}"
            )
        if not staleness >= 0:  # NaN too
            raise InvalidArgumentError(f"max_staleness must be >= 0, got {max_staleness}")
        # Checked here, not at the first search, where a raw TypeError would
        # come from deep inside it (docs/spec.md §5.2).
        for name, given in (
            ("default_visibility", default_visibility),
            ("clock", clock),
            ("progress", progress),
        ):
            callable_of(name, given)
        self._set_defaults(
            ResolverDefaults.of(
                self.settings,
                default_strategy,
                default_fairness_quota,
                default_scorer,
                default_bm25f,
                default_rrf_k,
            )
        )
        self.catalog = catalog
        self.default_visibility = default_visibility
        self.clock: Clock = clock or _system_clock
        self._bundles = Snapshots(staleness, progress, guard=catalog.link_on_path)
        self._count_memo = CountMemo()

    def configured(
        self, settings: Settings, *, default_strategy: Strategy | str | None = None
    ) -> Resolver:
        """``Resolver(catalog, settings=..., default_strategy=...)`` with this
        resolver's visibility, clock and staleness, sharing its loaded snapshots;
        no default of this resolver's carries over (docs/spec.md §13.3)."""
        out = copy.copy(self)
        out.settings, out.settings_diagnostics = settings_for(self.catalog, settings)
        out._set_defaults(ResolverDefaults.of(out.settings, default_strategy))
        return out

    def _set_defaults(self, d: ResolverDefaults) -> None:
        self.default_strategy = d.strategy
        self.default_fairness_quota = d.fairness_quota
        self.default_scorer = d.scorer
        self.default_bm25f = d.bm25f
        self.default_rrf_k = d.rrf_k

    def search(self, query: Query | str, *, exclusions: bool = True) -> Context:
        """The context of ``query`` (a string ``s`` is ``Query(s)``).
        ``exclusions=False`` leaves the exclusion list empty (passages and
        diagnostics unchanged; the digest then covers no exclusions): for a
        caller that reads only the ranking, since with a ``limit`` the list
        names every match beyond it (docs/spec.md §5.2)."""
        q = query_of(query)
        strategy = Strategy(q.strategy) if q.strategy is not None else self.default_strategy
        return _CLASSES[strategy](self).run(q, exclusions)

    def search_many(
        self, queries: Sequence[Query | str], *, exclusions: bool = True
    ) -> list[Context]:
        """:meth:`search` of each of ``queries``, in order, with the same
        results (docs/spec.md §5.2): the queries run on a few threads, whose
        native searches release the GIL. Every query is checked before any
        runs."""
        qs = queries_of(queries)
        flag_of("exclusions", exclusions)
        if len(qs) < 2:
            return [self.search(q, exclusions=exclusions) for q in qs]
        with ThreadPoolExecutor(max_workers=min(len(qs), os.cpu_count() or 1)) as pool:
            return list(pool.map(lambda q: self.search(q, exclusions=exclusions), qs))

    @contextlib.contextmanager
    def reusing_counts(self) -> Iterator[None]:
        """Within this block, a source's weighted-count list for the same
        query terms and tag is computed once and reused (docs/spec.md §14.1):
        for running many configurations over the same queries, as ``okfast
        tune`` does; a nested block, or another thread's, keeps it open. A
        resolver ``configured()`` from this one shares its blocks."""
        with self._count_memo.block():
            yield

    def _counts(
        self, bundle: Bundle, terms: QueryTerms, tag: str | None
    ) -> tuple[npt.NDArray[np.int32], Scores]:
        return self._count_memo.counts(bundle, terms, tag)

    def snapshot(self, source: Source | str) -> Bundle:
        """The bundle snapshot a search reads for a knowledge source (loaded
        on first use and re-checked against the disk as searches do), analysed
        for the source's language or ``default_bm25f.language``: so a caller
        reads the very concepts a search ranked. Raises
        :class:`~okfast.errors.BundleNotFoundError` when its directory is not
        there, :class:`~okfast.errors.InvalidArgumentError` for an unknown
        source id, a memory source or a disabled one."""
        if not isinstance(source, Source | str):
            raise InvalidArgumentTypeError(
                f"source must be a Source or a source id, got {type(source).__name__}"
            )
        if isinstance(source, str):
            found = self.catalog.source(source)
            if found is None:
                raise InvalidArgumentError(f"no source {source!r} in the catalog")
            source = found
        elif source.directory != getattr(self.catalog.source(source.id), "directory", ...):
            # Only a directory the catalog names: its path was checked (§4.2).
            raise InvalidArgumentError(f"source {source.id!r} is not one of the catalog's sources")
        if source.role != "knowledge":
            # Memory is read only through the store, one scope at a time, and
            # never cached (docs/spec.md §6.3, §9.8): a snapshot of its tier
            # root would hold every scope's memory and outlive an erasure.
            raise InvalidArgumentError(
                f"source {source.id!r} is a {source.role} source: read memory through "
                "FileMemoryStore, one scope at a time"
            )
        if not source.enabled:
            raise InvalidArgumentError(f"source {source.id!r} is disabled")
        if source.directory is None or not source.directory.is_dir():
            raise BundleNotFoundError(
                f"source {source.id!r}: {source.directory} is not a directory"
            )
        language = source_language(source, self.default_bm25f.language, self.settings)
        return self._bundles.get(source, language).bundle

    def refresh(self) -> None:
        """Check every enabled knowledge source against the disk now, and
        let go of the others'."""
        sources, generation = self.catalog.snapshot()
        knowledge = [s for s in sources if s.enabled and s.role == "knowledge"]
        self._bundles.follow(knowledge, generation, again=True)
        self._bundles.refresh(
            knowledge, lambda s: source_language(s, self.default_bm25f.language, self.settings)
        )
