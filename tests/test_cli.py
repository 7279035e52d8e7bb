"""The CLI: search and validate, text and JSON, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO, MakeBundle
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


def test_bad_limit_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as e:
        main(["search", str(EXAMPLES / "bakery-ops"), "x", "--limit", "-1"])
    assert e.value.code == 2


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
