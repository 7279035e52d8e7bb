"""``okfast eval`` (docs/spec.md §11.5): the table, the JSON object, the run
file, a baseline strategy, and one line with status 2 on bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import write_bundle
from eval_extra import requires_eval_extra
from okfast.cli import main
from okfast.evaluation import METRICS

DOC = "---\ntype: T\ntitle: {t}\n---\n{b}\n"


@pytest.fixture
def setup(tmp_path: Path) -> tuple[str, str]:
    """Two sources where `grouped` (the default) and `merged` differ, and a
    judged set with one query each of them ranks better."""
    write_bundle(tmp_path / "hi", {"weak.md": DOC.format(t="x", b="alpha")})
    write_bundle(tmp_path / "lo", {"strong.md": DOC.format(t="alpha", b="alpha")})
    sources = [{"id": "hi", "path": "hi", "priority": 9}, {"id": "lo", "path": "lo"}]
    (tmp_path / "catalog.json").write_text(json.dumps({"version": 1, "sources": sources}))
    (tmp_path / "q.jsonl").write_text(
        '{"qid": "wants-strong", "query": "alpha", "relevant": {"lo:strong": 1}}\n'
        '{"qid": "wants-weak", "query": "alpha", "relevant": {"hi:weak": 1, "hi:gone": 1}}\n'
        "not json\n"
    )
    return str(tmp_path / "catalog.json"), str(tmp_path / "q.jsonl")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["eval", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@requires_eval_extra
def test_json_shape(setup: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    catalog, qrels = setup
    code, out, err = run(capsys, "--catalog", catalog, "--qrels", qrels, "--json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert set(doc["metrics"]) == set(METRICS)
    assert all(isinstance(v, float) for v in doc["metrics"].values())
    assert [q["qid"] for q in doc["per_query"]] == ["wants-strong", "wants-weak"]
    assert all(set(q) == {"qid", "metrics"} for q in doc["per_query"])
    assert all(set(q["metrics"]) == set(METRICS) for q in doc["per_query"])
    assert set(doc["latency_ms"]) == {"p50", "p95"}
    assert [(d["code"], d["path"]) for d in doc["diagnostics"]] == [
        ("BadJudgedLine", f"{qrels}:3"),
        ("UnknownDocId", f"{qrels}:2"),
    ]
    assert doc["comparison"] is None and doc["depth"] == 100 and doc["queries"] == 2
    assert doc["configuration"] == "strategy grouped, scorer weighted_count"
    # grouped puts hi:weak first for both queries.
    assert doc["per_query"][0]["metrics"]["mrr@10"] == 0.5
    assert doc["per_query"][1]["metrics"]["mrr@10"] == 1.0


@requires_eval_extra
def test_table_with_a_baseline_strategy(
    setup: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    catalog, qrels = setup
    argv = ["--catalog", catalog, "--qrels", qrels, "--strategy", "merged"]
    code, out, _ = run(capsys, *argv, "--baseline-strategy", "grouped")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "2 judged queries, strategy merged, scorer weighted_count, depth 100"
    assert lines[1] == "baseline: strategy grouped, scorer weighted_count"
    assert lines[2].split() == [
        "metric",
        "value",
        "baseline",
        "delta",
        "t-test",
        "p",
        "wilcoxon",
        "p",
    ]
    mrr = next(line for line in lines if line.startswith("mrr@10"))
    assert mrr.split()[:4] == ["mrr@10", "0.7500", "0.7500", "+0.0000"]
    assert "Worse than the baseline on ndcg@10 (1 of 2):" in lines
    worse = lines[lines.index("Worse than the baseline on ndcg@10 (1 of 2):") + 1]
    assert worse.split()[1:] == ["wants-weak", "alpha"] and worse.split()[0].startswith("-")
    assert "Diagnostics:" in lines
    code, out, _ = run(capsys, *argv, "--baseline-strategy", "grouped", "--json")
    cmp = json.loads(out)["comparison"]
    assert cmp["worse"] == ["wants-weak"]
    assert cmp["baseline"]["configuration"] == "strategy grouped, scorer weighted_count"
    assert cmp["test_names"] == ["scipy.stats.ttest_rel", "scipy.stats.wilcoxon"]
    assert [q["qid"] for q in cmp["per_query"]] == ["wants-strong", "wants-weak"]
    assert cmp["per_query"][0]["deltas"]["mrr@10"] == 0.5


@requires_eval_extra
def test_table_without_a_baseline(
    setup: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    catalog, qrels = setup
    code, out, _ = run(capsys, "--catalog", catalog, "--qrels", qrels, "--limit", "1")
    assert code == 0
    lines = out.splitlines()
    assert lines[:2] == [
        "2 judged queries, strategy grouped, scorer weighted_count, depth 1",
        "metric        value",
    ]
    assert [line.split()[0] for line in lines[2:8]] == list(METRICS)
    assert lines[8].startswith("latency     p50 ")
    assert "Lowest ndcg@10 (2 of 2):" in lines


@requires_eval_extra
def test_a_query_line_stays_one_line_whatever_its_qid_and_text_hold(
    setup: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/spec.md §10.1: the lowest and the worse queries are one line each,
    a line break in a qid or a query written as ``\\n``."""
    catalog, _ = setup
    qrels = tmp_path / "broken.jsonl"
    qrels.write_text(
        json.dumps({"qid": "two\nlines", "query": "alpha\rzzz", "relevant": {"lo:strong": 1}})
        + "\n"
    )
    argv = ["--catalog", catalog, "--qrels", str(qrels), "--strategy", "merged"]
    code, out, _ = run(capsys, *argv, "--baseline-strategy", "grouped")
    lines = out.splitlines()
    assert code == 0 and "Lowest ndcg@10 (1 of 1):" in lines
    lowest = lines[lines.index("Lowest ndcg@10 (1 of 1):") + 1]
    assert lowest.split()[1:] == ["two\\nlines", "alpha\\rzzz"]
    code, out, _ = run(capsys, *argv[:-1], "grouped", "--baseline-strategy", "merged")
    lines = out.splitlines()
    worse = lines[lines.index("Worse than the baseline on ndcg@10 (1 of 1):") + 1]
    assert worse.split()[1:] == ["two\\nlines", "alpha\\rzzz"]


