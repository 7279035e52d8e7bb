"""``okfast tune``: search the ranking settings on judged queries, propose
only what wins on held-out queries, apply or revert on request (docs/spec.md
§14). Exit codes as every command's (§10.4): 0 done, whether or not a
configuration was proposed; 2 bad usage or input."""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from typing import Any

from okfast.catalog import Catalog
from okfast.errors import InvalidArgumentError
from okfast.evaluation import diagnostic_line
from okfast.numerals import ascii_float, ascii_int
from okfast.paths import LoadCatalog, catalog_options, option_file, writable
from okfast.qrels import JudgedSet
from okfast.resolver import Resolver
from okfast.scoring import DEFAULT_BM25F, Scorer
from okfast.settings import Settings, command_settings
from okfast.terminal import name_text, one_line
from okfast.tune import (
    OBJECTIVES,
    STANDARD_ERRORS,
    TuneReport,
    label,
    tune,
    with_provenance,
)
from okfast.tune_history import apply, check_apply, revert

#: How many of the per-query deltas the table shows at each end.
SHOWN = 5


class _Bar:
    """A one-line progress bar with ETA on stderr, only on a terminal."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.open = False

    def end(self) -> None:
        """End a line the search left unfinished (a Ctrl-C stops it short
        of the last configuration), so the report starts on its own line."""
        if self.open:
            print(file=sys.stderr, flush=True)
            self.open = False

    def __call__(self, done: int, total: int, best: float) -> None:
        spent = time.monotonic() - self.start
        eta = spent / done * (total - done)
        width = 24
        filled = width * done // total
        bar = "#" * filled + "-" * (width - filled)
        print(
            f"\rtune [{bar}] {done}/{total} best {best:.4f} ETA {eta:4.0f}s",
            end="" if done < total else "\n",
            file=sys.stderr,
            flush=True,
        )
        self.open = done < total


def _run(args: argparse.Namespace, load: LoadCatalog, out: Any) -> int:
    catalog: Catalog | None = load(args)
    if catalog is None:
        return 2
    # The search's options are absent unless given (register): a revert
    # refuses any given, even at its default value; then the defaults fill in.
    # `--json` is the output's form, which a revert has too.
    given = [
        "--" + k.replace("_", "-") for k in _SEARCH_DEFAULTS if k != "json" and hasattr(args, k)
    ]
    for k, v in _SEARCH_DEFAULTS.items():
        if not hasattr(args, k):
            setattr(args, k, v)
    if args.revert:
        # A revert runs no search: a search's option given with it was meant
        # for something else, and is refused rather than ignored.
        if given:
            raise InvalidArgumentError(
                f"--revert takes no search options (given: {', '.join(given)})"
            )
        return _revert(catalog, args.json, out)
    if args.qrels is None:
        raise InvalidArgumentError("tune needs --qrels (or --revert)")
    # What would stop the command after the search is checked before it.
    if args.apply and catalog.settings_path is None:
        raise InvalidArgumentError(
            'the catalog names no settings file to apply to: add "settings": '
            '"./okfast-settings.json" to it'
        )
    if args.apply and catalog.settings_path is not None:
        check_apply(catalog.settings_path)
    if args.plot is not None:
        from okfast.tune_plot import check_plot_path

        check_plot_path(args.plot)
    if args.out is not None:
        writable("the proposal to", args.out)
    judged = JudgedSet.load(args.qrels, args.queries)
    current = command_settings(catalog, args.settings)
    resolver = Resolver(
        catalog, settings=Settings(languages=current.languages), max_staleness=math.inf
    )
    bar = _Bar() if sys.stderr.isatty() else None
    report = tune(
        resolver,
        judged,
        current=current,
        objective=args.objective,
        budget=args.budget,
        seed=args.seed,
        folds=args.folds,
        progress=bar,
        standard_errors=args.standard_errors,
    )
    if bar is not None:
        bar.end()
    report = with_provenance(
        report,
        catalog=catalog,
        qrels=judged,
    )
    proposal = report.proposal()
    if args.out is not None and proposal is not None:
        try:
            proposal.save(args.out)
        except OSError as e:
            raise InvalidArgumentError(
                f"cannot write the proposal to {args.out}: {e.strerror or e}"
            ) from None
    if args.plot is not None:
        from okfast.tune_plot import plot

        plot(report, args.plot)
    if args.apply and proposal is not None and catalog.settings_path is not None:
        apply(proposal, catalog.settings_path)
    if args.json:
        doc = report.to_json()
        doc["applied"] = bool(args.apply and proposal is not None)
        out(doc)
    else:
        _print(report, args, catalog)
        if report.diagnostics:
            print("\nDiagnostics:")
            for d in report.diagnostics:
                print(f"  {diagnostic_line(d)}")
    return 0


def _revert(catalog: Catalog, as_json: bool, out: Any) -> int:
    target = catalog.settings_path
    if target is None:
        raise InvalidArgumentError("the catalog names no settings file; nothing to revert")
    if not revert(target):
        raise InvalidArgumentError(f"no applied tuning of {target} to revert")
    if as_json:
        # A revert to "no file" leaves none (through a link: a dangling one).
        out({"reverted": True, "settings_file": str(target), "removed": not target.exists()})
    else:
        print(f"Reverted {name_text(target)} to the settings before the last tune --apply.")
    return 0


def _print(report: TuneReport, args: argparse.Namespace, catalog: Catalog) -> None:
    n = len(report.qids)
    how = "interrupted after" if report.interrupted else "measured"
    print(
        f"{how} {len(report.trials)} configurations (of {report.space} in the space, "
        f"seed {report.seed}) on {n} judged queries, objective {report.objective}"
    )
    print(
        f"a configuration is chosen over the defaults when it leads them by more than "
        f"{report.standard_errors:g} standard errors"
    )
    print(f"current: {label(report.trials[0].settings)}")
    print(f"  {report.objective} {report.current:.4f} on all queries")
    print(f"{'fold':<5} {'queries':>7} {'train':>7} {'holdout':>8} {'current':>8}  chosen on train")
    for f in report.folds:
        print(
            f"{f.index + 1:<5} {len(f.queries):>7} {f.train:>7.4f} {f.holdout:>8.4f} "
            f"{f.current_holdout:>8.4f}  {label(report.trials[f.chosen].settings)}"
        )
    print(
        f"held-out {report.objective}: tuned {report.holdout:.4f}, current {report.current:.4f} "
        f"({report.holdout - report.current:+.4f})"
    )
    deltas = sorted(report.deltas.items(), key=lambda x: x[1])
    worse = [(q, d) for q, d in deltas if d < 0]
    better = [(q, d) for q, d in reversed(deltas) if d > 0]
    print(
        f"per query (held out): {len(better)} better, {len(worse)} worse, {n - len(better) - len(worse)} same"
    )
    for q, d in better[:SHOWN] + worse[:SHOWN]:
        print(one_line(f"  {d:+.4f}  {q}"))  # one query a line (docs/spec.md §10.1)
    proposal = report.proposal()
    if proposal is None:
        print("No configuration beats the current settings on held-out queries: nothing proposed.")
        return
    print(f"proposed: {label(proposal)}")
    print(f"  {report.objective} {report.trials[report.proposed or 0].mean:.4f} on all queries")
    if proposal.scorer is Scorer.BM25F and proposal.bm25f == DEFAULT_BM25F:
        print(
            "  BM25F's built-in defaults: no configuration measured led them by more than "
            f"{report.standard_errors:g} standard errors"
        )
    if args.out is not None:
        # A name that is not UTF-8 shown escaped, as in JSON (docs/spec.md
        # §10.1): printed raw, a strict UTF-8 output would refuse it after
        # the file was written.
        print(f"written to {name_text(args.out)}")
    if args.apply:
        root = args.catalog_root
        within = "" if root is None else f" --catalog-root {name_text(root)}"
        print(
            f"applied to {name_text(catalog.settings_path)} "
            f"(okfast tune --catalog {name_text(args.catalog)}{within} --revert undoes it)"
        )
    elif args.out is None:
        print("not applied: --out FILE writes it, --apply applies it")


#: The search's options and their defaults, which --revert leaves alone.
_SEARCH_DEFAULTS: dict[str, object] = {
    "qrels": None,
    "queries": None,
    "settings": None,
    "objective": "ndcg@10",
    "budget": 200,
    "seed": 0,
    "folds": 5,
    "standard_errors": STANDARD_ERRORS,
    "out": None,
    "plot": None,
    "apply": False,
    "json": False,
}


def _seed(text: str) -> int:
    # random.Random takes any whole number as a seed, negative ones too.
    try:
        return ascii_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def _number(text: str) -> float:
    # Checked against its range by tune itself, which names the bound.
    try:
        return ascii_float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def register(sub: Any, load: LoadCatalog, out: Any, whole: Callable[[str, int], int]) -> None:
    """Add ``tune`` to the top-level parser. The search's options default to
    absent (``SUPPRESS``), so :func:`_run` tells one given at its default
    value from one not given; it fills in ``_SEARCH_DEFAULTS`` itself.
    ``whole(text, least)`` reads a whole number option of at least ``least``."""

    def positive(text: str) -> int:
        return whole(text, 1)

    def folds(text: str) -> int:
        return whole(text, 2)

    t = sub.add_parser("tune", help="search ranking settings on judged queries, held-out accepted")
    catalog_options(t)
    t.add_argument(
        "--qrels",
        type=option_file,
        default=argparse.SUPPRESS,
        help="judged queries (JSON Lines, or TREC qrels)",
    )
    t.add_argument(
        "--queries",
        type=option_file,
        default=argparse.SUPPRESS,
        help="qid<TAB>query lines for TREC qrels",
    )
    t.add_argument(
        "--settings",
        type=option_file,
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="the current settings (default: the catalog's)",
    )
    t.add_argument("--objective", choices=OBJECTIVES, default=argparse.SUPPRESS)
    t.add_argument(
        "--budget",
        type=positive,
        default=argparse.SUPPRESS,
        metavar="N",
        help="configurations to measure",
    )
    t.add_argument(
        "--seed",
        type=_seed,
        default=argparse.SUPPRESS,
        metavar="K",
        help="the random search's seed",
    )
    t.add_argument(
        "--folds",
        type=folds,
        default=argparse.SUPPRESS,
        metavar="K",
        help="k of the k-fold holdout",
    )
    t.add_argument(
        "--standard-errors",
        type=_number,
        default=argparse.SUPPRESS,
        metavar="Z",
        help="how far the best must lead the defaults to be chosen (0: the best mean)",
    )
    t.add_argument(
        "--out",
        type=option_file,
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="write the proposed settings here",
    )
    t.add_argument(
        "--plot",
        type=option_file,
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="draw train vs holdout (okfast[plot])",
    )
    t.add_argument(
        "--apply",
        action="store_true",
        default=argparse.SUPPRESS,
        help="write the proposal where the catalog points",
    )
    t.add_argument(
        "--revert", action="store_true", help="restore the settings before the last --apply"
    )
    t.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output"
    )
    t.set_defaults(run=lambda args: _run(args, load, out))
