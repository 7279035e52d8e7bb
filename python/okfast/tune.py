"""Benchmark-driven tuning (docs/spec.md §14): search the ranking settings on
a team's own judged queries and propose a configuration only when it beats
the current settings on queries it was not chosen with.

The search is a grid when the space (pruned to what matters: BM25F
parameters only for BM25F and fusion, ``rrf_k`` only for fusion, strategy and
fairness quota only for catalogs of several knowledge sources) fits the
budget, else a seeded random search over it. Random search rather than a
model-based sampler: with a budget of a few hundred configurations over ~10
mostly independent dimensions it finds configurations as good as
optuna's TPE does (Bergstra & Bengio, JMLR 2012), is deterministic for a seed
on every machine and Python version without a dependency, and each trial is
independent, so a Ctrl-C leaves a consistent set of measured trials.

Acceptance is a deterministic k-fold over the judged queries in file order
(query ``i`` is in fold ``i mod k``): for each fold, a configuration is
chosen on the other folds and measured on the fold's queries. Every query is
thus measured once by a configuration chosen without it; the mean of those
measurements (the *holdout objective*) must exceed the current settings'
mean on the same queries, or nothing is proposed. The proposal is the
configuration chosen on all queries.

The choice is not simply the best mean. Among hundreds of configurations
measured on a few dozen queries, the best mean is mostly the luckiest: on the
shared judged sets, the best-on-half choice scored below the plain built-in
defaults on the other half in 72-87% of random splits (docs/scoring.md). So a
configuration that needs no tuning (an *anchor*: the current settings,
BM25F's built-in defaults) is kept unless the best leads it by more than
``standard_errors`` standard errors of their per-query differences: a
two-standard-error rule, in the spirit of Breiman's one-standard-error rule
for choosing among models that the data cannot tell apart.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import math
import os
import random
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from okfast import __version__
from okfast.catalog import Catalog
from okfast.errors import InvalidArgumentError, OkfastError
from okfast.evaluation import DEFAULT_DEPTH, evaluate
from okfast.model import Diagnostic
from okfast.qrels import JudgedQuery, JudgedSet
from okfast.query import Query, Strategy
from okfast.resolver import Resolver
from okfast.scoring import DEFAULT_BM25F, BM25FParams, Scorer, whole_at_least
from okfast.settings import ResolverDefaults, Settings

#: What ``okfast tune`` can maximise (docs/spec.md §14.1).
OBJECTIVES = ("ndcg@10", "mrr@10", "recall@10")

# The values searched (docs/spec.md §14.1). Each list holds the built-in
# default, so the defaults are always reachable.
K1 = (0.6, 0.9, 1.2, 1.5, 2.0, 2.5, 3.0)
SHORT_B = (0.0, 0.2, 0.5, 0.8, 1.0)
BODY_B = (0.3, 0.45, 0.6, 0.75, 0.9)
TITLE_WEIGHT = (1.0, 2.0, 3.0, 4.0, 6.0)
SIDE_WEIGHT = (1.0, 2.0, 3.0)
ANALYZERS = ((None, False), ("english", False), ("english", True))
RRF_K = (5, 10, 20, 40, 60, 100)
QUOTAS = (None, 1, 2, 3)

#: How many standard errors of the per-query differences the best
#: configuration must lead every anchor by to be chosen over it
#: (docs/spec.md §14.2); 0 chooses the best mean.
STANDARD_ERRORS = 2.0

#: ``progress(done, total, best_objective)`` after each trial.
TuneProgress = Callable[[int, int, float], object]


@dataclass(frozen=True)
class Trial:
    """One configuration measured on every judged query."""

    settings: Settings
    per_query: tuple[float, ...]

    @property
    def mean(self) -> float:
        return math.fsum(self.per_query) / len(self.per_query)

    def mean_over(self, queries: Sequence[int]) -> float:
        return math.fsum(self.per_query[i] for i in queries) / len(queries)


@dataclass(frozen=True)
class Fold:
    """One fold of the acceptance: the configuration chosen on the other
    folds (an index into the report's trials) and both objectives."""

    index: int
    queries: tuple[int, ...]
    chosen: int
    train: float
    holdout: float
    current_holdout: float


@dataclass(frozen=True)
class TuneReport:
    """What :func:`tune` found (docs/spec.md §14.2). ``trials[0]`` is the
    current settings."""

    objective: str
    qids: tuple[str, ...]
    trials: tuple[Trial, ...]
    folds: tuple[Fold, ...]
    holdout: float
    current: float
    proposed: int | None
    interrupted: bool
    seed: int
    budget: int
    space: int
    standard_errors: float = STANDARD_ERRORS
    provenance: dict[str, Any] = field(default_factory=dict)
    #: The current settings' evaluation diagnostics: the judged set's bad
    #: lines, unknown doc ids, sources that could not be searched.
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def deltas(self) -> dict[str, float]:
        """Per query, its holdout objective minus the current settings' (in
        judged-set order): what the folds' chosen configurations changed."""
        out = {}
        for f in self.folds:
            chosen, current = self.trials[f.chosen], self.trials[0]
            for i in f.queries:
                out[self.qids[i]] = chosen.per_query[i] - current.per_query[i]
        return {q: out[q] for q in self.qids if q in out}

    def proposal(self) -> Settings | None:
        """The proposed settings with their provenance, or ``None``."""
        if self.proposed is None:
            return None
        return replace(self.trials[self.proposed].settings, provenance=self.provenance)

    def to_json(self) -> dict[str, Any]:
        proposal = self.proposal()
        return {
            "objective": self.objective,
            "seed": self.seed,
            "budget": self.budget,
            "space": self.space,
            "standard_errors": self.standard_errors,
            "configurations": len(self.trials),
            "interrupted": self.interrupted,
            "current": {"settings": self.trials[0].settings.to_dict(), "objective": self.current},
            "holdout": self.holdout,
            "folds": [
                {
                    "fold": f.index + 1,
                    "queries": len(f.queries),
                    "chosen": label(self.trials[f.chosen].settings),
                    "train": f.train,
                    "holdout": f.holdout,
                    "current_holdout": f.current_holdout,
                }
                for f in self.folds
            ],
            "deltas": self.deltas,
            "proposed": None if proposal is None else proposal.to_dict(),
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }


def label(s: Settings) -> str:
    """A configuration in one line."""
    scorer = s.scorer or Scorer.WEIGHTED_COUNT
    parts = [f"scorer {scorer.value}", f"strategy {(s.strategy or Strategy.GROUPED).value}"]
    if s.fairness_quota is not None:
        parts.append(f"quota {s.fairness_quota}")
    if scorer is not Scorer.WEIGHTED_COUNT:
        p = s.bm25f or DEFAULT_BM25F
        w = "/".join(f"{x:g}" for x in p.weights)
        b = "/".join(f"{x:g}" for x in p.b)
        parts.append(f"k1 {p.k1:g} w {w} b {b} {p.language or 'no stemming'}")
        if p.stop_words:
            parts.append("stop words")
    if scorer is Scorer.FUSION:
        parts.append(f"rrf_k {s.rrf_k or 60}")
    return ", ".join(parts)


def current_of(resolver: Resolver) -> Settings:
    """The settings ``resolver`` runs with (docs/spec.md §14.1): its
    settings, with the defaults it was given over them, so that measured on
    ``resolver.configured(...)`` they rank as the resolver itself does (a
    ``Resolver(cat, default_scorer="bm25f")`` is tuned against BM25F, not
    against the weighted count its empty settings would give)."""
    s = resolver.settings
    own = ResolverDefaults(
        resolver.default_strategy,
        resolver.default_fairness_quota,
        resolver.default_scorer,
        resolver.default_bm25f,
        resolver.default_rrf_k,
    )
    if ResolverDefaults.of(s) == own:
        return s
    return replace(
        s,
        strategy=own.strategy,
        fairness_quota=own.fairness_quota,
        scorer=own.scorer,
        bm25f=own.bm25f,
        rrf_k=own.rrf_k,
    )


def _canonical(s: Settings) -> Settings:
    """Drop what a configuration's scorer and strategy never read, so two
    configurations that rank the same compare equal."""
    scorer = s.scorer or Scorer.WEIGHTED_COUNT
    grouped = (s.strategy or Strategy.GROUPED) is Strategy.GROUPED
    return replace(
        s,
        scorer=scorer,
        strategy=s.strategy or Strategy.GROUPED,
        bm25f=None if scorer is Scorer.WEIGHTED_COUNT else (s.bm25f or DEFAULT_BM25F),
        rrf_k=(s.rrf_k or 60) if scorer is Scorer.FUSION else None,
        fairness_quota=None if grouped else s.fairness_quota,
        provenance=None,
    )


def _space(multi_source: bool) -> list[list[Any]]:
    """The dimensions searched, each a list of values."""
    strategies = list(Strategy) if multi_source else [None]
    quotas = list(QUOTAS) if multi_source else [None]
    return [
        list(Scorer),
        strategies,
        quotas,
        list(K1),
        list(SHORT_B),
        list(SHORT_B),
        list(BODY_B),
        list(TITLE_WEIGHT),
        list(SIDE_WEIGHT),
        list(ANALYZERS),
        list(RRF_K),
    ]


def _settings_of(values: Sequence[Any], base: Settings) -> Settings:
    scorer, strategy, quota, k1, short_b, desc_b, body_b, tw, sw, (lang, stop), rrf_k = values
    params = BM25FParams(
        k1=k1,
        title_weight=tw,
        tags_weight=sw,
        description_weight=sw,
        title_b=short_b,
        tags_b=short_b,
        description_b=desc_b,
        body_b=body_b,
        language=lang,
        stop_words=stop,
    )
    return _canonical(
        replace(
            base,
            scorer=scorer,
            strategy=strategy or base.strategy,
            fairness_quota=quota,
            bm25f=params,
            rrf_k=rrf_k,
        )
    )


def anchors(current: Settings, *, multi_source: bool) -> list[Settings]:
    """The configurations that need no tuning, in order: the current
    settings, then BM25F's built-in defaults (the scorer for questions,
    docs/scoring.md) under the current strategy and, over several knowledge
    sources, under each strategy; distinct."""
    base = _canonical(current)
    # Keyed by their JSON: settings hold a mapping, so they do not hash.
    out: dict[str, Settings] = {base.to_json(): base}
    for strategy in [base.strategy, *(Strategy if multi_source else ())]:
        s = _canonical(replace(base, scorer=Scorer.BM25F, strategy=strategy, bm25f=None))
        out.setdefault(s.to_json(), s)
    return list(out.values())


def candidates(current: Settings, *, multi_source: bool, budget: int, seed: int) -> list[Settings]:
    """The configurations to measure, in order: the current settings, each
    scorer's built-in defaults, the other anchors (:func:`anchors`), then
    the grid (when the pruned space fits the budget) or a seeded random
    sample; distinct, at most ``budget``."""
    base = _canonical(current)
    out: dict[str, Settings] = {base.to_json(): base}

    def add(s: Settings) -> None:
        out.setdefault(s.to_json(), s)

    for scorer in Scorer:
        add(_canonical(replace(base, scorer=scorer, bm25f=None, rrf_k=None)))
    for s in anchors(current, multi_source=multi_source):
        add(s)
    dims = _space(multi_source)
    grid: dict[str, Settings] = {}  # the leading ones it holds count once (§14.2)
    if space_size(multi_source) <= budget:  # built only when it might fit
        grid = {s.to_json(): s for s in (_settings_of(v, base) for v in itertools.product(*dims))}
    if grid and len(out.keys() | grid.keys()) <= budget:
        out |= {k: s for k, s in grid.items() if k not in out}
    else:
        rng = random.Random(seed)
        tries = 0
        while len(out) < budget and tries < 50 * budget:
            tries += 1
            add(_settings_of([rng.choice(d) for d in dims], base))
    return list(out.values())[:budget]


def space_size(multi_source: bool) -> int:
    """How many distinct configurations the pruned space of :func:`_space`
    holds: the weighted count once; BM25F once per parameter combination;
    fusion once per combination and ``rrf_k``; times the strategies and
    quotas (one ``grouped``, which reads no quota) over several sources."""
    scorer, strategy, quota, *bm25f, rrf_k = _space(multi_source)
    combos = math.prod(len(d) for d in bm25f)
    scorers = (len(scorer) - 2) + combos * (1 + len(rrf_k))
    if not multi_source:
        return scorers
    return scorers * (1 + (len(strategy) - 1) * len(quota))


def tune(
    resolver: Resolver,
    judged: JudgedSet,
    *,
    current: Settings | None = None,
    objective: str = "ndcg@10",
    budget: int = 200,
    seed: int = 0,
    folds: int = 5,
    depth: int = DEFAULT_DEPTH,
    progress: TuneProgress | None = None,
    workers: int | None = None,
    standard_errors: float = STANDARD_ERRORS,
) -> TuneReport:
    """Measure up to ``budget`` configurations on ``judged`` with
    ``resolver`` and decide on held-out queries whether one beats
    ``current`` (default: the resolver's settings), a configuration chosen
    over an anchor only when it leads it by more than ``standard_errors``
    standard errors. A ``KeyboardInterrupt`` stops the search and keeps what
    was measured (``interrupted``)."""
    if objective not in OBJECTIVES:
        raise InvalidArgumentError(
            f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}"
        )
    # Whole numbers as everywhere (docs/spec.md §5.1): numpy's too, kept as int.
    budget = whole_at_least("budget", budget, 1)
    folds = whole_at_least("folds", folds, 2)
    seed = whole_at_least("seed", seed, None)
    if (
        isinstance(standard_errors, bool)
        or not isinstance(standard_errors, (int, float))
        or not _finite(standard_errors)
        or standard_errors < 0
    ):
        huge = isinstance(standard_errors, int) and not _finite(standard_errors)
        shown = "an integer past the largest float" if huge else repr(standard_errors)
        raise InvalidArgumentError(f"standard_errors must be a finite number >= 0, got {shown}")
    if workers is not None:
        workers = whole_at_least("workers", workers, 1)
    if len(judged.queries) < folds:
        raise InvalidArgumentError(
            f"{folds} folds need at least {folds} judged queries, got {len(judged.queries)}"
        )
    now = current if current is not None else current_of(resolver)
    knowledge = [s for s in resolver.catalog.sources if s.enabled and s.role == "knowledge"]
    multi = len(knowledge) > 1
    configs = candidates(now, multi_source=multi, budget=budget, seed=seed)
    trials: list[Trial] = []
    diagnostics: tuple[Diagnostic, ...] = ()
    interrupted = False
    best = -math.inf
    # Trials run on a few threads (the native searches release the GIL) and
    # are collected in candidate order, so the report does not depend on
    # which thread finished first.
    pool = ThreadPoolExecutor(max_workers=workers or min(4, os.cpu_count() or 1))
    futures: list[Any] = []
    # Every snapshot a trial reads (per source and analyzer) refreshed or
    # loaded once, before the first trial: all measure one corpus (§14.1).
    # One that cannot be loaded is reported by the trials' searches.
    resolver.refresh()
    analyzers = {(c.bm25f.language if c.bm25f else None, *c.languages.items()): c for c in configs}
    for trial in map(resolver.configured, analyzers.values()):
        for s in knowledge:
            with contextlib.suppress(OSError, OkfastError):
                trial.snapshot(s)
    with resolver.reusing_counts():
        try:
            futures = [
                pool.submit(_measure, resolver, judged, c, objective, depth) for c in configs
            ]
            for fut in futures:
                trial, found = fut.result()
                diagnostics = diagnostics if trials else found
                trials.append(trial)
                best = max(best, trials[-1].mean)
                if progress is not None:
                    progress(len(trials), len(configs), best)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    if interrupted:
        # The trials running when the interrupt came were waited for: they
        # were measured, so they are decided on too (docs/spec.md §14.1), in
        # candidate order with the others.
        for fut in futures[len(trials) :]:
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                trial, found = fut.result()
                diagnostics = diagnostics if trials else found
                trials.append(trial)
        if not trials:
            raise KeyboardInterrupt
    fixed = {s.to_json() for s in anchors(now, multi_source=multi)}
    report = _decide(
        judged.queries,
        trials,
        objective,
        folds,
        seed,
        budget,
        space_size(multi),
        interrupted,
        anchored=[i for i, t in enumerate(trials) if t.settings.to_json() in fixed],
        standard_errors=float(standard_errors),
    )
    return replace(report, diagnostics=diagnostics)


