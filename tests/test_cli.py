"""The CLI: search and validate, text and JSON, exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, MakeBundle, write_bundle
from okfast.cli import main

EXAMPLES = REPO / "examples"


def test_search_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["search", str(EXAMPLES / "data-glossary"), "revenue recognition", "--limit", "2"])
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:2] == ["12", "policies/revenue-recognition-policy"]
    assert len([line for line in out if not line.startswith(" " * 6)]) == 2


def test_search_json_matches_api(capsys: pytest.CaptureFixture[str]) -> None:
    import okfast

    root = EXAMPLES / "platform-runbooks"
    assert main(["search", str(root), "rollback", "--json", "--tag", "deploys"]) == 0
    doc = json.loads(capsys.readouterr().out)
    api = okfast.Bundle.load(root).search("rollback", tag="deploys")
    assert [(h["concept_id"], h["score"]) for h in doc["hits"]] == [
        (h.concept_id, h.score) for h in api
    ]


def test_validate_exit_codes(make_bundle: MakeBundle, capsys: pytest.CaptureFixture[str]) -> None:
    good = make_bundle({"a.md": "---\ntype: T\n---\nx"})
    assert main(["validate", str(good)]) == 0
    warn_only = make_bundle({"a.md": "---\ntype: T\nstale_after: never\n---\nx"})
    assert main(["validate", str(warn_only)]) == 0
    missing_type = make_bundle({"a.md": "no frontmatter"})
    assert main(["validate", str(missing_type)]) == 1
    broken = make_bundle({"a.md": "---\ntype: T\n", "b.md": "---\ntype: T\n---\n"})
    assert main(["validate", str(broken)]) == 1
    assert "invalid" in capsys.readouterr().out


def test_validate_json(make_bundle: MakeBundle, capsys: pytest.CaptureFixture[str]) -> None:
    broken = make_bundle({"a.md": "---\ntype: T\n", "b.md": "---\ntype: T\n---\n"})
    assert main(["validate", str(broken), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["concepts"] == 1 and doc["valid"] is False
    assert doc["diagnostics"] == [
        {
            "code": "InvalidFrontmatter",
            "severity": "error",
            "path": "a.md",
            "message": "Unterminated YAML frontmatter block",
        }
    ]


def test_missing_bundle_exits_2(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "/definitely/not/here", "x"]) == 2
    assert "not a readable directory" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["gone\x1b", "odd\udcff"])
def test_a_missing_root_is_quoted_as_python_quotes_a_path(
    tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # As every other message quotes a file name (docs/spec.md §10.1): repr
    # of the str given, a non-UTF-8 byte as its lone surrogate.
    root = str(tmp_path / name)
    assert main(["search", root, "x"]) == 2
    assert f"bundle root {root!r} is not a readable directory" in capsys.readouterr().err


def test_a_one_line_error_keeps_a_name_holding_a_line_separator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Joined at newlines only: U+0085 and U+2028 in a name are not line ends
    # to drop (docs/spec.md §10.1, §10.4).
    for name in ("a\x85b", "a\u2028b", "a\x0bb"):
        missing = tmp_path / name
        code = main(["search", str(EXAMPLES / "bakery-ops"), "x", "--settings", str(missing)])
        assert code == 2
        assert str(missing) in capsys.readouterr().err, repr(name)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["resolve", "--catalog", "c.json", "q", "--fairness-quota", "-1"], "must be >= 1: -1"),
        (["resolve", "--catalog", "c.json", "q", "--fairness-quota", "0"], "must be >= 1: 0"),
        (["tune", "--catalog", "c.json", "--budget", "-3"], "must be >= 1: -3"),
        (["tune", "--catalog", "c.json", "--folds", "-1"], "must be >= 2: -1"),
        (["tune", "--catalog", "c.json", "--folds", "1"], "must be >= 2: 1"),
        (["eval", "--catalog", "c.json", "--qrels", "q", "--limit", "-1"], "must be >= 1: -1"),
        # A fairness quota is a count (docs/spec.md §5.1, §10.1): refused past
        # 2**32 - 1 by the parser, naming that bound, not later by Query.
        (
            ["resolve", "--catalog", "c.json", "q", "--fairness-quota", "4294967296"],
            "must be <= 4294967295: 4294967296",
        ),
        (
            ["eval", "--catalog", "c.json", "--qrels", "q", "--fairness-quota", "4294967296"],
            "must be <= 4294967295: 4294967296",
        ),
        (
            ["eval", "--catalog", "c.json", "--qrels", "q"]
            + ["--baseline-fairness-quota", "4294967296"],
            "must be <= 4294967295: 4294967296",
        ),
    ],
)
def test_a_usage_error_names_the_options_own_bound(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert capsys.readouterr().err.rstrip().endswith(words)


def test_bad_limit_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as e:
        main(["search", str(EXAMPLES / "bakery-ops"), "x", "--limit", "-1"])
    assert e.value.code == 2


def test_a_whole_number_too_long_to_convert_is_out_of_range_not_a_typo(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as e:
        main(["search", str(EXAMPLES / "bakery-ops"), "x", "--limit", "9" * 5000])
    assert e.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.endswith(
        "argument --limit: must be a whole number from 0 to 9223372036854775807, "
        "got one of 5000 digits"
    )


def test_output_the_encoding_cannot_hold_is_one_line_not_a_traceback() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "okfast", "search", str(EXAMPLES / "bakery-ops"), "crème"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONIOENCODING": "ascii"},
    )
    assert (r.returncode, r.stderr) == (
        1,
        "okfast: cannot encode '\\xe8' as ascii; set PYTHONIOENCODING=utf-8\n",
    )


def test_json_output_is_utf8_whatever_bytes_a_path_holds(tmp_path: Path) -> None:
    """docs/spec.md §10.1: a bundle path's byte that is not UTF-8 reaches the
    JSON as a \\u escape of its surrogate, never as the raw byte (which
    made the output unreadable to a JSON parser)."""
    root = os.fsencode(tmp_path) + b"/nb\xff"
    os.mkdir(root)
    with open(root + b"/bread.md", "wb") as f:
        f.write(b"---\ntype: note\ntitle: Bread\n---\nsourdough loaf\n")
    for argv in (["search", root, b"sourdough", b"--json"], ["validate", root, b"--json"]):
        r = subprocess.run(
            [sys.executable, "-m", "okfast", *argv], capture_output=True, check=False
        )
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout.decode("utf-8"))
        assert b"\\udcff" in r.stdout and doc["bundle"] == os.fsdecode(root)


def test_python_dash_m() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "okfast", "validate", str(EXAMPLES / "data-glossary")],
        capture_output=True,
        text=True,
        check=False,
    )
    # The glossary bundle has one concept without frontmatter on purpose.
    assert r.returncode == 1
    assert "MissingType" in r.stdout


def test_resolve_over_the_example_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    cat = str(EXAMPLES / "catalog.json")
    assert main(["resolve", "--catalog", cat, "revenue recognition", "--limit", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[1] == "glossary:policies/revenue-recognition-policy"
    args = ["resolve", "--catalog", cat, "rollback temperature", "--strategy", "merged"]
    assert main([*args, "--fairness-quota", "1", "--json", "--stale", "strict"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["strategy"] == "merged" and doc["digest"].startswith("sha256:")
    srcs = [p["source_id"] for p in doc["passages"]]
    assert len(set(srcs)) >= 2 and not any(p["is_stale"] for p in doc["passages"])
    assert {e["reason"] for e in doc["exclusions"]} <= {"stale"}


def test_resolve_bad_catalog_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "catalog.json"
    bad.write_text('{"version": 2, "sources": []}')
    assert main(["resolve", "--catalog", str(bad), "x"]) == 2
    err = capsys.readouterr().err
    assert "[WrongVersion]" in err and "[EmptySources]" in err


def test_resolve_usage_errors() -> None:
    cat = str(EXAMPLES / "catalog.json")
    for extra in (["--stale", "sometimes"], ["--fairness-quota", "0"], ["--strategy", "best"]):
        with pytest.raises(SystemExit) as e:
            main(["resolve", "--catalog", cat, "x", *extra])
        assert e.value.code == 2


def _catalog_apart(tmp_path: Path) -> tuple[Path, Path]:
    """A catalog in ``conf/`` naming a bundle in ``data/`` beside it (§4.2)."""
    write_bundle(
        tmp_path / "data" / "kb", {"refunds.md": "---\ntitle: Refunds\n---\nRefund policy.\n"}
    )
    (tmp_path / "data" / "mem").mkdir()
    (tmp_path / "conf").mkdir()
    cat = tmp_path / "conf" / "catalog.json"
    sources = [
        {"id": "kb", "path": "../data/kb"},
        {"id": "mem", "path": "../data/mem", "role": "memory", "tier": "user"},
    ]
    cat.write_text(json.dumps({"version": 1, "sources": sources}))
    return cat, tmp_path


def test_catalog_root_lets_a_catalog_name_bundles_outside_its_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cat, root = _catalog_apart(tmp_path)
    assert main(["resolve", "--catalog", str(cat), "refund"]) == 2
    assert "[OutsideRoot]" in capsys.readouterr().err
    assert main(["resolve", "--catalog", str(cat), "--catalog-root", str(root), "refund"]) == 0
    assert "kb:refunds" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["resolve", "--catalog", str(cat), "--catalog-root", "", "refund"])
    assert e.value.code == 2


@pytest.mark.parametrize(
    "command",
    [
        ["resolve", "--catalog", "{cat}", "refund"],
        ["eval", "--catalog", "{cat}", "--qrels", "{qrels}"],
        ["tune", "--catalog", "{cat}", "--qrels", "{qrels}", "--budget", "2"],
        ["memory", "list", "--catalog", "{cat}", "--tenant", "t", "--user", "u"],
        ["mcp", "--catalog", "{cat}", "--settings", "{missing}"],
    ],
)
def test_every_command_reading_a_catalog_takes_its_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    cat, root = _catalog_apart(tmp_path)
    qrels = tmp_path / "q.jsonl"
    lines = [{"qid": str(i), "query": "refund", "relevant": {"kb:refunds": 2}} for i in range(5)]
    qrels.write_text("".join(json.dumps(q) + "\n" for q in lines))
    names = {"{cat}": str(cat), "{qrels}": str(qrels), "{missing}": str(tmp_path / "nope.json")}
    argv = [names.get(a, a) for a in command]
    assert main(argv) == 2
    assert "[OutsideRoot]" in capsys.readouterr().err
    code = main([*argv, "--catalog-root", str(root)])
    err = capsys.readouterr().err
    assert "OutsideRoot" not in err and "bad catalog" not in err
    # The mcp server stops at the missing settings file, after the catalog.
    assert code == (2 if command[0] == "mcp" else 0), err
    assert ("nope.json" in err) == (command[0] == "mcp")


def _governed_catalog(tmp_path: Path) -> str:
    from conftest import write_bundle

    write_bundle(
        tmp_path / "kb",
        {
            "new.md": "---\ntype: T\ntitle: Refund policy\nsupersedes: [old, gone]\n---\nrefund\n",
            "old.md": "---\ntype: T\ntitle: Old refund policy\n---\nrefund\n",
            "odd.md": "---\ntype: T\ntitle: Refund odd\nauthority: gossip\n---\nrefund\n",
        },
    )
    (tmp_path / "c.json").write_text('{"version": 1, "sources": [{"id": "kb", "path": "kb"}]}')
    return str(tmp_path / "c.json")


def test_resolve_explain_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog = _governed_catalog(tmp_path)
    assert (
        main(["resolve", "--catalog", catalog, "refund policy", "--explain", "--pin-exact-title"])
        == 0
    )
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[1] == "kb:new" and "pinned; #1 by grouped" in lines[2]
    excluded = lines.index("Excluded:")
    assert lines[excluded + 1].split() == ["kb:old", "superseded", "superseded", "by", "new"]
    assert "Warnings:" in lines and "Errors:" in lines
    assert any("UnknownAuthority" in line for line in lines)
    assert any("BrokenSupersession" in line for line in lines)
    assert lines[-1].startswith("Digest: sha256:")


def test_an_exclusions_detail_keeps_the_white_space_an_id_ends_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # docs/spec.md §10.2, §1.2: the detail names an id as it is.
    write_bundle(
        tmp_path / "kb",
        {
            "old.md": '---\ntype: Note\nsuperseded_by: "new "\n---\nzeta old\n',
            "new .md": "---\ntype: Note\ntitle: New\n---\nzeta new\n",
        },
    )
    (tmp_path / "cat.json").write_text('{"version": 1, "sources": [{"id": "s", "path": "kb"}]}')
    assert main(["resolve", "--catalog", str(tmp_path / "cat.json"), "zeta", "--explain"]) == 0
    out = capsys.readouterr().out.splitlines()
    excluded = out.index("Excluded:")
    assert out[excluded + 1] == "  s:old  superseded  superseded by new "


@pytest.mark.parametrize(
    ("flags", "key"),
    [
        (["--strategy", "merged", "--scorer", "bm25f"], "score="),
        (["--strategy", "reciprocal_rank"], "fused_score="),
        (["--strategy", "merged", "--scorer", "fusion"], "score="),
    ],
)
def test_explained_float_sort_keys_have_four_decimals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], key: str
) -> None:
    """docs/spec.md §10.1, §10.2: every float score in text output to four
    decimals (the sort key printed 0.12154770452930305)."""
    import re

    catalog = _governed_catalog(tmp_path)
    assert main(["resolve", "--catalog", catalog, "refund policy", "--explain", *flags]) == 0
    keys = re.findall(re.escape(key) + r"([0-9.e-]+)", capsys.readouterr().out)
    assert keys and all(re.fullmatch(r"\d+\.\d{4}", k) for k in keys), keys


def test_resolve_explain_json_carries_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import okfast

    catalog = _governed_catalog(tmp_path)
    assert main(["resolve", "--catalog", catalog, "refund", "--explain", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ctx = okfast.Resolver(okfast.Catalog.load(catalog)).search(okfast.Query("refund", explain=True))
    assert doc["digest"] == ctx.digest
    assert [(e["concept_id"], e["reason"]) for e in doc["exclusions"]] == [("old", "superseded")]
    assert [w["code"] for w in doc["warnings"]] == ["UnknownAuthority"]
    first = doc["passages"][0]["explanation"]
    assert first["matches"][0]["term"] == "refund" and first["rank"] == 1
    assert sum(m["weight"] for m in first["matches"]) == doc["passages"][0]["score"]


def test_validate_reports_governance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _governed_catalog(tmp_path)
    assert main(["validate", str(tmp_path / "kb")]) == 1  # BrokenSupersession is an error
    out = capsys.readouterr().out
    assert "BrokenSupersession" in out and "'gone'" in out and "UnknownAuthority" in out


def test_a_closed_pipe_ends_the_output_quietly() -> None:
    """`okfast resolve ... | head`: the reader is gone before anything is
    written; the command exits 1 with nothing on stderr (no traceback, no
    "Exception ignored" at exit)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "okfast",
                "resolve",
                "--catalog",
                str(EXAMPLES / "catalog.json"),
                "policy",
            ],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write_end)
    assert (r.returncode, r.stderr) == (1, "")


