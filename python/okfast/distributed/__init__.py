"""Resolution over shards on Ray, identical to one process (docs/spec.md §15).

``RayResolver(catalog, …).search(q)`` returns the very context
``Resolver(catalog, …).search(q)`` returns — passages, exclusions,
diagnostics, digest — with the catalog's bundles held by Ray actors
(:class:`~okfast.distributed.shard.Shard`), each loading its part from the
bundle's directory through its own node's cache.

Design: a seam in the resolver's engine, not a bundle proxy that forwards
every call. The engine's ``search`` step (select → dedup → **search** →
order → govern → pin → trim) is the only one replaced: it fans the query out
in one round trip and gets back, per source, ordered arrays — positions,
scores, concept ids, ordinal and authority ranks, the pinned mask, the
governance declarations of the matched concepts — never passages. Everything
after runs the local code unchanged on those arrays (the same
``_native.fused_order``, the same :mod:`okfast.governance`, the same digest),
each source standing as a :class:`~okfast.distributed.remote.RemoteBundle`
that knows its matches only. The fields of each source's first passages
come with the search; others are fetched when read, a page per round trip.
A proxy that forwarded the pipeline's per-concept reads to the shards would
cost a round trip per read, or per phase at best; this way a search is one
round trip (two when BM25F meets tokens it has not seen), and the code that
decides the order exists once.

BM25F under the fused strategies scores with the catalog's statistics
(docs/spec.md §12.4): the driver keeps each shard snapshot's ``N``, field
totals and the ``df`` of every token asked so far, gathered once; a search
names the snapshot each sum was made for, and a shard that refreshed since
answers with its new statistics instead, so the driver sums again and
searches once more, every shard pinned to the snapshot it reported. Scores
are thus always those of one process.

Ray is imported when a ``RayResolver`` is made, never by ``import okfast``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from okfast import governance
from okfast.arguments import flag_of, text_of
from okfast.bundle import MAX_PARTS, Bm25fQuery, Bm25fStats, split_ranges
from okfast.catalog import Catalog, Source
from okfast.distributed.parts import declarations
from okfast.distributed.pool import LOADING, Failed, Pool, ray_module, shard_actor, timeout_of
from okfast.distributed.remote import PAGE, RemotePassages, merge
from okfast.distributed.shard import Found, Request, Stale, Unavailable, Unit
from okfast.errors import InvalidArgumentError, InvalidArgumentTypeError
from okfast.governance import id_key, pin_keys
from okfast.matches import Matches as _Matches
from okfast.matches import Scoring as _Scoring
from okfast.model import Diagnostic
from okfast.passages import Context, SourceSnapshot
from okfast.paths import directory_key
from okfast.query import Query, Strategy, Visibility, queries_of, query_of
from okfast.resolver import _CLASSES, Clock, Resolver, _Engine
from okfast.scoring import BM25FParams, Scorer, count_of, language_of, whole_of
from okfast.settings import Settings
from okfast.snapshots import CachedBundle, Taken, source_language

__all__ = ["RayResolver"]

#: How many of each source's first passages a search brings the fields of,
#: when the query sets no ``limit`` (with one: ``limit``, at most a page).
PREFETCH = 16


class _Stats:
    """Each shard unit's BM25F statistics, per snapshot version: ``N``, field
    totals and the df of every token asked so far (docs/spec.md §12.4)."""

    def __init__(self) -> None:
        self.at: dict[UnitKey, tuple[str, int, list[int], dict[str, int]]] = {}

    def put(self, key: UnitKey, version: str, st: Bm25fStats) -> None:
        old = self.at.get(key)
        df = dict(old[3]) if old is not None and old[0] == version else {}
        df.update(st.df)
        self.at[key] = (version, st.n, list(st.totals), df)

    def knows(self, key: UnitKey, tokens: list[str]) -> bool:
        e = self.at.get(key)
        return e is not None and all(t in e[3] for t in tokens)

    def of(self, key: UnitKey, tokens: list[str]) -> Bm25fStats:
        _, n, totals, df = self.at[key]
        return Bm25fStats(n, totals, [(t, df[t]) for t in tokens])

    def keep(self, directories: set[str]) -> None:
        """Drop the statistics of units of every directory but ``directories``."""
        self.at = {k: v for k, v in self.at.items() if k[1] in directories}


class RayResolver:
    """:class:`~okfast.Resolver` over shards on a Ray cluster (docs/spec.md §15).

    ``shards`` actors (default: one per bundle directory, at most the
    cluster's CPUs) hold the catalog's enabled knowledge bundles, spread in
    directory order; ``split={source_id: k}`` serves a knowledge source from
    ``k`` actors, each loading only its share of the concepts (``k`` consecutive
    id ranges of nearly equal size, chosen when the resolver is made:
    docs/spec.md §15.5). ``address`` is handed
    to ``ray.init`` when Ray is not initialised yet. ``timeout`` (seconds)
    bounds every round trip: a shard that dies or does not answer in time
    leaves its sources ``SourceUnavailable`` in that context and is
    replaced. The other keywords are :class:`~okfast.Resolver`'s, ``settings``
    included (docs/spec.md §13). ``actor_options`` go to Ray's
    ``.options(…)`` of every shard actor (resources, scheduling; Ray's task
    events are off unless ``{"enable_task_events": True}`` turns them on).
    """

    def __init__(
        self,
        catalog: Catalog,
        *,
        settings: Settings | str | os.PathLike[str] | None = None,
        shards: int | None = None,
        split: Mapping[str, int] | None = None,
        address: str | None = None,
        timeout: float = 30.0,
        default_strategy: Strategy | str | None = None,
        default_fairness_quota: int | None = None,
        default_visibility: Visibility | None = None,
        clock: Clock | None = None,
        max_staleness: float = 1.0,
        default_scorer: Scorer | str | None = None,
        default_bm25f: BM25FParams | None = None,
        default_rrf_k: int | None = None,
        actor_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.local = Resolver(
            catalog,
            settings=settings,
            default_strategy=default_strategy,
            default_fairness_quota=default_fairness_quota,
            default_visibility=default_visibility,
            clock=clock,
            max_staleness=max_staleness,
            default_scorer=default_scorer,
            default_bm25f=default_bm25f,
            default_rrf_k=default_rrf_k,
        )
        timeout = timeout_of(timeout)
        # Checked before Ray starts, so a bad argument is okfast's error, not
        # a TypeError from deep in the cluster set-up (docs/spec.md §15.1).
        if shards is not None:
            shards = count_of("shards", shards)
        if address is not None:
            text_of("address", address)
        for name, given in (("split", split), ("actor_options", actor_options)):
            if given is not None and not isinstance(given, Mapping):
                raise InvalidArgumentTypeError(
                    f"{name} must be a mapping, got {type(given).__name__}"
                )
        if actor_options is not None and "max_restarts" in actor_options:
            raise InvalidArgumentError(
                "actor_options may not set max_restarts: a failed shard is replaced "
                "by okfast, never restarted by Ray (docs/spec.md §15.4)"
            )
        units = self._units(catalog, dict(split or {}))
        widest = max((len(parts) for parts in units.values()), default=1)
        if shards is not None and shards < widest:
            raise InvalidArgumentError(f"a source split {widest} ways needs {widest} shards")
        ray = ray_module()
        shard_actor(ray, dict(actor_options or {}))  # Ray's check, before Ray starts
        if not ray.is_initialized():
            ray.init(address=address)
        if shards is None:
            cpus = int(ray.cluster_resources().get("CPU", 1))
            shards = max(widest, min(len(units), cpus), 1)
        #: directory key → the shard of each part
        self._place: dict[str, list[int]] = {}
        #: directory key → the id range of each part
        self._ranges = {key: [(u.lo, u.hi) for u in parts] for key, parts in units.items()}
        #: a split source's declarations, per its parts' snapshot versions
        self._declared: dict[tuple[str, tuple[str, ...]], governance.Declarations] = {}
        preload: list[list[Unit]] = [[] for _ in range(shards)]
        turn = 0
        for key, parts in units.items():
            self._place[key] = [(turn + k) % shards for k in range(len(parts))]
            for k, u in enumerate(parts):
                preload[(turn + k) % shards].append(u)
            turn += len(parts)
        self._turn = turn
        self._pool = Pool(shards, preload, max_staleness, dict(actor_options or {}))
        self._pool.timeout = max(LOADING, timeout)  # the first load of every bundle
        self._pool.call({i: ("ready", ()) for i in range(shards)})
        self._pool.timeout = timeout
        self._stats = _Stats()
        #: the catalog generation and the pool's unit count last followed
        self._followed = (-1, -1)
        self._live: set[str] = set()
        self._engines = {st: _engine(c, self) for st, c in _CLASSES.items()}
        # One fan-out at a time: the statistics cache and the actors'
        # replacement are shared (ordering, governance and passage reads are not).
        self._lock = threading.Lock()

    def _units(self, catalog: Catalog, split: dict[str, int]) -> dict[str, list[Unit]]:
        lang = self.local.default_bm25f.language
        roles = {s.id: s.role for s in catalog.sources}
        enabled = {s.id for s in catalog.sources if s.enabled}
        for sid, given in split.items():
            k = whole_of(given)
            if sid not in roles or k is None or not 1 <= k <= MAX_PARTS:
                raise InvalidArgumentError(
                    f"split: {sid!r}: {given!r} (a source id and a count from 1 to {MAX_PARTS})"
                )
            split[sid] = k
            # No shard serves a disabled source: its split would be ignored.
            if sid not in enabled:
                raise InvalidArgumentError(
                    f"split: {sid!r} is disabled; the shards serve enabled sources "
                    "only (docs/spec.md §15.1)"
                )
            # A resolver never searches memory (docs/spec.md §5.3), so no shard
            # holds a memory source: a split of one would be ignored, silently.
            if roles[sid] != "knowledge":
                raise InvalidArgumentError(
                    f"split: {sid!r} is a {roles[sid]} source; the shards serve "
                    "knowledge sources only (docs/spec.md §15.1)"
                )
        out: dict[str, list[Unit]] = {}
        for s in sorted(catalog.sources, key=lambda s: s.id):
            if s.enabled and s.role == "knowledge" and s.directory is not None:
                key = directory_key(s.directory)
                k = max(split.get(s.id, 1), len(out.get(key, [])))
                language = source_language(s, lang, self.local.settings)
                ranges: list[tuple[str | None, str | None]] = [(None, None)]
                if k > 1:
                    ranges = split_ranges(s.directory, k)
                root = catalog.resolved_root
                out[key] = [
                    Unit(s, language, part, k, lo, hi, root) for part, (lo, hi) in enumerate(ranges)
                ]
        return dict(sorted(out.items()))

    @property
    def catalog(self) -> Catalog:
        return self.local.catalog

    @property
    def default_scorer(self) -> Scorer:
        """The scorer of a query that names none (the local resolver's)."""
        return self.local.default_scorer

    @property
    def default_bm25f(self) -> BM25FParams:
        """The BM25F parameters of a query that gives none (the local resolver's)."""
        return self.local.default_bm25f

    @property
    def timeout(self) -> float:
        """Seconds every round trip to the shards may take."""
        return self._pool.timeout

    @timeout.setter
    def timeout(self, seconds: float) -> None:
        self._pool.timeout = timeout_of(seconds)

    @property
    def shards(self) -> list[Any]:
        """The shard actors' handles, by shard number."""
        return list(self._pool.actors)

    def search(self, query: Query | str, *, exclusions: bool = True) -> Context:
        """``Resolver.search``, over the shards (docs/spec.md §5.2, §15)."""
        q = query_of(query)
        strategy = Strategy(q.strategy) if q.strategy is not None else self.local.default_strategy
        return self._engines[strategy].run(q, exclusions)

    def search_many(
        self, queries: Sequence[Query | str], *, exclusions: bool = True
    ) -> list[Context]:
        """:meth:`search` of each of ``queries``, in order (``Resolver.search_many``'s
        results, docs/spec.md §5.2): one fan-out per query."""
        qs = queries_of(queries)
        flag_of("exclusions", exclusions)
        return [self.search(q, exclusions=exclusions) for q in qs]

    def _where(self, s: Source) -> list[int]:
        assert s.directory is not None
        key = directory_key(s.directory)
        if key not in self._place:  # a source the catalog gained since: the next shard
            self._place[key] = [self._turn % len(self._pool.actors)]
            self._ranges[key] = [(None, None)]
            self._turn += 1
        return self._place[key]

    # -- the search step, fanned out ---------------------------------------------------

    def fan_out(
        self, engine: _Engine, q: Query, how: _Scoring, sources: list[Source], now_us: int
    ) -> _Matches:
        """``_Engine.search`` over the shards (docs/spec.md §15.2)."""
        with self._lock:
            found = self._fan_out(engine, q, how, sources, now_us)
            # After the search, not before: a search that read the catalog
            # before a reload may have named a source the reload removed
            # (docs/spec.md §15.4).
            self._follow()
            return found

    def _follow(self) -> None:
        """Let the shards go of every directory no enabled knowledge source
        of the catalog names now, as a local resolver's snapshots do
        (docs/spec.md §5.10, §15.4)."""
        sources, generation = self.local.catalog.snapshot()
        now = (generation, self._pool.numbered)
        if now == self._followed:
            return  # the same catalog, and no unit numbered since: nothing to let go
        if generation != self._followed[0]:
            self._live = {
                directory_key(s.directory)
                for s in sources
                if s.enabled and s.role == "knowledge" and s.directory is not None
            }
            self._stats.keep(self._live)
        self._followed = now
        told = self._pool.retire(self._live)
        if told:
            # Told now, not with each shard's next search: a shard that
            # serves no other source may not be asked again for long.
            self._pool.call({i: ("ready", ()) for i in told})

    def _fan_out(
        self, engine: _Engine, q: Query, how: _Scoring, sources: list[Source], now_us: int
    ) -> _Matches:
        bm25f = how.scorer is not Scorer.WEIGHTED_COUNT
        catalog_stats = bm25f and engine.strategy is not Strategy.GROUPED
        failed: dict[str, str] = {}
        plan: dict[str, list[tuple[int, Unit]]] = {}
        queries: dict[str, Bm25fQuery] = {}
        root = self.local.catalog.resolved_root
        for s in sources:
            if s.directory is None:
                failed[s.id] = f"{s.directory} is not a directory"
                continue
            # docs/spec.md §5.10: as a local resolver's snapshots refuse it.
            refused = self.local.catalog.link_on_path(s)[0]
            if refused is not None:
                failed[s.id] = refused
                continue
            language = source_language(s, how.bm25f.language, self.local.settings)
            where = self._where(s)
            ranges = self._ranges[directory_key(s.directory)]
            plan[s.id] = [
                (sh, Unit(s, language, k, len(where), *ranges[k], root))
                for k, sh in enumerate(where)
            ]
            if bm25f:
                queries[s.id] = Bm25fQuery(q.text, language_of(language), how.bm25f.stop_words)
        pinned: dict[UnitKey, str] = {}  # versions a search must use
        replies: dict[str, list[Found]] = {}
        summed: dict[str, Bm25fStats] = {}
        for _round in range(len(sources) + 2):
            live = [s for s in sources if s.id not in failed]
            tokens = list(dict.fromkeys(t for s in live for t in queries.get(s.id, _NONE).tokens))
            # Statistics the driver sums (docs/spec.md §12.4, §15.5): the
            # catalog's, and a split source's own over its parts.
            gathered = [s for s in live if catalog_stats or (bm25f and len(plan[s.id]) > 1)]
            summed = {}
            if gathered:
                self._gather(gathered, plan, tokens, pinned, failed)
                live = [s for s in sources if s.id not in failed]
                of = self._stats.of
                if catalog_stats:
                    every = [of(_key(sh, u), tokens) for s in live for sh, u in plan[s.id]]
                    total = Bm25fStats.sum(every)
                    summed = {s.id: total for s in live}
                else:
                    for s in gathered:
                        if s.id not in failed:
                            own = queries[s.id].tokens
                            parts = [of(_key(sh, u), own) for sh, u in plan[s.id]]
                            summed[s.id] = Bm25fStats.sum(parts)
            replies, retry = self._search(
                q, how, bm25f, summed, tokens, live, plan, pinned, failed, now_us
            )
            if not (summed and retry):
                break
        return self._matches(q, how, sources, plan, queries, replies, failed, summed)

    def _gather(
        self,
        live: list[Source],
        plan: dict[str, list[tuple[int, Unit]]],
        tokens: list[str],
        pinned: dict[UnitKey, str],
        failed: dict[str, str],
    ) -> None:
        """Statistics of the units whose cached ones miss a token (docs/spec.md §12.4)."""
        ask: dict[int, list[tuple[str, Unit]]] = {}
        for s in live:
            for sh, u in plan[s.id]:
                if not self._stats.knows(_key(sh, u), tokens):
                    ask.setdefault(sh, []).append((s.id, u))
        if not ask:
            return
        number = self._pool.number
        calls = {sh: ("stats", ([number(sh, u) for _, u in us], tokens)) for sh, us in ask.items()}
        for sh, reply in self._pool.call(calls).items():
            for k, (sid, u) in enumerate(ask[sh]):
                r = reply.why if isinstance(reply, Failed) else reply[k]
                if isinstance(r, str):
                    failed.setdefault(sid, r)
                else:
                    self._stats.put(_key(sh, u), r[0], r[1])
                    pinned[_key(sh, u)] = r[0]

    def _search(
        self,
        q: Query,
        how: _Scoring,
        bm25f: bool,
        summed: dict[str, Bm25fStats],
        tokens: list[str],
        live: list[Source],
        plan: dict[str, list[tuple[int, Unit]]],
        pinned: dict[UnitKey, str],
        failed: dict[str, str],
        now_us: int,
    ) -> tuple[dict[str, list[Found]], bool]:
        """One search round trip; ``True`` when the summed statistics it was
        sent with turned out wrong (a source failed or had refreshed)."""
        per: dict[int, list[tuple[str, Unit]]] = {}
        for s in live:
            for sh, u in plan[s.id]:
                per.setdefault(sh, []).append((s.id, u))
        pin = pin_keys(q.text) if q.pin_exact_title else None

        def versions(sh: int, us: list[tuple[str, Unit]]) -> tuple[tuple[str, bool] | None, ...]:
            out: list[tuple[str, bool] | None] = []
            for sid, u in us:
                k = _key(sh, u)
                if sid not in summed:
                    out.append(None)
                elif k in pinned:
                    out.append((pinned[k], False))
                else:
                    out.append((self._stats.at[k][0], True))
            return tuple(out)

        own = "own" if bm25f else None
        calls = {
            sh: (
                "search",
                (
                    Request(
                        q.text,
                        q.tag,
                        how.bm25f if bm25f else None,
                        tuple(summed.get(sid, own) for sid, _ in us),
                        q.stale_policy,
                        now_us,
                        pin,
                        tuple(tokens),
                        tuple(self._pool.number(sh, u) for _, u in us),
                        versions(sh, us),
                        min(q.limit, PAGE) if q.limit is not None else PREFETCH,
                        q.explain,
                        how.scorer is Scorer.FUSION,
                        how.rrf_k,
                    ),
                ),
            )
            for sh, us in per.items()
        }
        found: dict[str, list[tuple[int, Found]]] = {s.id: [] for s in live}
        retry = False
        for sh, reply in self._pool.call(calls).items():
            for k, (sid, u) in enumerate(per[sh]):
                r = Unavailable(reply.why) if isinstance(reply, Failed) else reply[k]
                if isinstance(r, Unavailable):
                    failed.setdefault(sid, r.error)
                    retry = True
                elif isinstance(r, Stale):
                    self._stats.put(_key(sh, u), r.version, r.stats)
                    pinned[_key(sh, u)] = r.version
                    retry = True
                else:
                    pinned[_key(sh, u)] = r.version
                    found[sid].append((u.part, r))
        out = {sid: [r for _, r in sorted(fs, key=lambda x: x[0])] for sid, fs in found.items()}
        return {sid: fs for sid, fs in out.items() if sid not in failed}, retry

    def _matches(
        self,
        q: Query,
        how: _Scoring,
        sources: list[Source],
        plan: dict[str, list[tuple[int, Unit]]],
        queries: dict[str, Bm25fQuery],
        replies: dict[str, list[Found]],
        failed: dict[str, str],
        summed: dict[str, Bm25fStats],
    ) -> _Matches:
        """What ``_Engine.search`` returns, from the shards' replies: each
        source's unavailability or diagnostics, in source order (as there,
        docs/spec.md §5.6)."""
        split = {sid: parts for sid, parts in replies.items() if len(parts) > 1}
        declared = declarations(self._pool, self._declared, split, plan, failed) if split else {}
        f = _Matches([], [], [], [], [], [], [], False)
        fusion = how.scorer is Scorer.FUSION
        for s in sources:
            if s.id in failed:
                f.unavailable(s.id, failed[s.id])
                continue
            parts = replies.get(s.id)
            if parts is None:
                continue
            f.any_searched = True
            # A split source's parts each report their own files' diagnostics;
            # merged by path they are the whole bundle's (docs/spec.md §1.10).
            diagnostics = [d for r in parts for d in r.diagnostics]
            if len(parts) > 1:
                diagnostics.sort(key=lambda d: id_key(d.path or ""))
            f.diagnostics.extend(
                Diagnostic(d.code, d.message, d.path, s.id, d.severity) for d in diagnostics
            )
            for r in parts:
                f.exclusions.extend(r.stale)
                # As _Engine.search's: a passage before the stale filter.
                f.found_any |= bool(r.stale)
            st = summed.get(s.id, parts[0].stats)
            versions = [
                (sh, self._pool.number(sh, u), r.version)
                for (sh, u), r in zip(plan[s.id], parts, strict=True)
            ]
            read = (q.text, how.bm25f if st is not None else None, st, q.explain, fusion)
            rb, order, score, ordinal = merge(
                self._pool.fanout,
                versions,
                parts,
                read,
                declared.get(s.id),
                how.rrf_k if fusion else None,
            )
            k = len(f.searched)
            counting = how.terms if fusion else None
            f.searched.append(SourceSnapshot(s, rb, queries.get(s.id, how.terms), st, counting))
            f.snaps.append(CachedBundle(rb, np.zeros(0, np.int64), ordinal, 0.0))
            f.src.append(np.full(len(order), k, dtype=np.uint32))
            f.pos.append(order)
            f.score.append(score)
            f.found_any |= len(order) > 0
        return f


_NONE = Bm25fQuery("", None, False)


#: A unit's place in the statistics cache: its shard, directory, language and range.
UnitKey = tuple[int, str, str | None, str | None, str | None]


def _key(shard: int, u: Unit) -> UnitKey:
    assert u.source.directory is not None
    return shard, directory_key(u.source.directory), u.language, u.lo, u.hi


def _engine(base: type[_Engine], rr: RayResolver) -> _Engine:
    """The strategy's engine with its search step fanned out to the shards."""

    class Fanned(base):  # type: ignore[valid-type,misc]
        passages = RemotePassages

        def search(
            self, q: Query, how: _Scoring, sources: list[Source], now_us: int, taken: Taken
        ) -> _Matches:
            # The shards keep their own versions (docs/spec.md §15.2): the
            # local snapshots a search takes are not theirs.
            return rr.fan_out(self, q, how, sources, now_us)

    e: _Engine = Fanned(rr.local)
    return e