def _finite(x: float) -> bool:
    """Whether ``x`` is finite; an integer too large for a float is not."""
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def _measure(
    resolver: Resolver, judged: JudgedSet, config: Settings, objective: str, depth: int
) -> tuple[Trial, tuple[Diagnostic, ...]]:
    def make(q: JudgedQuery) -> Query:
        return Query(q.text, limit=depth)

    # The configuration's own defaults, never the resolver's: a choice it
    # leaves open (no fairness quota) is the built-in one, as when applied.
    # One search thread: the trials already run side by side.
    # The corpus tune() refreshed once: every trial measures the same one
    # (docs/spec.md §14.1).
    report = evaluate(
        resolver.configured(config), judged, query=make, depth=depth, workers=1, refresh=False
    )
    return Trial(config, tuple(q.metrics[objective] for q in report.per_query)), report.diagnostics


def _decide(
    queries: Sequence[JudgedQuery],
    trials: list[Trial],
    objective: str,
    k: int,
    seed: int,
    budget: int,
    space: int,
    interrupted: bool,
    *,
    anchored: Sequence[int],
    standard_errors: float,
) -> TuneReport:
    """The k-fold acceptance over measured trials (``trials[0]``: current;
    ``anchored``: the anchors' indices, :func:`_choose`)."""
    n = len(queries)
    out_folds = []
    for f in range(k):
        held = tuple(i for i in range(n) if i % k == f)
        train = [i for i in range(n) if i % k != f]
        chosen = _choose(trials, train, anchored, standard_errors)
        out_folds.append(
            Fold(
                f,
                held,
                chosen,
                trials[chosen].mean_over(train),
                trials[chosen].mean_over(held),
                trials[0].mean_over(held),
            )
        )
    by_query = [0.0] * n
    for fold in out_folds:
        for i in fold.queries:
            by_query[i] = trials[fold.chosen].per_query[i]
    holdout = math.fsum(by_query) / n
    final = _choose(trials, range(n), anchored, standard_errors)
    proposed = final if holdout > trials[0].mean and final != 0 else None
    return TuneReport(
        objective=objective,
        qids=tuple(q.qid for q in queries),
        trials=tuple(trials),
        folds=tuple(out_folds),
        holdout=holdout,
        current=trials[0].mean,
        proposed=proposed,
        interrupted=interrupted,
        seed=seed,
        budget=budget,
        space=space,
        standard_errors=standard_errors,
    )


