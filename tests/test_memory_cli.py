"""``okfast memory``: an operator answering access and erasure requests from a shell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from okfast.cli import main


@pytest.fixture
def catalog(tmp_path: Path) -> str:
    for d in ("kb", "mem-user", "mem-session"):
        (tmp_path / d).mkdir()
    doc = {
        "version": 1,
        "sources": [
            {"id": "kb", "path": "kb"},
            {"id": "mu", "path": "mem-user", "role": "memory", "tier": "user"},
            {"id": "ms", "path": "mem-session", "role": "memory", "tier": "session"},
        ],
    }
    (tmp_path / "catalog.json").write_text(json.dumps(doc))
    return str(tmp_path / "catalog.json")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_write_read_list_delete_round_trip(
    catalog: str, capsys: pytest.CaptureFixture[str]
) -> None:
    who = ["--catalog", catalog, "--tenant", "acme", "--user", "alice"]
    code, out, _ = run(
        capsys, "memory", "write", *who, "--user-text", "my dog is Rex", "--agent-text", "noted"
    )
    assert code == 0 and out.startswith("written: user:memory-user/acme-")
    code, out, _ = run(
        capsys, "memory", "write", *who, "--session", "s1", "--tier", "session",
        "--name", "prefs", "--title", "Preferences", "--description", "What alice likes.",
        "--section", "Likes terse answers.",
    )  # fmt: skip
    assert code == 0
    code, out, _ = run(capsys, "memory", "read", *who, "--session", "s1", "Rex terse", "--json")
    doc = json.loads(out)
    assert code == 0 and [p["source_id"] for p in doc["passages"]] == [
        "memory:session",
        "memory:user",
    ]
    # A BM25F score is printed to four decimals, as by search and resolve
    # (docs/spec.md §10.1); the weighted count as the integer it is.
    code, out, _ = run(capsys, "memory", "read", *who, "Rex", "--scorer", "bm25f")
    score = out.split()[0]
    assert code == 0 and len(score.partition(".")[2]) == 4, out
    code, out, _ = run(capsys, "memory", "read", *who, "Rex")
    assert code == 0 and out.split()[0].isdigit(), out
    code, out, _ = run(capsys, "memory", "list", *who, "--json", "--bodies")
    doc = json.loads(out)
    assert [c["tier"] for c in doc["concepts"]] == ["user"]  # alice's own scope has no session
    assert "> my dog is Rex" in doc["concepts"][0]["body"]
    # Another user sees nothing of alice's.
    code, out, _ = run(
        capsys, "memory", "list", "--catalog", catalog, "--tenant", "acme", "--user", "bob"
    )
    assert code == 0 and "No memory" in out
    # Erasure with the sessions.
    code, out, _ = run(capsys, "memory", "delete", *who, "--cascade", "--json")
    assert code == 0 and json.loads(out)["tiers_deleted"] == ["session", "user"]
    code, out, _ = run(capsys, "memory", "read", *who, "--session", "s1", "Rex terse", "--json")
    assert json.loads(out)["passages"] == []


def test_refusals_exit_nonzero(
    catalog: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "memory", "list", "--catalog", catalog, "--tenant", "..")
    assert code == 2 and "not a safe id" in err
    code, _, err = run(
        capsys, "memory", "write", "--catalog", catalog, "--tenant", "a", "--user", "b",
        "--tier", "tenant", "--user-text", "x", "--agent-text", "y",
    )  # fmt: skip
    assert code == 1 and "not configured" in err
    code, _, err = run(
        capsys, "memory", "write", "--catalog", catalog, "--tenant", "a", "--user", "b"
    )
    assert code == 2 and "needs" in err
    (tmp_path / "bad.json").write_text('{"version": 2, "sources": []}')
    code, _, err = run(capsys, "memory", "list", "--catalog", str(tmp_path / "bad.json"))
    assert code == 2 and "WrongVersion" in err


def test_a_refused_delete_says_so_and_not_that_nothing_was_found(
    catalog: str, capsys: pytest.CaptureFixture[str]
) -> None:
    who = ["--catalog", catalog, "--tenant", "acme", "--user", "alice"]
    code, out, err = run(capsys, "memory", "delete", *who, "--tier", "session")
    assert (code, out) == (1, "")
    assert err == "okfast: not deleted: scope acme/alice owns user memory, not session memory\n"
    # Nothing refused and nothing there: that is what it says.
    code, out, err = run(capsys, "memory", "delete", *who)
    assert (code, out, err) == (0, "deleted for scope acme/alice: nothing (no memory found)\n", "")


@pytest.mark.parametrize(
    "concept_flags",
    [
        ["--name", "prefs"],
        ["--title", "T", "--description", "D"],
        ["--section", "S"],
        ["--type", "Fact"],
    ],
)
def test_a_capture_with_concept_flags_is_a_usage_error(
    catalog: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, concept_flags: list[str]
) -> None:
    who = ["--catalog", catalog, "--tenant", "acme", "--user", "alice"]
    code, out, err = run(
        capsys, "memory", "write", *who, "--user-text", "my dog is Rex", *concept_flags
    )
    assert (code, out) == (2, "")
    assert "not both" in err and concept_flags[0] in err
    # Nothing was captured.
    assert not any(p.is_file() for p in (tmp_path / "mem-user").rglob("*"))


def test_a_section_from_a_closed_stdin_is_a_usage_error(
    catalog: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--section -`` with stdin closed (``<&-``, so ``sys.stdin`` is None):
    one line and status 2, not a traceback (docs/spec.md §10.4)."""
    monkeypatch.setattr("sys.stdin", None)
    code, _, err = run(
        capsys, "memory", "write", "--catalog", catalog, "--tenant", "acme", "--user", "alice",
        "--name", "n", "--title", "T", "--description", "D", "--section", "-",
    )  # fmt: skip
    assert (code, err) == (2, "okfast: --section -: standard input is closed\n")