@pytest.mark.parametrize(
    ("argv", "status"),
    [
        (["resolve", "--catalog", str(EXAMPLES / "catalog.json"), ""], 2),  # a blank query
        (["resolve", "--catalog", str(EXAMPLES / "catalog.json"), "q", "--limit", "-1"], 2),
        (["resolve", "--catalog", str(EXAMPLES / "no-such-catalog.json"), "q"], 2),
        # Done, with its diagnostics summary on stderr.
        (["search", "{bundle}", "hello"], 0),
    ],
)
def test_a_stderr_whose_reader_left_keeps_the_commands_status(
    make_bundle: MakeBundle, argv: list[str], status: int
) -> None:
    """`okfast resolve … 2>&1 | head -0` for bad input: a message stderr
    cannot take is dropped, the status is the command's own (docs/spec.md
    §10.4), not the 1 of a failed write."""
    bundle = make_bundle({"a.md": "---\ntype: T\n---\nhello\n", "b.md": "---\ntype: T\n"})
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = subprocess.run(
            [sys.executable, "-m", "okfast", *(a.format(bundle=bundle) for a in argv)],
            stdout=subprocess.PIPE,
            stderr=write_end,
            text=True,
            check=False,
        )
    finally:
        os.close(write_end)
    assert r.returncode == status
    if status == 0:
        assert r.stdout.split()[1] == "a"