def _choose(
    trials: Sequence[Trial], queries: Sequence[int], anchored: Sequence[int], z: float
) -> int:
    """The configuration chosen on ``queries``: the anchor with the best mean
    among those the best configuration does not lead by more than ``z``
    standard errors of the per-query differences; else the best. Ties go to
    the earlier trial, so the current settings win a tie."""
    best = max(range(len(trials)), key=lambda t: (trials[t].mean_over(queries), -t))
    floor = trials[0].mean_over(queries)
    for a in sorted(anchored, key=lambda t: (-trials[t].mean_over(queries), t)):
        if trials[a].mean_over(queries) < floor:
            # Never an anchor below the current settings (docs/spec.md
            # §14.2): a noisier one could pass the margin the best failed.
            break
        # The best itself leads by 0: an anchor that is the best is kept.
        lead, se = _lead(trials[best], trials[a], queries)
        if lead <= z * se:
            return a
    return best


def _lead(best: Trial, other: Trial, queries: Sequence[int]) -> tuple[float, float]:
    """The mean over ``queries`` of ``best``'s objective minus ``other``'s,
    and its standard error (the differences' sample standard deviation,
    n - 1, over the square root of n; 0 for one query)."""
    n = len(queries)
    diffs = [best.per_query[i] - other.per_query[i] for i in queries]
    m = math.fsum(diffs) / n
    if n < 2:
        return m, 0.0
    return m, math.sqrt(math.fsum((d - m) ** 2 for d in diffs) / (n - 1)) / math.sqrt(n)