@pytest.mark.parametrize("encoding", ["utf-8", "ascii"])
def test_a_section_from_stdin_is_read_as_utf8_whatever_the_locale(
    catalog: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    encoding: str,
) -> None:
    """docs/spec.md §10.1, §10.4: ``--section -`` reads UTF-8 bytes, whatever
    stdin's text encoding; bytes that are not UTF-8 are bad usage (one line,
    status 2), never a UnicodeDecodeError traceback."""
    import io

    args = (
        "memory", "write", "--catalog", catalog, "--tenant", "acme", "--user", "alice",
        "--name", "n", "--title", "T", "--description", "D", "--section", "-",
    )  # fmt: skip
    bad = io.TextIOWrapper(io.BytesIO(b"abc\xff\n"), encoding=encoding)
    monkeypatch.setattr("sys.stdin", bad)
    code, _, err = run(capsys, *args)
    assert code == 2 and err.startswith("okfast: --section -: standard input is not UTF-8 text (")
    assert err.count("\n") == 1
    # Line ends as text mode reads them: CRLF and CR are LF.
    good = io.TextIOWrapper(io.BytesIO("café\r\nbar\rbaz\n".encode()), encoding=encoding)
    monkeypatch.setattr("sys.stdin", good)
    code, out, err = run(capsys, *args)
    assert (code, err) == (0, "")
    [written] = [p for p in (tmp_path / "mem-user").rglob("n.md")]
    assert written.read_bytes().decode("utf-8").endswith("café\nbar\nbaz\n")


