"""``okfast eval``: measure how a catalog ranks a set of judged queries
(docs/spec.md §11.5), optionally against a baseline configuration.

Exit codes (docs/spec.md §10.4): 0 done (whatever the figures); 2 bad usage, a
bad catalog, an unreadable judged set or run file, no usable judged query, or
the ``okfast[eval]`` extra missing (an :class:`~okfast.errors.OkfastError`,
shown by ``okfast.cli.main`` as one line).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from okfast.comparison import TESTS
from okfast.errors import InvalidArgumentError
from okfast.evaluation import DEFAULT_DEPTH, METRICS, EvalReport, diagnostic_line, evaluate
from okfast.paths import LoadCatalog, catalog_options, option_file, writable
from okfast.qrels import JudgedQuery, JudgedSet
from okfast.query import Query, Strategy
from okfast.resolver import Resolver
from okfast.scoring import MAX_COUNT, Scorer
from okfast.settings import Settings, command_settings
from okfast.terminal import one_line

PrintJson = Callable[[object], None]
WholeNumber = Callable[[str], int]

#: How many of the lowest-scoring queries the table lists.
WORST = 5


def _label(config: Settings) -> str:
    # With neither set the resolver's defaults apply: grouped, the weighted count (§5.2).
    text = f"strategy {(config.strategy or Strategy.GROUPED).value}"
    text += f", scorer {(config.scorer or Scorer.WEIGHTED_COUNT).value}"
    quota = config.fairness_quota
    return text + (f", fairness quota {quota}" if quota is not None else "")


def _run(args: argparse.Namespace, load: LoadCatalog, out: PrintJson) -> int:
    catalog = load(args)
    if catalog is None:
        return 2
    if args.run_out is not None:
        # Found before the evaluation, not after it (as tune's --out, §14.3).
        writable("the run file", args.run_out)
    judged = JudgedSet.load(args.qrels, args.queries)
    current = command_settings(catalog, args.settings)
    config = current.with_choices(
        strategy=args.strategy, fairness_quota=args.fairness_quota, scorer=args.scorer
    )
    has_baseline = args.baseline is not None or any(
        x is not None
        for x in (args.baseline_strategy, args.baseline_fairness_quota, args.baseline_scorer)
    )
    # A settings file as --settings is: its diagnostics, UnknownSource
    # included, printed under its name (docs/spec.md §13.4).
    base = config if args.baseline is None else command_settings(catalog, args.baseline)
    base = base.with_choices(
        strategy=args.baseline_strategy,
        fairness_quota=args.baseline_fairness_quota,
        scorer=args.baseline_scorer,
    )
    # One snapshot per source for the whole run: every query, and the
    # baseline, are measured on the same bundles (§11.2).
    resolver = Resolver(catalog, settings=config, max_staleness=math.inf)

    def make(q: JudgedQuery) -> Query:
        return Query(q.text, limit=args.limit)

    baseline: EvalReport | None = None
    if has_baseline:
        baseline = evaluate(resolver.configured(base), judged, query=make, depth=args.limit)
    # The baseline's snapshots, not refreshed between the two (§11.5).
    report = evaluate(
        resolver,
        judged,
        query=make,
        depth=args.limit,
        baseline=baseline,
        refresh=baseline is None,
    )
    if args.run_out is not None:
        try:
            # Missing folders are made, as for tune's --out and --plot.
            Path(args.run_out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.run_out).write_text(report.trec_run(), encoding="utf-8")
        except OSError as e:
            raise InvalidArgumentError(
                f"cannot write the run file {args.run_out}: {e.strerror or e}"
            ) from None
    label = _label(config)
    base_label = _label(base) if has_baseline else None
    if args.json:
        doc = report.to_json()
        doc["configuration"] = label
        if doc["comparison"] is not None:
            doc["comparison"]["baseline"]["configuration"] = base_label
        out(doc)
    else:
        _print_table(report, label, base_label)
    return 0


def _print_table(report: EvalReport, config: str, base_config: str | None) -> None:
    n = len(report.per_query)
    print(f"{n} judged queries, {config}, depth {report.depth}")
    cmp = report.comparison
    lat = report.latency_ms
    if cmp is None:
        print(f"{'metric':<11} {'value':>7}")
        for m in METRICS:
            print(f"{m:<11} {report.metrics[m]:>7.4f}")
        print(f"{'latency':<11} p50 {lat.p50:.2f} ms, p95 {lat.p95:.2f} ms")
    else:
        b = cmp.baseline
        print(f"baseline: {base_config}")
        print(
            f"{'metric':<11} {'value':>7} {'baseline':>8} {'delta':>8} "
            f"{'t-test p':>9} {'wilcoxon p':>10}"
        )
        for m in METRICS:
            t = cmp.tests[m]
            print(
                f"{m:<11} {report.metrics[m]:>7.4f} {b.metrics[m]:>8.4f} "
                f"{report.metrics[m] - b.metrics[m]:>+8.4f} {_p(t.t_p):>9} {_p(t.wilcoxon_p):>10}"
            )
        print(
            f"{'latency':<11} p50 {lat.p50:.2f} ms, p95 {lat.p95:.2f} ms "
            f"(baseline p50 {b.latency_ms.p50:.2f} ms, p95 {b.latency_ms.p95:.2f} ms)"
        )
        print(f"paired tests, two-sided: {' and '.join(TESTS)}")
    texts = {q.qid: q.text for q in report.per_query}
    worst = sorted(report.per_query, key=lambda q: q.metrics["ndcg@10"])[:WORST]
    print(f"\nLowest ndcg@10 ({len(worst)} of {n}):")
    for q in worst:
        # One query a line whatever its qid or text holds (docs/spec.md §10.1).
        print(one_line(f"  {q.metrics['ndcg@10']:.4f}  {q.qid}  {q.text}"))
    if cmp is not None:
        if cmp.worse:
            print(f"\nWorse than the baseline on {cmp.metric} ({len(cmp.worse)} of {n}):")
            for qid in cmp.worse:
                print(one_line(f"  {cmp.deltas[qid][cmp.metric]:+.4f}  {qid}  {texts[qid]}"))
        else:
            print(f"\nNo query is worse than the baseline on {cmp.metric}.")
    if report.diagnostics:
        print("\nDiagnostics:")
        for d in report.diagnostics:
            print(f"  {diagnostic_line(d)}")


def _p(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def register(
    sub: Any, load: LoadCatalog, out: PrintJson, positive: WholeNumber, count: WholeNumber
) -> None:
    """Add ``eval`` to the top-level parser (``positive``: the argparse type of
    a whole number >= 1, ``count`` of a fairness quota, 1 to 2**32 - 1 (§5.1),
    both shared with the other commands)."""
    e = sub.add_parser("eval", help="measure a catalog's rankings on judged queries")
    catalog_options(e)
    e.add_argument(
        "--qrels",
        type=option_file,
        required=True,
        help="judged queries: JSON Lines, or TREC qrels when --queries is given",
    )
    e.add_argument(
        "--queries", type=option_file, default=None, help="qid<TAB>query lines for TREC qrels"
    )
    strategies = [s.value for s in Strategy]
    e.add_argument("--strategy", choices=strategies, default=None)
    e.add_argument(
        "--fairness-quota",
        type=count,
        default=None,
        metavar="K",
        help=f"at most K passages in a row from one source (1 to {MAX_COUNT})",
    )
    scorers = [x.value for x in Scorer]
    e.add_argument("--scorer", choices=scorers, default=None)
    e.add_argument(
        "--limit",
        type=positive,
        default=DEFAULT_DEPTH,
        metavar="N",
        help=f"depth of each ranking (default {DEFAULT_DEPTH})",
    )
    e.add_argument(
        "--settings",
        type=option_file,
        default=None,
        metavar="FILE",
        help="default: the file the catalog names",
    )
    # A baseline is the same catalog under another configuration: a settings
    # file, and/or these flags over it (over the current configuration without one).
    e.add_argument(
        "--baseline",
        type=option_file,
        default=None,
        metavar="FILE",
        help="compare with this settings file",
    )
    e.add_argument(
        "--baseline-strategy",
        choices=strategies,
        default=None,
        help="compare with this strategy (per-query deltas, worse queries, paired tests)",
    )
    e.add_argument(
        "--baseline-fairness-quota",
        type=count,
        default=None,
        metavar="K",
        help=f"compare with this fairness quota (1 to {MAX_COUNT})",
    )
    e.add_argument(
        "--baseline-scorer", choices=scorers, default=None, help="compare with this scorer"
    )
    e.add_argument(
        "--run-out", type=option_file, default=None, metavar="FILE", help="write a TREC run file"
    )
    e.add_argument("--json", action="store_true", help="machine-readable output")
    e.set_defaults(run=lambda args: _run(args, load, out))
