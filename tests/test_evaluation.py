"""okfast.evaluate (docs/spec.md §11.2–§11.4): metrics checked against values
computed by hand, doc ids resolved against the catalog, rankings handed over
with strictly decreasing scores, the run file, and the import kept lazy."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORPORA, make_catalog
from eval_extra import requires_eval_extra
from okfast import (
    Catalog,
    EvalReport,
    InvalidArgumentError,
    JudgedQuery,
    JudgedSet,
    Latency,
    MissingDependencyError,
    OkfastError,
    Query,
    QueryEval,
    Resolver,
    evaluate,
)
from okfast.evaluation import METRICS


def concept(title: str = "", description: str = "", body: str = "") -> str:
    fm = "type: T\n" + (f"title: {title}\n" if title else "")
    fm += f"description: {description}\n" if description else ""
    return f"---\n{fm}---\n{body}\n"


#: Scores for "alpha" (docs/spec.md §3.3: title 3, tags and description 2,
#: body 1): d1 6, d2 5, d3 4, d4 3, d5 2, d6 1. Each bNN scores 1 for "beta".
KB = {
    "d1.md": concept("alpha", "alpha", "alpha"),
    "d2.md": concept("alpha", "alpha", "x"),
    "d3.md": concept("alpha", "", "alpha"),
    "d4.md": concept("alpha"),
    "d5.md": concept("", "alpha"),
    "d6.md": concept("", "", "alpha"),
    "broken.md": "---\ntype: T\n",  # unterminated: an error in every search
    **{f"b{i:02d}.md": concept("", "", "beta") for i in range(1, 13)},
}


@pytest.fixture
def single(tmp_path: Path) -> Resolver:
    return Resolver(make_catalog(tmp_path, {"kb": KB}, [{"id": "kb", "path": "kb"}]))


def judged(*rows: tuple[str, str, dict[str, int]]) -> JudgedSet:
    text = "\n".join(json.dumps({"qid": q, "query": t, "relevant": r}) for q, t, r in rows)
    return JudgedSet.parse_jsonl(text, name="q.jsonl")


HAND = judged(
    ("q1", "alpha", {"d2": 2, "d4": 1, "d6": 0, "ghost": 1}),
    ("q2", "zzz", {"d1": 1}),
    ("q3", "beta", {"b12": 1}),
)


@requires_eval_extra
def test_metrics_equal_a_hand_computation(single: Resolver) -> None:
    report = evaluate(single, HAND)
    # q1 ranks d1 d2 d3 d4 d5 d6: d2 (grade 2) at 2, d4 (grade 1) at 4; the
    # ideal order takes every judged grade, the unknown `ghost` included.
    dcg = 2 / math.log2(2 + 1) + 1 / math.log2(4 + 1)
    idcg = 2 / math.log2(1 + 1) + 1 / math.log2(2 + 1) + 1 / math.log2(3 + 1)
    q1 = {
        "ndcg@10": dcg / idcg,
        "ndcg@100": dcg / idcg,
        "recall@10": 2 / 3,  # d2 and d4 of d2, d4, ghost
        "recall@100": 2 / 3,
        "mrr@10": 1 / 2,
        "p@10": 2 / 10,
    }
    # q2 retrieves nothing: every metric 0, and it still counts in the mean.
    q2 = dict.fromkeys(METRICS, 0.0)
    # q3: twelve concepts tie on score 1, ranked by id (§3.4), so b12 is 12th:
    # nothing within 10; with the raw tied scores trec_eval would put b12
    # first (it breaks ties by doc id, descending).
    q3 = dict.fromkeys(METRICS, 0.0) | {"ndcg@100": 1 / math.log2(12 + 1), "recall@100": 1.0}
    want = {"q1": q1, "q2": q2, "q3": q3}
    assert [q.qid for q in report.per_query] == ["q1", "q2", "q3"]
    for q in report.per_query:
        assert list(q.metrics) == list(METRICS)
        assert q.metrics == pytest.approx(want[q.qid], abs=1e-12), q.qid
    assert list(report.metrics) == list(METRICS)
    assert report.metrics == pytest.approx(
        {m: (q1[m] + q2[m] + q3[m]) / 3 for m in METRICS}, abs=1e-12
    )
    assert report.query("q1").ranking == ("d1", "d2", "d3", "d4", "d5", "d6")
    assert report.query("q2").ranking == ()
    assert report.query("q3").ranking[-1] == "b12"
    assert report.depth == 100 and report.comparison is None
    assert report.latency_ms.p95 >= report.latency_ms.p50 >= 0


@requires_eval_extra
def test_diagnostics_of_the_set_the_catalog_and_the_searches(single: Resolver) -> None:
    s = judged(("q1", "alpha", {"d1": 1, "ghost": 1, "kb:d1": 2}), ("q2", "beta", {"b01": 1}))
    report = evaluate(single, s)
    assert [(d.code, d.path, d.severity) for d in report.diagnostics] == [
        ("UnknownDocId", "q.jsonl:1", "warning"),
        ("DuplicateJudgement", "q.jsonl:1", "warning"),
        # The broken file is reported once, not once per search.
        ("InvalidFrontmatter", "broken.md", "error"),
    ]
    assert report.diagnostics[0].message == (
        "Judged document 'ghost' of query 'q1' is not in the catalog (source 'kb' has no "
        "such concept); it counts as relevant and never retrieved."
    )
    assert report.diagnostics[2].source_id == "kb"
    zero = evaluate(single, judged(("q1", "alpha", {"d1": 1, "ghost": 0})))
    assert zero.diagnostics[0].message.endswith("; it is judged not relevant and never retrieved.")
    # `kb:d1` named the same document as `d1`: the first grade (1) was kept.
    assert report.query("q1").metrics["ndcg@10"] == pytest.approx(
        (1 / math.log2(2)) / (1 / math.log2(2) + 1 / math.log2(3))
    )


@requires_eval_extra
def test_doc_ids_across_several_sources(tmp_path: Path) -> None:
    cat = make_catalog(
        tmp_path,
        {"one": {"a.md": concept("alpha")}, "two": {"a.md": concept("", "alpha")}},
        [{"id": "one", "path": "one"}, {"id": "two", "path": "two"}],
    )
    s = judged(("q", "alpha", {"two:a": 2, "a": 1, "nope:a": 1, "one:zzz": 1}))
    report = evaluate(Resolver(cat), s, query=lambda q: Query(q.text, strategy="merged"))
    assert report.query("q").ranking == ("one:a", "two:a")
    assert [d.message.split("(")[1].split(")")[0] for d in report.diagnostics] == [
        "a bare concept id needs a catalog with exactly one enabled knowledge source",
        "'nope' is not an enabled knowledge source",
        "source 'one' has no such concept",
    ]
    # two:a (grade 2) is 2nd; the three unknown grade-1 ids fill the ideal.
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4) + 1 / math.log2(5)
    assert report.query("q").metrics["ndcg@10"] == pytest.approx((2 / math.log2(3)) / idcg)


@requires_eval_extra
def test_rankings_use_the_judged_sets_form_of_doc_ids(single: Resolver) -> None:
    bare = evaluate(single, judged(("q", "alpha", {"d2": 1})))
    assert bare.query("q").ranking[:2] == ("d1", "d2")
    prefixed = evaluate(single, judged(("q", "alpha", {"kb:d2": 1})))
    assert prefixed.query("q").ranking[:2] == ("kb:d1", "kb:d2")
    assert bare.metrics == prefixed.metrics


@requires_eval_extra
def test_the_run_file_scores_strictly_decrease(single: Resolver) -> None:
    report = evaluate(single, HAND, depth=4)
    assert report.trec_run().splitlines() == [
        "q1 Q0 d1 1 4 okfast",
        "q1 Q0 d2 2 3 okfast",
        "q1 Q0 d3 3 2 okfast",
        "q1 Q0 d4 4 1 okfast",
        "q3 Q0 b01 1 4 okfast",
        "q3 Q0 b02 2 3 okfast",
        "q3 Q0 b03 3 2 okfast",
        "q3 Q0 b04 4 1 okfast",
    ]
    assert report.trec_run("mine").split("\n")[0].endswith(" mine")
    with pytest.raises(InvalidArgumentError):
        report.trec_run("two words")


@requires_eval_extra
def test_a_run_file_with_an_information_separator_in_an_id_reads_back(tmp_path: Path) -> None:
    # U+001C is no white space, but ir-measures splits run lines with
    # str.split, which splits there: it is written encoded (§11.1).
    import io

    import ir_measures

    cat = make_catalog(tmp_path, {"kb": {"d1.md": concept("alpha")}}, [{"id": "kb", "path": "kb"}])
    s = JudgedSet([JudgedQuery("a\x1cb", "alpha", {"d1": 1})], ())
    run = evaluate(Resolver(cat), s).trec_run()
    assert run.splitlines() == ["a%1Cb Q0 d1 1 1 okfast"]
    assert [r.query_id for r in ir_measures.read_trec_run(io.StringIO(run))] == ["a%1Cb"]


@requires_eval_extra
def test_the_run_file_encodes_white_space_and_reads_back(tmp_path: Path) -> None:
    import ir_measures

    cat = make_catalog(
        tmp_path,
        {"kb": {"com espaço.md": concept("alpha"), "b.md": concept("", "alpha")}},
        [{"id": "kb", "path": "kb"}],
    )
    # Written as encode_id writes ids (only white space and % encoded), so
    # trec_eval, which compares ids as text, matches them with the run's.
    (tmp_path / "qrels").write_text("q%201 0 com%20espaço 1\nq%201 0 b 2\n", encoding="utf-8")
    (tmp_path / "queries.tsv").write_text("q%201\talpha\n")
    s = JudgedSet.load(tmp_path / "qrels", tmp_path / "queries.tsv")
    report = evaluate(Resolver(cat), s)
    run = report.trec_run()
    assert run.splitlines() == ["q%201 Q0 com%20espaço 1 2 okfast", "q%201 Q0 b 2 1 okfast"]
    # trec_eval's own reading of the files gives the same figure.
    (tmp_path / "run").write_text(run, encoding="utf-8")
    qrels = list(ir_measures.read_trec_qrels(str(tmp_path / "qrels")))
    value = ir_measures.pytrec_eval.calc_aggregate(
        [ir_measures.nDCG @ 10], qrels, list(ir_measures.read_trec_run(str(tmp_path / "run")))
    )
    assert report.metrics["ndcg@10"] == pytest.approx(value[ir_measures.nDCG @ 10])
    assert report.metrics["ndcg@10"] == pytest.approx(
        (1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3))
    )


@requires_eval_extra
def test_the_query_maker_and_depth_are_applied(single: Resolver) -> None:
    seen: list[JudgedQuery] = []

    def make(q: JudgedQuery) -> Query:
        seen.append(q)
        return Query(q.text, min_score=4)  # no limit: depth still cuts

    report = evaluate(single, HAND, query=make, depth=2)
    assert [q.qid for q in seen] == ["q1", "q2", "q3"]
    assert report.query("q1").ranking == ("d1", "d2")
    assert report.query("q3").ranking == ()
    assert report.depth == 2


@requires_eval_extra
def test_the_number_of_search_threads_changes_nothing_measured(single: Resolver) -> None:
    one = evaluate(single, HAND, workers=1)
    for workers in (2, 5):
        many = evaluate(single, HAND, workers=workers)
        assert many.metrics == one.metrics
        assert [(q.qid, q.ranking, q.metrics) for q in many.per_query] == [
            (q.qid, q.ranking, q.metrics) for q in one.per_query
        ]


@requires_eval_extra
def test_a_path_is_read_as_json_lines(single: Resolver, tmp_path: Path) -> None:
    f = tmp_path / "q.jsonl"
    f.write_text('{"qid": "q1", "query": "alpha", "relevant": {"d1": 1}}\n')
    assert evaluate(single, f).metrics["mrr@10"] == 1.0
    assert evaluate(single, str(f)).metrics["mrr@10"] == 1.0


def test_argument_errors(single: Resolver, tmp_path: Path) -> None:
    for depth in (0, -1, True, 1.5):
        with pytest.raises(InvalidArgumentError, match="depth"):
            evaluate(single, HAND, depth=depth)  # type: ignore[arg-type]
    for workers in (0, -2, False, 2.0):
        with pytest.raises(InvalidArgumentError, match="workers"):
            evaluate(single, HAND, workers=workers)  # type: ignore[arg-type]
    empty = JudgedSet.parse_jsonl("{bad\n", name="x.jsonl")
    with pytest.raises(InvalidArgumentError, match=r"no judged query.*x\.jsonl:1"):
        evaluate(single, empty)
    # No line at all: no diagnostic to quote.
    for text in ("", "\n\n"):
        with pytest.raises(InvalidArgumentError, match=r"^no judged query to evaluate$"):
            evaluate(single, JudgedSet.parse_jsonl(text, name="e.jsonl"))
    with pytest.raises(InvalidArgumentError, match="cannot read"):
        evaluate(single, tmp_path / "missing.jsonl")
    with pytest.raises(InvalidArgumentError):
        EvalReport({}, (), Latency(0, 0), (), 1).query("nope")


def test_a_missing_extra_is_an_okfast_error(
    single: Resolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ir_measures", None)  # import fails
    with pytest.raises(MissingDependencyError, match=r"okfast\[eval\]") as e:
        evaluate(single, HAND)
    assert isinstance(e.value, OkfastError) and isinstance(e.value, ImportError)
    assert type(e.value).__module__ == "okfast.errors" and type(e.value).__doc__


def test_import_okfast_does_not_import_the_metric_libraries() -> None:
    code = (
        "import sys, okfast\n"
        "assert callable(okfast.evaluate)\n"
        "print(sorted(m for m in ('ir_measures', 'pytrec_eval', 'scipy') if m in sys.modules))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert (r.returncode, r.stdout.strip(), r.stderr) == (0, "[]", "")


def test_report_json_shape() -> None:
    q = QueryEval("q1", "text", dict.fromkeys(METRICS, 0.5), ("a",), 1.0)
    report = EvalReport(dict.fromkeys(METRICS, 0.5), (q,), Latency(1.0, 2.0), (), 100)
    doc = report.to_json()
    assert doc == {
        "queries": 1,
        "depth": 100,
        "metrics": dict.fromkeys(METRICS, 0.5),
        "per_query": [{"qid": "q1", "metrics": dict.fromkeys(METRICS, 0.5)}],
        "latency_ms": {"p50": 1.0, "p95": 2.0},
        "diagnostics": [],
        "comparison": None,
    }
    assert json.loads(json.dumps(doc)) == doc


# -- the shared judged sets ------------------------------------------------------

QRELS = CORPORA.parent / "qrels"
GCP = ("acme_retail", "crypto_bitcoin", "ga4", "stackoverflow")
#: Each shared set's sources (../shared/qrels/README.md says how to resolve it).
SHARED = {
    "gcp-samples": [{"id": s, "path": f"./gcp-samples/{s}"} for s in GCP],
    "react": [{"id": "react", "path": "./saschb2b/react"}],
    "databricks": [{"id": "databricks", "path": "./databricks"}],
}

requires_judged_sets = pytest.mark.skipif(
    not (CORPORA.is_dir() and QRELS.is_dir()),
    reason=f"shared judged sets not found at {QRELS} with corpora at {CORPORA}",
)


def shared(name: str, strategy: str) -> EvalReport:
    doc = {"version": 1, "sources": SHARED[name]}
    cat = Catalog.parse(json.dumps(doc), base_dir=CORPORA, root=CORPORA)

    def make(q: JudgedQuery) -> Query:
        return Query(q.text, strategy=strategy, limit=100)

    return evaluate(Resolver(cat, max_staleness=math.inf), QRELS / f"{name}.jsonl", query=make)


@requires_eval_extra
@requires_judged_sets
def test_the_shared_sets_reproduce_the_published_figures() -> None:
    """../shared/qrels/README.md: okfast's weighted count scores nDCG@10 0.872
    (gcp-samples), 0.707 (react) and 0.403 (databricks). With one source, the
    figures are those of the bundle's own order (§3.4: score, then id order),
    which `grouped` keeps; `merged` breaks score ties by ordinal concept id
    (§5.4), which on react moves a few tied documents: 0.706."""
    gcp = shared("gcp-samples", "merged")
    assert round(gcp.metrics["ndcg@10"], 3) == 0.872
    assert gcp.diagnostics == ()
    assert round(shared("react", "grouped").metrics["ndcg@10"], 3) == 0.707
    assert round(shared("react", "merged").metrics["ndcg@10"], 3) == 0.706
    for strategy in ("merged", "grouped"):
        databricks = shared("databricks", strategy)
        assert round(databricks.metrics["ndcg@10"], 3) == 0.403
    # 15 judged ids point into references/, which the shared copy lacks.
    unknown = [d for d in databricks.diagnostics if d.code == "UnknownDocId"]
    assert len(unknown) == 15 and all("'references/" in d.message for d in unknown)
    assert len(databricks.per_query) == 20


@requires_eval_extra
@requires_judged_sets
def test_mrr_at_10_equals_ir_measures_own_rr_at_10() -> None:
    """mrr@10 is trec_eval's recip_rank over the first 10 results; ir-measures
    computes RR@10 with another provider (MS MARCO's definition): they agree."""
    import ir_measures

    report = shared("gcp-samples", "merged")
    qrels = [
        ir_measures.Qrel(q.qid, doc, grade)
        for q in JudgedSet.load(QRELS / "gcp-samples.jsonl")
        for doc, grade in q.judgements.items()
    ]
    run = [
        ir_measures.ScoredDoc(q.qid, doc, float(len(q.ranking) - i))
        for q in report.per_query
        for i, doc in enumerate(q.ranking)
    ]
    per_query = {
        m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.RR @ 10], qrels, run)
    }
    assert per_query == pytest.approx({q.qid: q.metrics["mrr@10"] for q in report.per_query})


