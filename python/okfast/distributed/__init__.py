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

import importlib
import os
import pickle
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from okfast.bundle import Bm25fQuery, Bm25fStats
from okfast.catalog import Catalog, Source
from okfast.distributed.remote import PAGE, RemotePassages, merge
from okfast.distributed.shard import Found, Request, Shard, Stale, Unavailable, Unit
from okfast.errors import InvalidArgumentError, MissingDependencyError, OkfastError
from okfast.governance import pin_keys
from okfast.model import Diagnostic
from okfast.passages import Context, SourceSnapshot
from okfast.paths import directory_key
from okfast.query import Query, Strategy, Visibility
from okfast.resolver import _CLASSES, Clock, Resolver, _Engine, _Matches, _Scoring
from okfast.scoring import BM25FParams, Scorer, language_of
from okfast.settings import Settings
from okfast.snapshots import CachedBundle, source_language

__all__ = ["RayResolver"]

#: How many of each source's first passages a search brings the fields of,
#: when the query sets no ``limit`` (with one: ``limit``, at most a page).
PREFETCH = 16


def _ray() -> Any:
    try:
        return importlib.import_module("ray")
    except ImportError as e:
        raise MissingDependencyError(
            f"RayResolver needs Ray ({e}): pip install 'okfast[ray]'"
        ) from None


class _Failed:
    """A shard that died or did not answer in time."""

    def __init__(self, why: str) -> None:
        self.why = why


class _Pool:
    """The shard actors: calls fanned out with a timeout, a failed actor
    replaced by a fresh one (docs/spec.md §15.4).

    A call crosses as the bytes of the C pickler (:meth:`Shard.call`), and
    names units by number: each unit is numbered once, and sent to a shard
    with every call until the shard has answered one."""

    def __init__(
        self, n: int, preload: list[list[Unit]], max_staleness: float, options: dict[str, Any]
    ) -> None:
        self.ray = _ray()
        self.timeout = 30.0
        self._mu = threading.Lock()  # the numbering; passage reads run beside searches
        self._numbers: dict[Unit, int] = {}
        #: per shard: the units it was given, and the numbers it has
        self._given: list[dict[int, Unit]] = [{} for _ in range(n)]
        self._known: list[set[int]] = [set() for _ in range(n)]
        self._preload = [{self.number(i, u): u for u in units} for i, units in enumerate(preload)]
        self._max_staleness = max_staleness
        # Task events feed Ray's dashboard and state API; recording them costs
        # each call time on both ends (docs/scale-out.md), so they are off
        # unless ``actor_options`` turn them on.
        options = {"enable_task_events": False, **options}
        self._actor = self.ray.remote(Shard).options(max_restarts=0, **options)
        self.actors = [self._start(i) for i in range(n)]

    def _start(self, i: int) -> Any:
        self._known[i] = set(self._preload[i])
        return self._actor.remote(self._preload[i], self._max_staleness)

    def replace(self, i: int) -> None:
        self.ray.kill(self.actors[i], no_restart=True)
        with self._mu:
            self.actors[i] = self._start(i)

    def number(self, i: int, u: Unit) -> int:
        """``u``'s number, which shard ``i`` is sent with its calls until it knows it."""
        with self._mu:
            n = self._numbers.setdefault(u, len(self._numbers))
            self._given[i][n] = u
            return n

    def call(self, calls: dict[int, tuple[str, tuple[Any, ...]]]) -> dict[int, Any]:
        """Each shard's reply to its call, or :class:`_Failed`; never waits
        longer than :attr:`timeout` seconds in all."""
        ray = self.ray
        if not calls:
            return {}
        deadline = time.monotonic() + self.timeout
        refs = {}
        sent: dict[int, list[int]] = {}
        for i, (m, a) in calls.items():
            with self._mu:
                new = {n: u for n, u in self._given[i].items() if n not in self._known[i]}
            sent[i] = list(new)
            blob = pickle.dumps((new, m, a), protocol=pickle.HIGHEST_PROTOCOL)
            refs[i] = self.actors[i].call.remote(blob)
        try:  # the common case in one call: every shard answers in time
            got = ray.get(list(refs.values()), timeout=self.timeout)
            return {i: self._answer(i, sent[i], r) for i, r in zip(refs, got, strict=True)}
        except ray.exceptions.RayTaskError as e:
            raise e.as_instanceof_cause() from None  # a bug, not a fault
        except ray.exceptions.RayError:
            pass  # a shard failed or is late: which one, below
        left = max(0.0, deadline - time.monotonic())  # the others may still answer in time
        ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=left)
        done = set(ready)
        out: dict[int, Any] = {}
        for i, ref in refs.items():
            if ref not in done:
                out[i] = _Failed(f"shard {i} did not answer within {self.timeout:g} s")
                self.replace(i)
                continue
            try:
                out[i] = self._answer(i, sent[i], ray.get(ref))
            except ray.exceptions.RayTaskError as e:
                raise e.as_instanceof_cause() from None  # a bug, not a fault
            except ray.exceptions.RayError as e:
                out[i] = _Failed(f"shard {i} failed ({type(e).__name__})")
                self.replace(i)
        return out

    def _answer(self, i: int, sent: list[int], reply: bytes) -> Any:
        with self._mu:
            self._known[i].update(sent)
        return pickle.loads(reply)

    def fanout(self, calls: dict[int, tuple[str, tuple[Any, ...]]]) -> dict[int, Any]:
        """:meth:`call` for reads after a search: a failure raises."""
        out = self.call(calls)
        for r in out.values():
            if isinstance(r, _Failed):
                raise OkfastError(f"passages could not be read: {r.why}")
        return out