def _resolve_with_closed(fd: int) -> subprocess.CompletedProcess[str]:
    """``okfast resolve`` started with file descriptor ``fd`` closed (``>&-``)."""
    return subprocess.run(
        [sys.executable, "-m", "okfast", "resolve", "--catalog", str(EXAMPLES / "catalog.json")]
        + ["policy"],
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=lambda: os.close(fd),  # noqa: PLW1509 (no threads started yet)
    )


def test_a_closed_stdout_is_one_line_and_a_closed_stderr_silences_only_it() -> None:
    """docs/spec.md §10.4: started with stdout closed, one line and status 1;
    with stderr closed, the output as usual and status 0."""
    r = _resolve_with_closed(1)
    assert (r.returncode, r.stderr) == (1, "okfast: standard output is closed\n")
    r = _resolve_with_closed(2)
    assert r.returncode == 0 and "Refund policy" in r.stdout


def test_an_interrupt_outside_tune_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C during a load: status 130 and one line, not a traceback (§10.4)."""
    from okfast.catalog import Catalog

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Catalog, "load", interrupted)
    assert main(["resolve", "--catalog", CATALOG_JSON, "policy"]) == 130
    assert capsys.readouterr().err == "okfast: interrupted\n"


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_a_reader_leaving_mid_output_is_status_1(tmp_path: Path, json_flag: list[str]) -> None:
    """`okfast search … --json | head -c 10` with more output than a pipe
    holds: the reader goes away mid-write, status 1 (docs/spec.md §10.4)."""
    page = "---\ntype: X\ntitle: Concept {i}\n---\nhello world line {i}\n"
    write_bundle(tmp_path / "big", {f"c{i:04d}.md": page.format(i=i) for i in range(3000)})
    with subprocess.Popen(
        [sys.executable, "-m", "okfast", "search", str(tmp_path / "big"), "hello", *json_flag],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "OKFAST_CACHE_DIR": str(tmp_path / "cache")},
    ) as child:
        assert child.stdout is not None and child.stderr is not None
        assert len(child.stdout.read(10)) == 10
        child.stdout.close()
        err = child.stderr.read()
        assert (child.wait(60), err) == (1, b"")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_an_output_that_cannot_be_written_is_one_line(json_flag: list[str]) -> None:
    """A full disk (``/dev/full``): status 1 and one line, no traceback."""
    with open("/dev/full", "w") as full:
        r = subprocess.run(
            [sys.executable, "-m", "okfast", "resolve", "--catalog"]
            + [str(EXAMPLES / "catalog.json"), "policy", *json_flag],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert (r.returncode, r.stderr) == (1, "okfast: No space left on device\n")


# -- bad input: status 2, never a traceback (docs/spec.md §10.4) -------------------

#: What stderr holds: one line ``okfast: …`` (an OkfastError), argparse's usage
#: message, or a bad catalog's heading and its problems.
ONE_LINE, USAGE, CATALOG = "one line", "usage", "catalog"
GLOSSARY = str(EXAMPLES / "data-glossary")
CATALOG_JSON = str(EXAMPLES / "catalog.json")
RESOLVE = ["resolve", "--catalog", CATALOG_JSON]


def run_bad(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int | str | None, str]:
    """Status and stderr of one command. argparse's usage errors exit through
    SystemExit; any other exception escapes and fails the test (it would be a
    traceback for the user)."""
    try:
        code: int | str | None = main(argv)
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "option"),
    [
        (["resolve", "--catalog", CATALOG_JSON, "q"], "--fairness-quota"),
        (["eval", "--catalog", CATALOG_JSON, "--qrels", "q"], "--fairness-quota"),
        (["eval", "--catalog", CATALOG_JSON, "--qrels", "q"], "--baseline-fairness-quota"),
    ],
)
def test_a_fairness_quota_takes_the_bound_its_help_states(
    command: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/spec.md §10.1: the help's bound is the one the parser enforces."""
    from okfast.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args([command[0], "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    bounds = re.search(re.escape(option) + r" K [^(]*\(1 to (\d+)\)", help_text)
    assert bounds is not None, help_text
    most = int(bounds.group(1))
    args = build_parser().parse_args([*command, option, str(most)])
    assert getattr(args, option[2:].replace("-", "_")) == most
    with pytest.raises(SystemExit):
        build_parser().parse_args([*command, option, str(most + 1)])
    assert capsys.readouterr().err.rstrip().endswith(f"must be <= {most}: {most + 1}")


@pytest.mark.parametrize(
    "argv",
    [
        ["search", GLOSSARY, "q", "--settings", ""],
        ["resolve", "--catalog", "", "q"],
        ["resolve", "--catalog", CATALOG_JSON, "q", "--settings", ""],
        ["memory", "list", "--catalog", ""],
        ["eval", "--catalog", "", "--qrels", "q.jsonl"],
        ["eval", "--catalog", CATALOG_JSON, "--qrels", ""],
        ["eval", "--catalog", CATALOG_JSON, "--qrels", "q", "--queries", ""],
        ["eval", "--catalog", CATALOG_JSON, "--qrels", "q", "--settings", ""],
        ["eval", "--catalog", CATALOG_JSON, "--qrels", "q", "--baseline", ""],
        ["eval", "--catalog", CATALOG_JSON, "--qrels", "q", "--run-out", ""],
        ["tune", "--catalog", ""],
        ["tune", "--catalog", CATALOG_JSON, "--qrels", ""],
        ["tune", "--catalog", CATALOG_JSON, "--queries", ""],
        ["tune", "--catalog", CATALOG_JSON, "--settings", ""],
        ["tune", "--catalog", CATALOG_JSON, "--out", ""],
        ["tune", "--catalog", CATALOG_JSON, "--plot", ""],
        ["mcp", "--catalog", ""],
        ["mcp", "--catalog", CATALOG_JSON, "--settings", ""],
    ],
)
def test_an_empty_file_name_is_a_usage_error_naming_the_option(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/spec.md §10.1: an empty path names no file (an unset variable),
    never the working directory a message would then name."""
    code, err = run_bad(argv, capsys)
    option = argv[argv.index("") - 1]
    assert code == 2
    assert err.rstrip().endswith(f"argument {option}: the path is empty"), err
    assert os.getcwd() not in err


def check_refused(code: int | str | None, err: str, kind: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    if kind == ONE_LINE:
        assert len(lines) == 1 and lines[0].startswith("okfast: "), err
    elif kind == USAGE:
        assert lines[0].startswith("usage: okfast") and ": error: " in lines[-1], err
    else:
        assert lines[0].startswith("okfast: bad catalog ") and len(lines) >= 2, err
        assert all(line.startswith("  [") for line in lines[1:]), err


BAD_INPUT = {
    # search
    "search blank path": (["search", "", "x"], ONE_LINE),
    "search blank query": (["search", GLOSSARY, ""], ONE_LINE),
    "search white-space query": (["search", GLOSSARY, "  \t"], ONE_LINE),
    "search negative limit": (["search", GLOSSARY, "x", "--limit", "-1"], USAGE),
    "search huge limit": (["search", GLOSSARY, "x", "--limit", "9" * 20], USAGE),
    "search unknown bundle": (["search", "/definitely/not/here", "x"], ONE_LINE),
    "search unknown option": (["search", GLOSSARY, "x", "--fuzzy"], USAGE),
    # validate
    "validate blank path": (["validate", ""], ONE_LINE),
    "validate negative-looking path": (["validate", "-1"], ONE_LINE),
    "validate unknown bundle": (["validate", "/definitely/not/here"], ONE_LINE),
    "validate unknown option": (["validate", GLOSSARY, "--strict"], USAGE),
    # resolve
    "resolve blank query": ([*RESOLVE, ""], ONE_LINE),
    "resolve white-space query": ([*RESOLVE, "   "], ONE_LINE),
    # An empty file name is a usage error, never the working directory (§10.1).
    "resolve blank catalog": (["resolve", "--catalog", "", "x"], USAGE),
    "resolve unknown catalog": (
        ["resolve", "--catalog", "/definitely/not/here.json", "x"],
        CATALOG,
    ),
    "resolve negative limit": ([*RESOLVE, "x", "--limit", "-1"], USAGE),
    "resolve negative min-score": ([*RESOLVE, "x", "--min-score", "-1"], USAGE),
    "resolve negative quota": ([*RESOLVE, "x", "--fairness-quota", "-1"], USAGE),
    "resolve huge quota": (
        [*RESOLVE, "x", "--strategy", "merged", "--fairness-quota", "9" * 20],
        USAGE,
    ),
    "resolve negative tolerance": ([*RESOLVE, "x", "--stale", "tolerate:-1"], USAGE),
    # Numbers are ASCII digits (docs/spec.md §10.1): int() reads these as 10 and 3.
    "resolve underscored limit": ([*RESOLVE, "x", "--limit", "1_0"], USAGE),
    "resolve Arabic-Indic limit": ([*RESOLVE, "x", "--limit", "\u0663"], USAGE),
    "resolve full-width min-score": ([*RESOLVE, "x", "--min-score", "\uff11.5"], USAGE),
    "resolve underscored tolerance": ([*RESOLVE, "x", "--stale", "tolerate:1_0"], USAGE),
    "resolve blank stale policy": ([*RESOLVE, "x", "--stale", ""], USAGE),
    "resolve unknown strategy": ([*RESOLVE, "x", "--strategy", "best"], USAGE),
    "resolve unknown authority": ([*RESOLVE, "x", "--min-authority", "supreme"], USAGE),
    "resolve unknown option": ([*RESOLVE, "x", "--fast"], USAGE),
    "unknown command": (["find", "x"], USAGE),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUT))
def test_bad_input_exits_2_without_a_traceback(
    case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, kind = BAD_INPUT[case]
    code, err = run_bad(argv, capsys)
    check_refused(code, err, kind)


def test_a_blank_resolve_query_is_one_line_from_the_shell() -> None:
    """The command a user types, through the installed entry point's module."""
    r = subprocess.run(
        [sys.executable, "-m", "okfast", "resolve", "--catalog", CATALOG_JSON, ""],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (r.returncode, r.stdout, r.stderr) == (
        2,
        "",
        "okfast: Query.text must be non-blank text\n",
    )


def test_a_message_over_several_lines_is_shown_on_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from okfast import cli
    from okfast.errors import OkfastError

    def fail(path: str, **kw: object) -> None:
        raise OkfastError("first\nsecond")

    monkeypatch.setattr(cli.Bundle, "load", fail)
    code, err = run_bad(["validate", GLOSSARY], capsys)
    assert (code, err) == (2, "okfast: first; second\n")


def test_search_and_resolve_take_a_settings_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/spec.md §13: ``--settings`` supplies the scorer and its
    parameters; a flag wins; a bad entry is a line on stderr; an unreadable
    file is one line and status 2."""
    settings = tmp_path / "s.json"
    settings.write_text('{"version": 1, "scorer": "bm25f", "rrf_k": 0}')
    catalog = str(Path(__file__).parent.parent / "examples" / "catalog.json")
    assert (
        main(["resolve", "--catalog", catalog, "croissant", "--json", "--settings", str(settings)])
        == 0
    )
    out, err = capsys.readouterr()
    assert "[IllegalValue]" in err and "rrf_k" in err
    scores = [p["score"] for p in json.loads(out)["passages"]]
    assert scores and all(isinstance(s, float) for s in scores)
    bundle = str(Path(__file__).parent.parent / "examples" / "bakery-ops")
    assert main(["search", bundle, "croissant", "--json", "--settings", str(settings)]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits and all(isinstance(h["score"], float) for h in hits)
    argv = ["search", bundle, "croissant", "--json", "--settings", str(settings)]
    assert main([*argv, "--scorer", "weighted_count"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits and all(isinstance(h["score"], int) for h in hits)
    assert main(["search", bundle, "croissant", "--settings", str(tmp_path / "no.json")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_every_command_names_a_settings_file_as_it_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/spec.md §13.4: ``okfast: settings FILE: [Code] message`` names
    FILE as ``--settings`` gave it, in ``resolve`` as in ``search``."""
    monkeypatch.chdir(tmp_path)
    Path("s.json").write_text('{"version": 1, "bogus": 1}')
    examples = Path(__file__).parent.parent / "examples"
    catalog = str(examples / "catalog.json")
    assert main(["resolve", "--catalog", catalog, "croissant", "--settings", "s.json"]) == 0
    resolved = capsys.readouterr().err
    assert main(["search", str(examples / "bakery-ops"), "croissant", "--settings", "s.json"]) == 0
    searched = capsys.readouterr().err
    line = "okfast: settings s.json: [UnknownProperty] unknown settings property 'bogus'"
    assert [s for s in resolved.splitlines() if "settings" in s] == [line]
    assert [s for s in searched.splitlines() if "settings" in s] == [line]


def test_a_diagnostic_line_holds_only_the_parts_that_are_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = _governed_catalog(tmp_path)
    assert main(["resolve", "--catalog", catalog, "zebra"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # NoMatches names no source and no path: the message follows the code.
    assert lines[-1] == f"  {'warning':<7} {'NoMatches':<20} No passages matched query 'zebra'."


def test_a_bm25f_explanation_leaves_out_a_token_found_in_no_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/spec.md §12.5: only the tokens that add to the score are listed."""
    catalog = _governed_catalog(tmp_path)
    argv = ["resolve", "--catalog", catalog, "refund zebra", "--explain", "--scorer", "bm25f"]
    assert main(argv) == 0
    terms = [line for line in capsys.readouterr().out.splitlines() if "terms: " in line]
    assert terms and all("ZEBRA" not in t for t in terms)
    assert all(
        t.endswith(")]") and "; terms: REFUND (idf " in t and "body 1 → " in t for t in terms
    )


def test_a_load_stopped_mid_way_erases_its_progress_bar(
    make_bundle: MakeBundle, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/spec.md §10.1: the bar is erased when the load ends — one
    stopped by Ctrl-C or an error too, which never reports "done" (§1.8)."""
    import time

    from okfast import cli

    root = make_bundle({"a.md": "---\ntype: T\ntitle: A\n---\nx\n"})

    def slow_bar() -> cli._ProgressBar:
        bar = cli._ProgressBar()
        bar.start = time.monotonic() - 5  # past the first second: shown
        return bar

    def interrupted(path: str, *, progress: Any, **kwargs: Any) -> Any:
        progress("read", 1, 2)
        raise KeyboardInterrupt

    monkeypatch.setattr(cli._ProgressBar, "maybe", staticmethod(slow_bar))
    monkeypatch.setattr(cli.Bundle, "load", staticmethod(interrupted))
    assert main(["validate", str(root)]) == 130
    err = capsys.readouterr().err
    assert err.startswith("\rokfast: read ") and err.endswith("\r\033[Kokfast: interrupted\n")


def test_help_to_a_full_disk_is_one_line_not_a_traceback() -> None:
    # docs/spec.md §10.4: --help is output like any other.
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "okfast", "--help"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert (done.returncode, done.stderr) == (1, "okfast: No space left on device\n")


@pytest.mark.skipif(sys.platform == "win32", reason="a file name holding a line feed")
def test_each_problem_is_one_line_whatever_a_path_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/spec.md §10.1: in a listing of one problem per line, a line feed
    or carriage return in a path is written as \\n or \\r, in a pipe and on a
    terminal alike: a file name cannot split a problem or forge another."""
    import io

    forged = f"{'error':<7} {'Forged':<20} x.md"
    root = write_bundle(
        tmp_path / "b",
        {"ok.md": "---\ntype: T\ntitle: A\n---\nalpha\n", f"bad\n{forged}.md": "---\n---\n"},
    )
    assert main(["validate", str(root)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{'error':<7} {'InvalidConceptId':<20} ")
    assert f"bad\\n{forged}.md: Concept file name" in lines[0]
    (tmp_path / "c.json").write_text(
        json.dumps({"version": 1, "sources": [{"id": "s", "path": "b"}]})
    )
    assert main(["resolve", "--catalog", str(tmp_path / "c.json"), "alpha"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2:] == [
        "Diagnostics:",
        f"  {'error':<7} {'InvalidConceptId':<20} s:bad\\n{forged}.md Concept file name "
        "contains a control character or a backslash; rename the file",
    ]

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    (tmp_path / "bad.json").write_text(
        json.dumps({"version": 1, "sources": [{"id": "a", "path": "x\n[Forged] y\rz"}]})
    )
    for stream in (io.StringIO(), Tty()):
        monkeypatch.setattr(sys, "stderr", stream)
        assert main(["resolve", "--catalog", str(tmp_path / "bad.json"), "q"]) == 2
        lines = stream.getvalue().splitlines()  # which ends lines at \r too
        assert len(lines) == 2 and lines[0].startswith("okfast: bad catalog")
        assert "x\\n[Forged] y\\rz is not an existing directory" in lines[1]


def test_json_output_is_written_as_it_is_encoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/spec.md §10.1: JSON output is encoded as it is written, in pieces
    the output's buffer holds, escaped as a whole text would be; a large
    result is never held twice over as one text."""
    from okfast import cli

    yielded = 0

    class Counted(list[str]):
        def __iter__(self) -> Any:
            nonlocal yielded
            for x in super().__iter__():
                yielded += 1
                yield x

    writes: list[tuple[int, str]] = []

    class Out:
        def write(self, text: str) -> int:
            writes.append((yielded, text))
            return len(text)

    items = [f"item {i} \udcff \x85 é" for i in range(5000)]
    monkeypatch.setattr(sys, "stdout", Out())
    cli._print_json({"b": Counted(items), "a": 1})
    text = "".join(t for _, t in writes)
    assert json.loads(text) == {"a": 1, "b": items}
    want = json.dumps({"a": 1, "b": items}, ensure_ascii=False, sort_keys=True, indent=2) + "\n"
    assert text == want.replace("\udcff", "\\udcff").replace("\x85", "\\u0085")
    assert writes[0][0] < len(items) // 10, "the first piece waited for the whole encoding"
    assert max(len(t) for _, t in writes) <= 2048
