"""The README's two set-up commands stay true, and CI runs the same test command."""

from __future__ import annotations

import re

from conftest import REPO


def _sh_blocks() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```sh\n(.*?)```", text, flags=re.S)


def test_readme_opens_with_two_commands_and_ci_runs_the_second() -> None:
    blocks = _sh_blocks()
    assert len(blocks) >= 2
    first, second = blocks[0].strip(), blocks[1].strip()
    assert "\n" not in first and "\n" not in second
    assert "okfast resolve --catalog examples/catalog.json" in first
    assert "pytest" in second
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert second in ci.splitlines(), "'.ci/run' must run the README's test command verbatim"