def test_a_section_from_stdin_drops_one_leading_byte_order_mark(
    catalog: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/spec.md §10.3: stdin is read as ``utf-8-sig``: a BOM (a Windows
    editor's) is not an invisible U+FEFF at the section's start; only one."""
    import io

    args = (
        "memory", "write", "--catalog", catalog, "--tenant", "acme", "--user", "alice",
        "--name", "n", "--title", "T", "--description", "D", "--section", "-",
    )  # fmt: skip
    stdin = io.TextIOWrapper(io.BytesIO(b"\xef\xbb\xbfone\n"), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stdin)
    assert run(capsys, *args)[0] == 0
    [written] = [p for p in (tmp_path / "mem-user").rglob("n.md")]
    body = written.read_text(encoding="utf-8").split("---\n", 2)[2]
    assert "\ufeff" not in body and body.endswith("one\n")
    stdin = io.TextIOWrapper(io.BytesIO(b"\xef\xbb\xbf\xef\xbb\xbftwo\n"), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stdin)
    assert run(capsys, *args)[0] == 0
    assert written.read_text(encoding="utf-8").endswith("\n\ufefftwo\n")


def test_a_catalog_without_memory_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "c.json").write_text('{"version": 1, "sources": [{"id": "kb", "path": "kb"}]}')
    code, _, err = run(capsys, "memory", "list", "--catalog", str(tmp_path / "c.json"))
    assert code == 2 and "no enabled memory sources" in err


def test_a_catalog_path_in_a_message_is_escaped_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # docs/spec.md §10.1: every message on a terminal's stderr is escaped.
    (tmp_path / "kb").mkdir()
    named = tmp_path / "c\x1b[2J.json"
    named.write_text('{"version": 1, "sources": [{"id": "kb", "path": "kb"}]}')
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    code, _, err = run(capsys, "memory", "list", "--catalog", str(named))
    assert code == 2 and "no enabled memory sources" in err
    assert "\x1b" not in err and "\\x1b[2J" in err


# -- bad input: status 2, never a traceback (docs/spec.md §10.4) -------------------


def _bad_input_cases(catalog: str) -> dict[str, tuple[list[str], str]]:
    c = ["--catalog", catalog]
    who = [*c, "--tenant", "acme", "--user", "alice"]
    note = ["--name", "note", "--title", "Note", "--description", "A note.", "--section", "x"]

    def without(flag: str, value: str) -> list[str]:
        at = note.index(flag)
        return [*note[:at], flag, value, *note[at + 2 :]]

    return {
        # list
        "list blank tenant": (["list", *c, "--tenant", ""], "one line"),
        "list negative tenant": (["list", *c, "--tenant", "-1"], "one line"),
        "list user without tenant": (["list", *c, "--user", "alice"], "one line"),
        "list blank catalog": (["list", "--catalog", ""], "usage"),  # §10.1
        "list unknown catalog": (["list", "--catalog", "/definitely/not/here.json"], "catalog"),
        "list unknown option": (["list", *c, "--all"], "usage"),
        # read
        "read blank query": (["read", *who, ""], "one line"),
        "read white-space query": (["read", *who, "  "], "one line"),
        "read negative limit": (["read", *who, "x", "--limit", "-1"], "usage"),
        "read huge limit": (["read", *who, "x", "--limit", "9" * 20], "usage"),
        "read unknown tenant id": (["read", *c, "--tenant", "..", "x"], "one line"),
        "read unknown option": (["read", *who, "x", "--tier", "user"], "usage"),
        # write
        "write blank name": (["write", *who, *without("--name", "")], "one line"),
        "write unsafe name": (["write", *who, *without("--name", "../x")], "one line"),
        "write blank title": (["write", *who, *without("--title", " ")], "one line"),
        "write blank description": (["write", *who, *without("--description", "\t")], "one line"),
        "write blank section": (["write", *who, *without("--section", "")], "one line"),
        "write nothing": (["write", *who], "one line"),
        "write blank session": (["write", *who, "--session", "", *note], "one line"),
        "write unknown tier": (["write", *who, "--tier", "attic", *note], "usage"),
        # delete
        "delete blank user": (["delete", *c, "--tenant", "acme", "--user", ""], "one line"),
        "delete negative tenant": (["delete", *c, "--tenant", "-1"], "one line"),
        "delete unknown tier": (["delete", *who, "--tier", "attic"], "usage"),
        "delete unknown option": (["delete", *who, "--force"], "usage"),
        "unknown memory command": (["erase", *who], "usage"),
    }


BAD_INPUT_NAMES = sorted(_bad_input_cases("c.json"))


@pytest.mark.parametrize("case", BAD_INPUT_NAMES)
def test_bad_input_exits_2_without_a_traceback(
    case: str, catalog: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from test_cli import check_refused, run_bad

    argv, kind = _bad_input_cases(catalog)[case]
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    code, err = run_bad(["memory", *argv], capsys)
    check_refused(code, err, kind)
    # Refused before anything reached the store.
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_store_diagnostic_is_one_line_whatever_its_message_quotes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # docs/spec.md §10.1: a line feed or carriage return in a problem's line
    # is written as \n or \r, so it cannot split the problem or forge another.
    from okfast.memory.cli import _report
    from okfast.model import Diagnostic

    quoted = Diagnostic("MalformedStaleAfter", 'stale_after "a\nerror\rb"', None, "mu", "warning")
    assert _report([quoted]) == 0
    assert capsys.readouterr().err.splitlines() == [
        f'{"warning":<7} {"MalformedStaleAfter":<18} mu: stale_after "a\\nerror\\rb"'
    ]


def test_a_store_diagnostic_names_its_file_from_the_tier_root(
    capsys: pytest.CaptureFixture[str], catalog: str
) -> None:
    # docs/spec.md §6.3, §10.3: a damaged memory file is found by its path
    # from the tier root, as a passage's path is.
    from okfast.memory import Scope, Tier, memory_path

    here = memory_path(Tier.USER, Scope("A", "alice"))
    scope_dir = Path(catalog).parent / "mem-user" / here
    scope_dir.mkdir(parents=True)
    (scope_dir / "bad.md").write_bytes(b"---\ntype: T\n---\n\xff\n")
    code, _out, err = run(
        capsys, "memory", "read", "--catalog", catalog, "--tenant", "A", "--user", "alice", "x"
    )
    assert code == 1
    assert err.splitlines() == [
        f"{'error':<7} {'InvalidUtf8':<18} memory:user:{here}/bad.md: "
        "File is not valid UTF-8 (first invalid byte at offset 16); re-save it as UTF-8"
    ]
