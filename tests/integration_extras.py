"""What the integrations' tests share: importing an extra's package, and a
private copy of the example catalog (naming a settings file or not).

An extra that is not installed skips its test module with the command that
installs it; under CI (``CI`` set, as ``.ci/run`` runs) it fails the run
instead, so an integration can never go untested there unnoticed.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

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


def copy_examples_naming_settings(tmp_path: Path, settings: dict[str, Any]) -> tuple[Path, Path]:
    """:func:`copy_examples` whose catalog names a settings file beside it
    (``"settings": "./okfast-settings.json"``, where ``okfast tune --apply``
    writes), holding ``settings``; returns the catalog's path and the file's."""
    catalog = copy_examples(tmp_path)
    spec = json.loads(catalog.read_text())
    spec["settings"] = "./okfast-settings.json"
    catalog.write_text(json.dumps(spec))
    named = catalog.parent / "okfast-settings.json"
    named.write_text(json.dumps(settings))
    return catalog, named
