"""Comparing an evaluation with a baseline on the same judged queries
(docs/spec.md §11.3): per-query differences, the queries that got worse, and
paired significance tests from scipy (the ``okfast[eval]`` extra, imported
only when a comparison is made).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from okfast.errors import InvalidArgumentError, InvalidArgumentTypeError

if TYPE_CHECKING:
    from okfast.evaluation import EvalReport

#: The tests a comparison runs, as the report names them: scipy's paired
#: t-test and Wilcoxon signed-rank test, both two-sided; the Wilcoxon test
#: drops zero differences (``zero_method="wilcox"``) and uses scipy's default
#: method (the exact distribution for small samples without ties or zeros).
TESTS = ("scipy.stats.ttest_rel", "scipy.stats.wilcoxon")


@dataclass(frozen=True, slots=True)
class PairedTest:
    """The paired tests of one metric over the per-query values. A statistic
    or p-value is ``None`` where the test is not defined (fewer than two
    queries, or no difference that is not zero)."""

    metric: str
    mean_delta: float
    t_statistic: float | None
    t_p: float | None
    wilcoxon_statistic: float | None
    wilcoxon_p: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "mean_delta": self.mean_delta,
            "t_test": {"statistic": self.t_statistic, "p": self.t_p},
            "wilcoxon": {"statistic": self.wilcoxon_statistic, "p": self.wilcoxon_p},
        }


@dataclass(frozen=True)
class Comparison:
    """An evaluation against its ``baseline``: ``deltas[qid][metric]`` is this
    value minus the baseline's; ``worse`` lists the queries whose ``metric``
    dropped, the largest drop first (ties in query order)."""

    baseline: EvalReport
    metric: str
    deltas: Mapping[str, Mapping[str, float]]
    worse: tuple[str, ...]
    tests: Mapping[str, PairedTest]

    def to_json(self) -> dict[str, Any]:
        """The ``comparison`` object of ``okfast eval --json`` (§11.5)."""
        return {
            "baseline": {
                "metrics": dict(self.baseline.metrics),
                "latency_ms": {
                    "p50": self.baseline.latency_ms.p50,
                    "p95": self.baseline.latency_ms.p95,
                },
            },
            "metric": self.metric,
            "tests": {m: t.to_json() for m, t in self.tests.items()},
            "test_names": list(TESTS),
            "per_query": [{"qid": qid, "deltas": dict(d)} for qid, d in self.deltas.items()],
            "worse": list(self.worse),
        }


def compare(report: EvalReport, baseline: EvalReport, *, metric: str = "ndcg@10") -> Comparison:
    """``report`` against ``baseline``, both evaluations of the same judged
    queries (``InvalidArgumentError`` otherwise, or for an unknown ``metric``)."""
    # Imported here: okfast.evaluation imports this module.
    from okfast.evaluation import METRICS, EvalReport, require

    for name, given in (("report", report), ("baseline", baseline)):
        if not isinstance(given, EvalReport):
            raise InvalidArgumentTypeError(
                f"{name} must be an EvalReport, got {type(given).__name__}"
            )
    if metric not in METRICS:
        raise InvalidArgumentError(f"unknown metric {metric!r} (one of {', '.join(METRICS)})")
    qids = [q.qid for q in report.per_query]
    if qids != [q.qid for q in baseline.per_query]:
        raise InvalidArgumentError("the baseline was evaluated on other judged queries")
    stats = require("scipy.stats", "a comparison with a baseline")
    deltas = {
        q.qid: {m: q.metrics[m] - b.metrics[m] for m in METRICS}
        for q, b in zip(report.per_query, baseline.per_query, strict=True)
    }
    order = sorted(range(len(qids)), key=lambda i: deltas[qids[i]][metric])
    worse = tuple(qids[i] for i in order if deltas[qids[i]][metric] < 0)
    tests = {
        m: _paired(
            stats,
            m,
            [q.metrics[m] for q in report.per_query],
            [b.metrics[m] for b in baseline.per_query],
        )
        for m in METRICS
    }
    return Comparison(baseline, metric, deltas, worse, tests)


def _paired(stats: Any, metric: str, xs: Sequence[float], ys: Sequence[float]) -> PairedTest:
    diffs = [x - y for x, y in zip(xs, ys, strict=True)]
    mean = math.fsum(diffs) / len(diffs)
    if len(diffs) < 2 or not any(diffs):
        return PairedTest(metric, mean, None, None, None, None)
    with warnings.catch_warnings():
        # Small samples and constant differences warn; the values (or None)
        # say the same in the report.
        warnings.simplefilter("ignore")
        t = stats.ttest_rel(xs, ys)
        w = stats.wilcoxon(xs, ys, zero_method="wilcox", alternative="two-sided")
    return PairedTest(
        metric,
        mean,
        _finite(t.statistic),
        _finite(t.pvalue),
        _finite(w.statistic),
        _finite(w.pvalue),
    )


def _finite(value: Any) -> float | None:
    """A test's number, or ``None`` when it is not finite (JSON has no NaN)."""
    x = float(value)
    return x if math.isfinite(x) else None
