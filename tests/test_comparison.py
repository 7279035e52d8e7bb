"""An evaluation against a baseline (docs/spec.md §11.3): per-query deltas,
the queries that got worse, and paired tests whose values are checked by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import make_catalog
from eval_extra import requires_eval_extra
from okfast import (
    EvalReport,
    InvalidArgumentError,
    JudgedSet,
    Latency,
    Query,
    QueryEval,
    Resolver,
    compare,
    evaluate,
)
from okfast.evaluation import METRICS


def report(values: dict[str, float]) -> EvalReport:
    """A report whose every metric of query ``qid`` is ``values[qid]``."""
    per = tuple(QueryEval(q, q, dict.fromkeys(METRICS, v), (), 1.0) for q, v in values.items())
    mean = sum(values.values()) / len(values)
    return EvalReport(dict.fromkeys(METRICS, mean), per, Latency(1.0, 1.0), (), 100)


@requires_eval_extra
def test_deltas_worse_queries_and_paired_tests_by_hand() -> None:
    base = report({"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.5})
    new = report({"a": 0.6, "b": 0.3, "c": 0.8, "d": 0.1})
    cmp = compare(new, base)
    assert cmp.baseline is base and cmp.metric == "ndcg@10"
    assert {q: d["ndcg@10"] for q, d in cmp.deltas.items()} == pytest.approx(
        {"a": 0.1, "b": -0.2, "c": 0.3, "d": -0.4}
    )
    assert cmp.worse == ("d", "b")  # the largest drop first
    t = cmp.tests["ndcg@10"]
    diffs = [0.1, -0.2, 0.3, -0.4]
    mean = sum(diffs) / 4
    sd = math.sqrt(sum((x - mean) ** 2 for x in diffs) / 3)
    assert t.mean_delta == pytest.approx(-0.05)
    assert t.t_statistic == pytest.approx(mean / (sd / 2))
    # Wilcoxon: ranks of |d| are 1 (0.1), 2 (0.2), 3 (0.3), 4 (0.4); the
    # positive ones sum to 1 + 3 = 4, the negative to 6; W = min = 4. Of the
    # 16 equally likely sign patterns, 7 have a positive rank sum <= 4 (none;
    # 1; 2; 3; 4; 1+2; 1+3), so the exact two-sided p is 2 * 7/16.
    assert t.wilcoxon_statistic == 4.0
    assert t.wilcoxon_p == pytest.approx(2 * 7 / 16)


@requires_eval_extra
def test_t_test_p_value_by_hand() -> None:
    # Differences 0.1, 0.2, 0.3: mean 0.2, sd 0.1, t = 0.2 / (0.1 / sqrt 3).
    # With 2 degrees of freedom the t distribution's tail is closed-form:
    # two-sided p = 1 - |t| / sqrt(t^2 + 2). Wilcoxon: all 3 positive, W = 0,
    # exact two-sided p = 2 / 2^3.
    cmp = compare(report({"a": 0.6, "b": 0.7, "c": 0.8}), report({"a": 0.5, "b": 0.5, "c": 0.5}))
    t = 0.2 / (0.1 / math.sqrt(3))
    test = cmp.tests["ndcg@10"]
    assert test.t_statistic == pytest.approx(t)
    assert test.t_p == pytest.approx(1 - t / math.sqrt(t * t + 2))
    assert (test.wilcoxon_statistic, test.wilcoxon_p) == (0.0, pytest.approx(0.25))
    assert cmp.worse == ()


@requires_eval_extra
def test_undefined_tests_are_none() -> None:
    same = report({"a": 0.5, "b": 0.7})
    cmp = compare(same, same)
    t = cmp.tests["p@10"]
    assert (t.mean_delta, t.t_statistic, t.t_p, t.wilcoxon_statistic, t.wilcoxon_p) == (
        0.0,
        None,
        None,
        None,
        None,
    )
    one = compare(report({"a": 0.9}), report({"a": 0.1}))
    assert one.tests["ndcg@10"].t_p is None and one.worse == ()
    assert one.to_json()["tests"]["ndcg@10"]["t_test"] == {"statistic": None, "p": None}


def test_a_baseline_of_other_queries_or_an_unknown_metric_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="other judged queries"):
        compare(report({"a": 1.0}), report({"b": 1.0}))
    with pytest.raises(InvalidArgumentError, match="unknown metric"):
        compare(report({"a": 1.0}), report({"a": 1.0}), metric="map")


@requires_eval_extra
def test_evaluate_with_a_baseline(tmp_path: Path) -> None:
    """Two sources: `grouped` lists the higher-priority source first, `merged`
    sorts by score; the judged set rewards each on one query."""
    doc = "---\ntype: T\ntitle: {t}\n---\n{b}\n"
    cat = make_catalog(
        tmp_path,
        {
            "hi": {"weak.md": doc.format(t="x", b="alpha")},
            "lo": {"strong.md": doc.format(t="alpha", b="alpha")},
        },
        [{"id": "hi", "path": "hi", "priority": 9}, {"id": "lo", "path": "lo"}],
    )
    rows = (
        '{"qid": "wants-strong", "query": "alpha", "relevant": {"lo:strong": 1}}\n'
        '{"qid": "wants-weak", "query": "alpha", "relevant": {"hi:weak": 1}}\n'
    )
    judged = JudgedSet.parse_jsonl(rows)
    resolver = Resolver(cat)
    grouped = evaluate(resolver, judged)  # the resolver's default
    merged = evaluate(
        resolver, judged, query=lambda q: Query(q.text, strategy="merged"), baseline=grouped
    )
    assert grouped.query("wants-strong").ranking == ("hi:weak", "lo:strong")
    assert merged.query("wants-strong").ranking == ("lo:strong", "hi:weak")
    cmp = merged.comparison
    assert cmp is not None and cmp.baseline is grouped
    assert cmp.deltas["wants-strong"]["mrr@10"] == 0.5
    assert cmp.deltas["wants-weak"]["mrr@10"] == -0.5
    assert cmp.worse == ("wants-weak",)
    assert merged.to_json()["comparison"]["worse"] == ["wants-weak"]
    with pytest.raises(InvalidArgumentError, match="other judged queries"):
        evaluate(resolver, JudgedSet(judged.queries[:1]), baseline=grouped)
