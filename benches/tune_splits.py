"""``okfast tune`` judged the way its users judge it (docs/scoring.md):
tune on half of a judged set's queries, measure the proposal (or the
current settings, when nothing is proposed) on the other half.

For each shared set, every configuration of one ``tune`` run (``--budget``,
seed 0) is measured on every query once; each random half/half split then
re-runs the acceptance (``_decide``, with its k folds) on the first half's
measurements only, for each margin of ``--margins``, and scores its choice
on the second half. A configuration's per-query objective does not depend on
which other queries are judged, so this is the same as running ``tune`` on
each half, without measuring the configurations again for every split.
Prints, per set and margin, the mean objective on the measuring halves and
how often it is below and above the BM25F defaults' (``merged``).

    python benches/tune_splits.py [--budget 500] [--splits 300] [--margins 0,1,2]

Needs ../shared (the corpora and their judged sets) and the eval extra.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
from dataclasses import replace

from bm25f_grid import SETS, SHARED
from okfast import Catalog, JudgedSet, Resolver, Scorer, Strategy
from okfast.tune import Trial, TuneReport, _canonical, _decide, anchors, tune


def _half(trials: tuple[Trial, ...], queries: list[int]) -> list[Trial]:
    """The trials as measured on ``queries`` only."""
    return [replace(t, per_query=tuple(t.per_query[i] for i in queries)) for t in trials]


def _accept(
    report: TuneReport, judged: JudgedSet, anchored: list[int], queries: list[int], z: float
) -> TuneReport:
    """The acceptance (5 folds) re-run on ``queries`` of ``report``'s
    measurements alone, with margin ``z``."""
    return _decide(
        [judged.queries[i] for i in queries],
        _half(report.trials, queries),
        report.objective,
        len(report.folds),
        0,
        report.budget,
        report.space,
        False,
        anchored=anchored,
        standard_errors=z,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=int, default=500)
    ap.add_argument("--splits", type=int, default=300)
    ap.add_argument("--margins", default="0,1,2")
    ap.add_argument("--folds", type=int, default=5)
    args = ap.parse_args()
    margins = [float(m) for m in args.margins.split(",")]
    corpora = SHARED / "corpora"
    print("| set | standard errors | tuned on half, measured on the other | below defaults "
          "| above defaults | 5-fold holdout, all queries |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for name, sources in SETS.items():
        doc = {"version": 1, "sources": sources}
        resolver = Resolver(
            Catalog.parse(json.dumps(doc), base_dir=corpora, root=corpora), max_staleness=math.inf
        )
        resolver.refresh()
        judged = JudgedSet.load(SHARED / "qrels" / f"{name}.jsonl")
        multi = len(sources) > 1
        report = tune(resolver, judged, budget=args.budget, seed=0, folds=args.folds)
        trials = report.trials
        current = trials[0].settings
        fixed = {a.to_json() for a in anchors(current, multi_source=multi)}
        anchored = [i for i, t in enumerate(trials) if t.settings.to_json() in fixed]
        # The BM25F defaults, `merged` over several sources (one source: any
        # strategy ranks alike, and the candidates keep the current one).
        merged = _canonical(
            replace(
                current,
                scorer=Scorer.BM25F,
                strategy=Strategy.MERGED if multi else current.strategy,
                bm25f=None,
            )
        )
        default = next(t for t in trials if t.settings == merged)
        n = len(judged.queries)
        for z in margins:
            rng = random.Random(7)
            got, dflt = [], []
            for _ in range(args.splits):
                order = list(range(n))
                rng.shuffle(order)
                tune_on, measure_on = sorted(order[: n // 2]), sorted(order[n // 2 :])
                chosen = trials[_accept(report, judged, anchored, tune_on, z).proposed or 0]
                got.append(math.fsum(chosen.per_query[i] for i in measure_on) / len(measure_on))
                dflt.append(math.fsum(default.per_query[i] for i in measure_on) / len(measure_on))
            below = sum(g < d - 1e-12 for g, d in zip(got, dflt, strict=True)) / len(got)
            above = sum(g > d + 1e-12 for g, d in zip(got, dflt, strict=True)) / len(got)
            holdout = _accept(report, judged, anchored, list(range(n)), z).holdout
            print(
                f"| {name} | {z:g} | {statistics.fmean(got):.3f} (defaults "
                f"{statistics.fmean(dflt):.3f}) | {below:.0%} | {above:.0%} | {holdout:.3f} |"
            )


if __name__ == "__main__":
    main()
