"""A test that checks nothing cannot fail: every test function in tests/ must
assert, expect an exception or a warning (``pytest.raises``/``warns``/``fail``),
or call a helper of the suite that does (followed through any depth of
helpers, by name)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent
_CHECKS = frozenset({"raises", "warns", "fail", "deprecated_call"})

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _checks_directly(fn: Function) -> bool:
    for n in ast.walk(fn):
        if isinstance(n, ast.Assert):
            return True
        if (
            isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name)
            and n.value.id == "pytest"
            and n.attr in _CHECKS
        ):
            return True
    return False


def _called(fn: Function) -> Iterator[str]:
    for n in ast.walk(fn):
        if isinstance(n, ast.Call):
            if isinstance(n.func, ast.Name):
                yield n.func.id
            elif isinstance(n.func, ast.Attribute):
                yield n.func.attr


def find_unchecked_tests(root: Path) -> list[str]:
    """``file:line name`` of each test function under ``root`` that checks nothing."""
    functions: dict[str, list[Function]] = {}
    tests: list[tuple[Path, Function]] = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                functions.setdefault(node.name, []).append(node)
                if node.name.startswith("test") and path.name.startswith("test_"):
                    tests.append((path, node))
    checking = {name for name, fns in functions.items() if any(map(_checks_directly, fns))}
    grew = True
    while grew:  # a helper that calls a checking helper checks too
        grew = False
        for name, fns in functions.items():
            if name not in checking and any(c in checking for f in fns for c in _called(f)):
                checking.add(name)
                grew = True
    return [
        f"{path.relative_to(root)}:{fn.lineno} {fn.name}"
        for path, fn in tests
        if not (_checks_directly(fn) or any(c in checking for c in _called(fn)))
    ]


def test_every_test_checks_something() -> None:
    assert find_unchecked_tests(TESTS) == []


def test_the_scan_finds_a_test_that_only_constructs(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(
        "import pytest\n"
        "def helper(x):\n    assert x\n"
        "def indirect(x):\n    helper(x)\n"
        "def test_constructs():\n    object()\n"
        "def test_asserts():\n    assert 1\n"
        "def test_raises():\n    with pytest.raises(ValueError):\n        int('x')\n"
        "def test_through_helpers():\n    indirect(1)\n"
    )
    assert find_unchecked_tests(tmp_path) == ["test_sample.py:6 test_constructs"]
