"""``import okfast`` (and the CLI, and the integrations' shared modules) import
no framework: the extras stay optional, and the CLI starts as fast without them."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
from integration_extras import IN_CI

FRAMEWORKS = {
    "mcp": "mcp",
    "mcp_types": "mcp",
    "langchain_core": "langchain",
    "llama_index": "llama-index",
    "pydantic": "mcp",
    "starlette": "mcp",
    "uvicorn": "mcp",
    "anyio": "mcp",
    "httpx": "mcp",
    "ray": "ray",
}


def test_okfast_imports_no_framework() -> None:
    missing = [m for m in FRAMEWORKS if importlib.util.find_spec(m) is None]
    # Only meaningful where the frameworks could be imported: CI installs them all.
    if missing:
        extras = sorted({FRAMEWORKS[m] for m in missing})
        if IN_CI:
            pytest.fail(f"CI must install the extras {extras} (missing: {missing})")
        pytest.skip(f"not installed: {missing} (pip install -e '.[test]')")
    code = (
        "import json, sys\n"
        "import okfast, okfast.cli, okfast.integrations\n"
        "import okfast.integrations.records, okfast.integrations.searching\n"
        "import okfast.integrations.mcp_cli\n"
        "import okfast.distributed\n"
        "okfast.cli.build_parser()\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    imported = set(json.loads(out))
    assert "okfast" in imported
    assert not imported & set(FRAMEWORKS), sorted(imported & set(FRAMEWORKS))