class _Stats:
    """Each shard unit's BM25F statistics, per snapshot version: ``N``, field
    totals and the df of every token asked so far (docs/spec.md §12.4)."""

    def __init__(self) -> None:
        self.at: dict[tuple[int, str], tuple[str, int, list[int], dict[str, int]]] = {}

    def put(self, key: tuple[int, str], version: str, st: Bm25fStats) -> None:
        old = self.at.get(key)
        df = dict(old[3]) if old is not None and old[0] == version else {}
        df.update(st.df)
        self.at[key] = (version, st.n, list(st.totals), df)

    def knows(self, key: tuple[int, str], tokens: list[str]) -> bool:
        e = self.at.get(key)
        return e is not None and all(t in e[3] for t in tokens)

    def of(self, key: tuple[int, str], tokens: list[str]) -> Bm25fStats:
        _, n, totals, df = self.at[key]
        return Bm25fStats(n, totals, [(t, df[t]) for t in tokens])


class RayResolver:
    """:class:`~okfast.Resolver` over shards on a Ray cluster (docs/spec.md §15).

    ``shards`` actors (default: one per bundle directory, at most the
    cluster's CPUs) hold the catalog's enabled knowledge bundles, spread in
    directory order; ``split={source_id: k}`` serves a source from ``k``
    actors, each scoring its share of the positions. ``address`` is handed
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
        if timeout <= 0:
            raise InvalidArgumentError(f"timeout must be > 0, got {timeout}")
        ray = _ray()
        if not ray.is_initialized():
            ray.init(address=address)
        units = self._units(catalog, dict(split or {}))
        widest = max((len(parts) for parts in units.values()), default=1)
        if shards is None:
            cpus = int(ray.cluster_resources().get("CPU", 1))
            shards = max(widest, min(len(units), cpus), 1)
        if shards < widest:
            raise InvalidArgumentError(f"a source split {widest} ways needs {widest} shards")
        #: directory key → the shard of each part
        self._place: dict[str, list[int]] = {}
        preload: list[list[Unit]] = [[] for _ in range(shards)]
        turn = 0
        for key, parts in units.items():
            self._place[key] = [(turn + k) % shards for k in range(len(parts))]
            for k, u in enumerate(parts):
                preload[(turn + k) % shards].append(u)
            turn += len(parts)
        self._turn = turn
        self._pool = _Pool(shards, preload, max_staleness, dict(actor_options or {}))
        self._pool.timeout = 600.0  # the first load of every bundle
        self._pool.call({i: ("ready", ()) for i in range(shards)})
        self._pool.timeout = timeout
        self._stats = _Stats()
        self._engines = {st: _engine(c, self) for st, c in _CLASSES.items()}
        # One fan-out at a time: the statistics cache and the actors'
        # replacement are shared (ordering, governance and passage reads are not).
        self._lock = threading.Lock()

    def _units(self, catalog: Catalog, split: dict[str, int]) -> dict[str, list[Unit]]:
        lang = self.local.default_bm25f.language
        known = {s.id for s in catalog.sources}
        for sid, k in split.items():
            if sid not in known or isinstance(k, bool) or not isinstance(k, int) or k < 1:
                raise InvalidArgumentError(f"split: {sid!r}: {k!r} (a source id and a count >= 1)")
        out: dict[str, list[Unit]] = {}
        for s in sorted(catalog.sources, key=lambda s: s.id):
            if s.enabled and s.role == "knowledge" and s.directory is not None:
                key = directory_key(s.directory)
                k = max(split.get(s.id, 1), len(out.get(key, [])))
                language = source_language(s, lang, self.local.settings)
                out[key] = [Unit(s, language, part, k) for part in range(k)]
        return dict(sorted(out.items()))

    @property
    def catalog(self) -> Catalog:
        return self.local.catalog

    @property
    def timeout(self) -> float:
        """Seconds every round trip to the shards may take."""
        return self._pool.timeout

    @timeout.setter
    def timeout(self, seconds: float) -> None:
        if seconds <= 0:
            raise InvalidArgumentError(f"timeout must be > 0, got {seconds}")
        self._pool.timeout = seconds

    @property
    def shards(self) -> list[Any]:
        """The shard actors' handles, by shard number."""
        return list(self._pool.actors)

    def search(self, query: Query | str, *, exclusions: bool = True) -> Context:
        """``Resolver.search``, over the shards (docs/spec.md §5.2, §15)."""
        q = Query(query) if isinstance(query, str) else query
        strategy = Strategy(q.strategy) if q.strategy is not None else self.local.default_strategy
        return self._engines[strategy].run(q, exclusions)

    def search_many(
        self, queries: Sequence[Query | str], *, exclusions: bool = True
    ) -> list[Context]:
        """:meth:`search` of each of ``queries``, in order (``Resolver.search_many``'s
        results, docs/spec.md §5.2): one fan-out per query."""
        if isinstance(queries, str | Query):
            raise InvalidArgumentError(
                f"queries must be a sequence of queries, not one {type(queries).__name__}"
            )
        qs = [Query(q) if isinstance(q, str) else q for q in queries]
        return [self.search(q, exclusions=exclusions) for q in qs]

    def _where(self, s: Source) -> list[int]:
        assert s.directory is not None
        key = directory_key(s.directory)
        if key not in self._place:  # a source the catalog gained since: the next shard
            self._place[key] = [self._turn % len(self._pool.actors)]
            self._turn += 1
        return self._place[key]

    # -- the search step, fanned out ---------------------------------------------------

    def fan_out(
        self, engine: _Engine, q: Query, how: _Scoring, sources: list[Source], now_us: int
    ) -> _Matches:
        """``_Engine.search`` over the shards (docs/spec.md §15.2)."""
        with self._lock:
            return self._fan_out(engine, q, how, sources, now_us)

    def _fan_out(
        self, engine: _Engine, q: Query, how: _Scoring, sources: list[Source], now_us: int
    ) -> _Matches:
        bm25f = how.scorer is not Scorer.WEIGHTED_COUNT
        catalog_stats = bm25f and engine.strategy is not Strategy.GROUPED
        failed: dict[str, str] = {}
        plan: dict[str, list[tuple[int, Unit]]] = {}
        queries: dict[str, Bm25fQuery] = {}
        for s in sources:
            if s.directory is None:
                failed[s.id] = f"{s.directory} is not a directory"
                continue
            language = source_language(s, how.bm25f.language, self.local.settings)
            where = self._where(s)
            plan[s.id] = [(sh, Unit(s, language, k, len(where))) for k, sh in enumerate(where)]
            if bm25f:
                queries[s.id] = Bm25fQuery(q.text, language_of(language), how.bm25f.stop_words)
        pinned: dict[tuple[int, str], str] = {}  # versions a search must use
        replies: dict[str, list[Found]] = {}
        for _round in range(len(sources) + 2):
            live = [s for s in sources if s.id not in failed]
            tokens = list(dict.fromkeys(t for s in live for t in queries.get(s.id, _NONE).tokens))
            stats: Bm25fStats | str | None = "own" if bm25f else None
            if catalog_stats:
                self._gather(live, plan, tokens, pinned, failed)
                live = [s for s in sources if s.id not in failed]
                stats = Bm25fStats.sum([self._stats.of(_key(*plan[s.id][0]), tokens) for s in live])
            replies, retry = self._search(q, how, stats, tokens, live, plan, pinned, failed, now_us)
            if not (catalog_stats and retry):
                break
        return self._matches(q, how, sources, plan, queries, replies, failed, stats)

    def _gather(
        self,
        live: list[Source],
        plan: dict[str, list[tuple[int, Unit]]],
        tokens: list[str],
        pinned: dict[tuple[int, str], str],
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
                r = reply.why if isinstance(reply, _Failed) else reply[k]
                if isinstance(r, str):
                    failed.setdefault(sid, r)
                else:
                    self._stats.put(_key(sh, u), r[0], r[1])
                    pinned[_key(sh, u)] = r[0]

    def _search(
        self,
        q: Query,
        how: _Scoring,
        stats: Bm25fStats | str | None,
        tokens: list[str],
        live: list[Source],
        plan: dict[str, list[tuple[int, Unit]]],
        pinned: dict[tuple[int, str], str],
        failed: dict[str, str],
        now_us: int,
    ) -> tuple[dict[str, list[Found]], bool]:
        """One search round trip; ``True`` when the catalog statistics it
        was sent with turned out wrong (a source failed or had refreshed)."""
        per: dict[int, list[tuple[str, Unit]]] = {}
        for s in live:
            for sh, u in plan[s.id]:
                per.setdefault(sh, []).append((s.id, u))
        pin = pin_keys(q.text) if q.pin_exact_title else None

        def versions(sh: int, us: list[tuple[str, Unit]]) -> tuple[tuple[str, bool] | None, ...]:
            if not isinstance(stats, Bm25fStats):
                return tuple(None for _ in us)
            out = []
            for _, u in us:
                k = _key(sh, u)
                out.append((pinned[k], False) if k in pinned else (self._stats.at[k][0], True))
            return tuple(out)

        calls = {
            sh: (
                "search",
                (
                    Request(
                        q.text,
                        q.tag,
                        how.bm25f if stats is not None else None,
                        stats,
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
                r = Unavailable(reply.why) if isinstance(reply, _Failed) else reply[k]
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
        stats: Bm25fStats | str | None,
    ) -> _Matches:
        """What ``_Engine.search`` returns, from the shards' replies: sources
        unavailable first, then each searched one's diagnostics (as there)."""
        f = _Matches([], [], [], [], [], [], [], False)
        for s in sources:
            if s.id in failed:
                f.unavailable(s.id, failed[s.id])
        for s in sources:
            parts = replies.get(s.id)
            if parts is None:
                continue
            f.any_searched = True
            f.diagnostics.extend(
                Diagnostic(d.code, d.message, d.path, s.id, d.severity)
                for d in parts[0].diagnostics
            )
            for r in parts:
                f.exclusions.extend(r.stale)
            own = parts[0].stats
            st = own if own is not None else stats if isinstance(stats, Bm25fStats) else None
            versions = [
                (sh, self._pool.number(sh, u), r.version)
                for (sh, u), r in zip(plan[s.id], parts, strict=True)
            ]
            fusion = how.scorer is Scorer.FUSION
            read = (q.text, how.bm25f if st is not None else None, st, q.explain, fusion)
            rb, order, score, ordinal = merge(self._pool.fanout, versions, parts, read)
            k = len(f.searched)
            counting = how.terms if fusion else None
            f.searched.append(SourceSnapshot(s, rb, queries.get(s.id, how.terms), st, counting))
            f.snaps.append(CachedBundle(rb, np.zeros(0, np.int64), ordinal, 0.0))
            f.src.append(np.full(len(order), k, dtype=np.uint32))
            f.pos.append(order)
            f.score.append(score)
        return f


_NONE = Bm25fQuery("", None, False)


def _key(shard: int, u: Unit) -> tuple[int, str]:
    assert u.source.directory is not None
    return shard, f"{directory_key(u.source.directory)}\0{u.language}"


def _engine(base: type[_Engine], rr: RayResolver) -> _Engine:
    """The strategy's engine with its search step fanned out to the shards."""

    class Fanned(base):  # type: ignore[valid-type,misc]
        passages = RemotePassages

        def search(self, q: Query, how: _Scoring, sources: list[Source], now_us: int) -> _Matches:
            return rr.fan_out(self, q, how, sources, now_us)

    e: _Engine = Fanned(rr.local)
    return e
