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


def test_a_catalog_without_memory_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "c.json").write_text('{"version": 1, "sources": [{"id": "kb", "path": "kb"}]}')
    code, _, err = run(capsys, "memory", "list", "--catalog", str(tmp_path / "c.json"))
    assert code == 2 and "no enabled memory sources" in err