def test_a_diagnostic_line_is_one_line_whatever_its_path_holds() -> None:
    """docs/spec.md §10.1, §11.5: a line feed or carriage return in a path or
    message is written as \\n or \\r in the report's Diagnostics."""
    from okfast.evaluation import diagnostic_line
    from okfast.model import Diagnostic

    d = Diagnostic("InvalidConceptId", "rename\rit", "bad\nx.md", "s", "error")
    assert diagnostic_line(d) == f"{'error':<7} {'InvalidConceptId':<20} s:bad\\nx.md rename\\rit"


@requires_eval_extra
def test_arguments_of_the_wrong_type_are_okfasts_type_errors(single: Resolver) -> None:
    """docs/spec.md §8, §11.2–§11.4: checked before any search, not an
    AttributeError or a bare TypeError from inside."""
    from okfast import InvalidArgumentTypeError
    from okfast.comparison import compare

    report = evaluate(single, HAND)
    calls = [
        ("resolver must be a Resolver", lambda: evaluate(None, HAND)),
        ("a judged queries path is text", lambda: evaluate(single, 3)),
        ("query must be a callable or None", lambda: evaluate(single, HAND, query=3)),
        ("baseline must be an EvalReport", lambda: evaluate(single, HAND, baseline=3)),
        ("report must be an EvalReport", lambda: compare(None, report)),
        ("baseline must be an EvalReport", lambda: compare(report, 3)),
        ("a run tag is text", lambda: report.trec_run(3)),
    ]
    for words, call in calls:
        with pytest.raises(InvalidArgumentTypeError, match=words):
            call()
    with pytest.raises(InvalidArgumentError, match="a judged queries path is empty"):
        evaluate(single, "")