@requires_eval_extra
def test_run_out_and_trec_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_bundle(
        tmp_path / "kb",
        {"a b.md": DOC.format(t="alpha", b=""), "c.md": DOC.format(t="x", b="alpha")},
    )
    (tmp_path / "catalog.json").write_text(
        '{"version": 1, "sources": [{"id": "kb", "path": "kb"}]}'
    )
    (tmp_path / "qrels").write_text("q1 0 c 1\n")
    (tmp_path / "queries.tsv").write_text("q1\talpha\n")
    argv = ["--catalog", str(tmp_path / "catalog.json"), "--qrels", str(tmp_path / "qrels")]
    code, _, _ = run(
        capsys,
        *argv,
        "--queries",
        str(tmp_path / "queries.tsv"),
        "--run-out",
        str(tmp_path / "run"),
    )
    assert code == 0
    assert (tmp_path / "run").read_text() == "q1 Q0 a%20b 1 2 okfast\nq1 Q0 c 2 1 okfast\n"


def one_line_status_2(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith("okfast: ") and err.count("\n") == 1, err
    return err


def test_bad_input_is_one_line_and_status_2(
    setup: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog, qrels = setup
    err = one_line_status_2(capsys, "--catalog", catalog, "--qrels", str(tmp_path / "none.jsonl"))
    assert "cannot read judged queries" in err
    err = one_line_status_2(
        capsys, "--catalog", catalog, "--qrels", qrels, "--queries", str(tmp_path / "none.tsv")
    )
    assert "none.tsv" in err
    (tmp_path / "bad.jsonl").write_text("nothing usable\n")
    err = one_line_status_2(capsys, "--catalog", catalog, "--qrels", str(tmp_path / "bad.jsonl"))
    assert "no judged query to evaluate" in err and "bad.jsonl:1" in err


@requires_eval_extra
def test_an_unwritable_run_file_is_one_line_and_status_2(
    setup: tuple[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    catalog, qrels = setup
    (tmp_path / "file").write_text("")
    searched: list[object] = []
    monkeypatch.setattr("okfast.eval_cli.evaluate", lambda *a, **k: searched.append(a))
    for below in ("run", "runs/today/run"):
        err = one_line_status_2(
            capsys, "--catalog", catalog, "--qrels", qrels,
            "--run-out", str(tmp_path / "file" / below),
        )  # fmt: skip
        # Found before the search, not after it (docs/spec.md §10.1).
        assert err == (
            f"okfast: cannot write the run file {tmp_path / 'file' / below}: "
            f"{tmp_path / 'file'} is not a directory\n"
        )
    assert searched == []
    err = one_line_status_2(
        capsys, "--catalog", catalog, "--qrels", qrels, "--run-out", str(tmp_path)
    )
    assert err == f"okfast: cannot write the run file {tmp_path}: it is a directory\n"


@requires_eval_extra
def test_a_run_file_s_missing_folders_are_made(
    setup: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog, qrels = setup
    run_file = tmp_path / "runs" / "today" / "bm25f.run"
    code, _, _ = run(capsys, "--catalog", catalog, "--qrels", qrels, "--run-out", str(run_file))
    assert code == 0
    lines = run_file.read_text(encoding="utf-8").splitlines()
    assert {line.split()[0] for line in lines} == {"wants-strong", "wants-weak"}


def test_a_bad_catalog_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "catalog.json").write_text('{"version": 2, "sources": []}')
    (tmp_path / "q.jsonl").write_text("")
    code, out, err = run(
        capsys, "--catalog", str(tmp_path / "catalog.json"), "--qrels", str(tmp_path / "q.jsonl")
    )
    assert (code, out) == (2, "")
    assert err.startswith("okfast: bad catalog ") and "[WrongVersion]" in err


def test_a_missing_extra_is_one_line_and_status_2(
    setup: tuple[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ir_measures", None)
    catalog, qrels = setup
    err = one_line_status_2(capsys, "--catalog", catalog, "--qrels", qrels)
    assert "pip install 'okfast[eval]'" in err


def test_usage_errors_exit_2(setup: tuple[str, str]) -> None:
    catalog, qrels = setup
    for argv in (
        ["--catalog", catalog],  # no --qrels
        ["--catalog", catalog, "--qrels", qrels, "--limit", "0"],
        ["--catalog", catalog, "--qrels", qrels, "--strategy", "best"],
        ["--catalog", catalog, "--qrels", qrels, "--baseline-fairness-quota", "0"],
    ):
        with pytest.raises(SystemExit) as e:
            main(["eval", *argv])
        assert e.value.code == 2


@requires_eval_extra
def test_a_baseline_file_is_named_and_diagnosed_as_a_settings_file_is(
    setup: tuple[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """docs/spec.md §13.4: every diagnostic of a settings file, UnknownSource
    included, under FILE spelled as given — for --baseline as for --settings —
    and an unreadable one named so too, not by its absolute path."""
    catalog, qrels = setup
    monkeypatch.chdir(tmp_path)
    Path("unk.json").write_text('{"version": 1, "languages": {"zz": "german"}}')
    Path("bad.json").write_text("not json")
    for flag in ("--settings", "--baseline"):
        code, _, err = run(capsys, "--catalog", catalog, "--qrels", qrels, flag, "unk.json")
        assert code == 0
        assert err.splitlines()[-1] == (
            "okfast: settings unk.json: [UnknownSource] languages names source 'zz', "
            "not in the catalog"
        )
        err = one_line_status_2(capsys, "--catalog", catalog, "--qrels", qrels, flag, "bad.json")
        assert err.startswith("okfast: settings bad.json: not valid JSON")


@requires_eval_extra
def test_settings_files_as_the_configuration_and_the_baseline(
    setup: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/spec.md §13: ``--settings`` is the measured configuration (flags
    over it), ``--baseline FILE`` the compared one; by default the file the
    catalog names."""
    catalog, qrels = setup
    merged = tmp_path / "merged.json"
    merged.write_text('{"version": 1, "strategy": "merged", "colour": 1}')
    grouped = tmp_path / "grouped.json"
    grouped.write_text('{"version": 1, "strategy": "grouped"}')
    code, out, err = run(
        capsys, "--catalog", catalog, "--qrels", qrels, "--settings", str(merged),
        "--baseline", str(grouped), "--json",
    )  # fmt: skip
    # One line per diagnostic, as every command words it (§13.4).
    assert code == 0 and err.startswith(f"okfast: settings {merged}: [UnknownProperty] ")
    doc = json.loads(out)
    assert doc["configuration"] == "strategy merged, scorer weighted_count"
    assert (
        doc["comparison"]["baseline"]["configuration"] == "strategy grouped, scorer weighted_count"
    )
    # merged puts lo:strong first, grouped hi:weak.
    assert doc["per_query"][0]["metrics"]["mrr@10"] == 1.0
    code, out, _ = run(
        capsys, "--catalog", catalog, "--qrels", qrels, "--settings", str(merged),
        "--strategy", "grouped", "--json",
    )  # fmt: skip
    assert json.loads(out)["configuration"] == "strategy grouped, scorer weighted_count"
    doc = json.loads(Path(catalog).read_text()) | {"settings": "merged.json"}
    Path(catalog).write_text(json.dumps(doc))
    code, out, _ = run(capsys, "--catalog", catalog, "--qrels", qrels, "--json")
    assert json.loads(out)["configuration"] == "strategy merged, scorer weighted_count"