def with_provenance(
    report: TuneReport,
    *,
    catalog: Path | Catalog | None,
    qrels: Path | JudgedSet | None,
    when: datetime | None = None,
) -> TuneReport:
    """The report with the provenance a proposed settings file carries
    (docs/spec.md §14.3): okfast's version, the date, digests of the judged
    queries and of the catalog (a set :meth:`JudgedSet.load` read or a
    :class:`Catalog` loaded from a file: of the bytes they read) and the
    objective before and after."""
    when = when or datetime.now(timezone.utc)
    prov: dict[str, Any] = {
        "okfast": __version__,
        "date": when.isoformat(timespec="seconds"),
        **(qrels.digests() if isinstance(qrels, JudgedSet) else {"qrels_sha256": _digest(qrels)}),
        "catalog_sha256": catalog.sha256 if isinstance(catalog, Catalog) else _digest(catalog),
        "objective": report.objective,
        "seed": report.seed,
        "budget": report.budget,
        "configurations": len(report.trials),
        "folds": len(report.folds),
        "standard_errors": report.standard_errors,
        "before": report.current,
        "holdout": report.holdout,
    }
    if report.proposed is not None:
        prov["after"] = report.trials[report.proposed].mean
    return replace(report, provenance=prov)


def _digest(path: Path | None) -> str | None:
    if path is None:
        return None
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


# -- applying and reverting (docs/spec.md §14.4) ------------------------------------------
