"""The layout's rules hold (docs/architecture.md): the core's modules form one
order, the core never knows about Python, and Python talks to a loaded bundle
only through ``okfast.bundle``."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO

CORE = REPO / "rust" / "core" / "src"
#: The core's modules, each allowed to use only those before it.
ORDER = [
    "error",
    "diagnostic",
    "progress",
    "array",
    "text",
    "yaml",
    "concept",
    "fs",
    "index",
    "cache",
    "bundle",
    "score",
    "bm25f",
    "order",
]


def _module_of(path: Path) -> str:
    return path.relative_to(CORE).parts[0].removesuffix(".rs")


def _code_before_tests(path: Path) -> str:
    """A source file's code, without its unit tests (which may use anything)
    and without comments (a doc link is not a use)."""
    if path.name == "tests.rs" or path.name.endswith("_tests.rs"):
        return ""
    text = path.read_text(encoding="utf-8").split("#[cfg(test)]", 1)[0]
    return "\n".join(line.split("//", 1)[0] for line in text.splitlines())


def test_every_core_module_is_in_the_documented_order() -> None:
    found = {_module_of(p) for p in CORE.rglob("*.rs")} - {"lib", "testing"}
    assert found == set(ORDER)
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    line = next(ln for ln in doc.splitlines() if ln.startswith("`error`"))
    assert re.findall(r"`(\w+)`", line) == ORDER


def upward_uses(here: str, code: str) -> list[str]:
    """The modules after ``here`` in :data:`ORDER` that ``code`` uses."""
    out = []
    for used in sorted(set(re.findall(r"\bcrate::(\w+)", code))):
        used = "error" if used == "Error" else used  # the crate root re-exports it
        if ORDER.index(used) > ORDER.index(here):
            out.append(used)
    return out


def test_core_modules_use_only_modules_before_them() -> None:
    wrong = []
    for path in sorted(CORE.rglob("*.rs")):
        here = _module_of(path)
        if here not in ("lib", "testing"):
            wrong += [
                f"{path.relative_to(REPO)} uses crate::{u}"
                for u in upward_uses(here, _code_before_tests(path))
            ]
    assert wrong == []


def test_the_order_check_sees_upward_and_sideways_uses() -> None:
    code = "use crate::bundle::Bundle;\nuse crate::text::fold;\nlet e = crate::Error::Cancelled;"
    assert upward_uses("index", code) == ["bundle"]
    assert upward_uses("bundle", code) == []
    assert upward_uses("error", "crate::progress::Progress") == ["progress"]


def test_the_core_never_imports_pyo3() -> None:
    offenders = [
        str(p.relative_to(REPO))
        for p in CORE.rglob("*.rs")
        if re.search(r"\bpyo3\b", p.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    manifest = (REPO / "rust" / "core" / "Cargo.toml").read_text(encoding="utf-8")
    assert "pyo3" not in manifest


def test_only_the_bundle_module_reaches_into_a_native_snapshot() -> None:
    package = REPO / "python" / "okfast"
    offenders = [
        str(p.relative_to(REPO))
        for p in package.rglob("*.py")
        if p.name != "bundle.py" and re.search(r"\b(?!okfast\b)\w+\._native\b", _strip(p))
    ]
    assert offenders == []


def _strip(path: Path) -> str:
    """A Python file's code without the ``from okfast import _native`` lines and
    the module-level constants read from it (those are allowed everywhere)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return "\n".join(
        line
        for line in lines
        if "import _native" not in line and not re.search(r"= _native\.[A-Z_]+\b", line)
    )


def test_source_files_stay_small() -> None:
    """No source file holds more than ~600 lines of non-test code."""
    big = []
    for path in list((REPO / "rust").rglob("*.rs")):
        code = _code_before_tests(path).count("\n")
        if code > 600:
            big.append(f"{path.relative_to(REPO)}: {code}")
    for path in (REPO / "python" / "okfast").rglob("*.py"):
        n = path.read_text(encoding="utf-8").count("\n")
        if n > 600:
            big.append(f"{path.relative_to(REPO)}: {n}")
    assert big == []
