"""What the integrations' tests share: importing an extra's package, and a
private copy of the example catalog.

An extra that is not installed skips its test module with the command that
installs it; under CI (``CI`` set, as ``.ci/run`` runs) it fails the run
instead, so an integration can never go untested there unnoticed.
"""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path
from types import ModuleType

import pytest
from conftest import REPO

EXAMPLES = REPO / "examples"
IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require(module: str, extra: str) -> ModuleType:
    """``module``, imported; a missing one skips (fails under CI) the calling module."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        why = f"{module} is not importable ({e}): pip install -e '.[{extra}]'"
        if IN_CI:
            pytest.fail(f"CI must run the {extra} integration's tests, but {why}", pytrace=False)
        pytest.skip(why, allow_module_level=True)


def copy_examples(tmp_path: Path) -> Path:
    """The example catalog copied under ``tmp_path`` (memory is written there,
    never into the repository); returns the copy's ``catalog.json``."""
    dest = tmp_path / "examples"
    shutil.copytree(EXAMPLES, dest)
    return dest / "catalog.json"
