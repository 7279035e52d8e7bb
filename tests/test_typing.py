"""The public annotations as a user's type checker reads them (the package
ships ``py.typed``): what docs/spec.md §5.1, §6.5 and §13.2 say a call
takes passes ``mypy --strict``, and a misspelt argument type does not."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api", reason="mypy comes with the test extra")

ACCEPTED = """
    from fractions import Fraction

    import numpy as np
    from okfast import Catalog, Query, Resolver, Scorer, Settings, Strategy
    from okfast.context import ContextAssembler
    from okfast.distributed import RayResolver
    from okfast.memory import FileMemoryStore

    # §5.1: names for the enums, a stale policy's spelling, None for the
    # local scope, numpy and Fraction numbers; read back converted.
    q = Query(
        "rollback",
        strategy="merged",
        scorer="bm25f",
        stale_policy="tolerate:2",
        scope=None,
        limit=np.int64(5),
        fairness_quota=np.int32(2),
        rrf_k=60,
        min_score=Fraction(1, 2),
    )
    strategy: Strategy | None = q.strategy
    scorer: Scorer | None = q.scorer
    assert strategy is not None and scorer is not None
    names: tuple[str, str] = (strategy.value, scorer.value)

    # §13.2: a scorer or strategy by name, kept as its member.
    s = Settings(scorer="bm25f", strategy="merged", fairness_quota=np.int64(2))
    kept: Scorer | None = s.scorer

    # §6.5: anything with search(Query) and the two defaults, read-only ones too.
    def assemble(catalog: Catalog) -> None:
        store = FileMemoryStore.from_catalog(catalog)
        ContextAssembler(Resolver(catalog), store)
        ContextAssembler(RayResolver(catalog), store)
"""

REFUSED = """
    from okfast import Query

    Query("rollback", limit="5")
"""


def check(tmp_path: Path, source: str) -> tuple[str, int]:
    program = tmp_path / "user_code.py"
    program.write_text(textwrap.dedent(source))
    out, err, status = api.run(
        ["--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(program)]
    )
    return out + err, status


def test_what_the_spec_says_a_call_takes_type_checks(tmp_path: Path) -> None:
    report, status = check(tmp_path, ACCEPTED)
    assert status == 0, report


def test_a_wrong_argument_type_is_reported(tmp_path: Path) -> None:
    report, status = check(tmp_path, REFUSED)
    assert status == 1
    assert 'Argument "limit" to "Query" has incompatible type "str"' in report


@pytest.mark.parametrize(("module", "name"), [("query", "Query"), ("settings", "Settings")])
def test_the_checked_init_names_the_fields_the_generated_one_takes(module: str, name: str) -> None:
    """The ``__init__`` a type checker reads is written beside the dataclass:
    a field added to one and not the other is caught here, not by a user."""
    import ast
    import dataclasses
    import importlib

    cls = getattr(importlib.import_module(f"okfast.{module}"), name)
    tree = ast.parse(Path(importlib.import_module(f"okfast.{module}").__file__).read_text())
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name]
    (init,) = [
        f
        for s in node.body
        if isinstance(s, ast.If)
        for f in s.body
        if isinstance(f, ast.FunctionDef) and f.name == "__init__"
    ]
    params = [a.arg for a in init.args.args[1:] + init.args.kwonlyargs]
    assert params == [f.name for f in dataclasses.fields(cls) if f.init]
