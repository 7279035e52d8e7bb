"""One error story (docs/spec.md §8): every class okfast raises is defined in
``okfast.errors``, derives from ``OkfastError`` and from the built-in a caller
would catch, and the native core raises those very classes."""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import okfast
import pytest
from conftest import write_bundle
from okfast import errors
from okfast.catalog import Catalog
from okfast.errors import (
    BundleNotFoundError,
    CacheDamagedError,
    CatalogError,
    ConceptNotFoundError,
    EntryError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    OkfastError,
    UnsafePathError,
)
from okfast.memory import FileMemoryStore, Scope, Tier, memory_path
from okfast.memory.capture import day_entry, quote
from okfast.memory.entry import check_name
from okfast.memory.scope import below_path
from okfast.query import NEVER_US, Query, StalePolicy, micros
from okfast.resolver import Resolver
from okfast.scoring import BM25FParams

#: Each class, and the built-ins it must also be.
HIERARCHY: list[tuple[type[Exception], tuple[type[Exception], ...]]] = [
    (InvalidArgumentError, (ValueError,)),
    (InvalidArgumentTypeError, (InvalidArgumentError, ValueError, TypeError)),
    (BundleNotFoundError, (FileNotFoundError,)),
    (ConceptNotFoundError, (KeyError,)),
    (CatalogError, (ValueError,)),
    (CacheDamagedError, (OSError,)),
    (EntryError, (InvalidArgumentError, ValueError)),
    (UnsafePathError, (OSError,)),
]


@pytest.mark.parametrize(("cls", "builtins"), HIERARCHY, ids=lambda x: getattr(x, "__name__", ""))
def test_every_class_is_an_okfast_error_and_a_builtin(
    cls: type[Exception], builtins: tuple[type[Exception], ...]
) -> None:
    assert issubclass(cls, OkfastError)
    for b in builtins:
        assert issubclass(cls, b), (cls, b)
    assert cls.__module__ == "okfast.errors" and cls.__doc__


def test_the_public_classes_are_exported_by_okfast() -> None:
    public = {
        "OkfastError",
        "InvalidArgumentError",
        "InvalidArgumentTypeError",
        "BundleNotFoundError",
        "ConceptNotFoundError",
        "CatalogError",
        "CacheDamagedError",
        "CacheWarning",
    }
    assert public <= set(okfast.__all__)
    for name in public:
        assert getattr(okfast, name) is getattr(errors, name)
    # Still importable where they were defined before.
    from okfast.catalog import CatalogError as FromCatalog
    from okfast.memory.entry import EntryError as FromEntry

    assert FromCatalog is CatalogError and FromEntry is EntryError
    assert issubclass(okfast.CacheWarning, UserWarning)
    assert not issubclass(okfast.CacheWarning, OkfastError)


def _okfast_modules() -> list[str]:
    names = ["okfast"]
    for m in pkgutil.walk_packages(okfast.__path__, "okfast."):
        if m.name != "okfast.__main__":  # runs the CLI when imported
            names.append(m.name)
    return names


def test_every_exception_class_is_defined_in_errors() -> None:
    """No module of okfast defines an exception class of its own."""
    elsewhere = []
    for name in _okfast_modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == name
                and name != "okfast.errors"
            ):
                elsewhere.append(f"{name}.{attr}")
    assert len(_okfast_modules()) > 10  # the walk found the package
    assert elsewhere == []


def test_errors_is_pure_python_and_imports_no_native_code() -> None:
    """The native module imports okfast.errors to raise its classes, so
    okfast.errors must not import it back (or anything of okfast)."""
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('errs', {errors.__file__!r})\n"
        "m = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(m)\n"
        "assert issubclass(m.CacheDamagedError, OSError)\n"
        "print(sorted(k for k in sys.modules if k.startswith('okfast')))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert (r.returncode, r.stdout.strip(), r.stderr) == (0, "[]", "")


def test_the_native_module_no_longer_defines_exceptions() -> None:
    from okfast import _native

    assert not [n for n, v in vars(_native).items() if inspect.isclass(v) and n.endswith("Error")]


# -- the native core raises the classes of okfast.errors ------------------------


def test_a_missing_bundle_raises_the_python_class(tmp_path: Path) -> None:
    with pytest.raises(BundleNotFoundError) as e:
        okfast.Bundle.load(tmp_path / "missing")
    assert type(e.value) is errors.BundleNotFoundError


def test_a_native_argument_check_raises_the_python_class(tmp_path: Path) -> None:
    b = okfast.Bundle.load(write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\n---\nx\n"}))
    with pytest.raises(InvalidArgumentError, match="limit must be >= 0") as e:
        b.search("x", limit=-1)
    assert type(e.value) is errors.InvalidArgumentError
    with pytest.raises(InvalidArgumentError) as e:
        b.search_arrays("x", limit=-1)
    assert type(e.value) is errors.InvalidArgumentError


def test_a_damaged_cache_text_raises_cache_damaged_error(tmp_path: Path) -> None:
    """A text kept in the cache file that fails its check when read after the
    load is a CacheDamagedError (an OSError), never the wrong text."""
    root = write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\n---\nunmistakable body\n"})
    cache = tmp_path / "cache"
    okfast.Bundle.load(root, cache_dir=cache)  # writes the cache file
    b = okfast.Bundle.load(root, cache_dir=cache)  # texts now read from it
    assert b.stored_texts == 1
    (file,) = cache.glob("*.okfc")
    data = bytearray(file.read_bytes())
    data[data.index(b"unmistakable")] ^= 0x01
    file.write_bytes(bytes(data))
    with pytest.raises(CacheDamagedError) as e:
        b.concept("a")
    assert type(e.value) is errors.CacheDamagedError
    assert isinstance(e.value, OSError) and "was changed after it was written" in str(e.value)


# -- every Python argument check -------------------------------------------------


def _catalog(tmp_path: Path) -> Catalog:
    (tmp_path / "kb").mkdir(exist_ok=True)
    return Catalog.parse(
        '{"version": 1, "sources": [{"id": "kb", "path": "kb"}]}', base_dir=tmp_path
    )


CHECKS: dict[str, Callable[[Path], object]] = {
    "blank query": lambda _: Query("  "),
    "unknown strategy": lambda _: Query("x", strategy="best"),
    "fairness_quota 0": lambda _: Query("x", fairness_quota=0),
    "ids and visibility": lambda _: Query(
        "x", permitted_source_ids=["a"], visibility=lambda s, c: True
    ),
    "negative limit": lambda _: Query("x", limit=-1),
    "unknown min_authority": lambda _: Query("x", min_authority="supreme"),
    "negative min_score": lambda _: Query("x", min_score=-1),
    "rrf_k 0": lambda _: Query("x", rrf_k=0),
    # Past a count (docs/spec.md §5.1): refused, not an OverflowError later.
    "fairness_quota past a count": lambda _: Query("x", fairness_quota=2**32),
    "rrf_k past a float": lambda _: Query("x", rrf_k=10**400),
    "k1 past a float": lambda _: BM25FParams(k1=10**400),
    "weight past the bound": lambda _: BM25FParams(title_weight=1e308),
    "resolver quota past a count": lambda p: Resolver(_catalog(p), default_fairness_quota=2**32),
    "negative tolerance": lambda _: StalePolicy.tolerate(-1),
    "bad stale policy": lambda _: StalePolicy.parse("sometimes"),
    "naive clock": lambda _: micros(datetime(2026, 1, 1)),
    "resolver strategy": lambda p: Resolver(_catalog(p), default_strategy="best"),
    "resolver quota": lambda p: Resolver(_catalog(p), default_fairness_quota=0),
    "resolver staleness": lambda p: Resolver(_catalog(p), max_staleness=-1),
    "unsafe scope id": lambda _: Scope(".."),
    "user without tenant": lambda _: Scope(user="u"),
    "session without user": lambda _: Scope("t", session="s"),
    "unknown tier path": lambda _: memory_path("attic", Scope()),  # type: ignore[arg-type]
    "unknown tier below": lambda _: below_path("attic", Scope("t")),  # type: ignore[arg-type]
    "unknown tier root": lambda p: FileMemoryStore({"attic": p}),
    "negative memory limit": lambda p: FileMemoryStore({Tier.USER: p}).read(Scope(), "x", limit=-1),
    "naive capture time": lambda _: day_entry("q", "a", datetime(2026, 1, 1)),
}


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_argument_checks_raise_invalid_argument_error(check: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError) as e:
        CHECKS[check](tmp_path)
    assert type(e.value) is InvalidArgumentError
    assert isinstance(e.value, ValueError) and str(e.value)


TEXT_CHECKS: dict[str, Callable[[], object]] = {
    "captured text": lambda: quote(None),  # type: ignore[arg-type]
    "query text": lambda: Query(7),  # type: ignore[arg-type]
    "scope id": lambda: Scope(tenant=7),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("check", sorted(TEXT_CHECKS))
def test_text_that_is_not_a_str_is_an_invalid_argument_type_error(check: str) -> None:
    with pytest.raises(InvalidArgumentTypeError) as e:
        TEXT_CHECKS[check]()
    assert isinstance(e.value, TypeError) and isinstance(e.value, InvalidArgumentError)


def test_a_bad_memory_entry_is_an_entry_error() -> None:
    with pytest.raises(EntryError, match="not a safe segment") as e:
        check_name("../x")
    assert isinstance(e.value, InvalidArgumentError) and isinstance(e.value, ValueError)


def test_a_bad_catalog_is_a_catalog_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError) as e:
        Catalog.parse('{"version": 2, "sources": []}', base_dir=tmp_path)
    assert type(e.value) is CatalogError
    assert [d.code for d in e.value.diagnostics] == ["WrongVersion", "EmptySources"]


@pytest.mark.parametrize("days", [math.inf, 1e300, 1e12])
def test_a_huge_tolerance_admits_every_instant(days: float) -> None:
    """Not an overflow: a tolerance past every instant a date can name admits all."""
    now = micros(datetime.fromisoformat("2026-12-01T00:00:00+00:00"))
    # 0001-01-01, the epoch, now, and no stale_after.
    instants = np.array([-62_135_596_800_000_000, 0, now, NEVER_US], dtype=np.int64)
    admitted: Any = StalePolicy.tolerate(days).admits_us(instants, now)
    assert admitted.tolist() == [True] * 4
    strict: Any = StalePolicy.tolerate(1).admits_us(instants, now)
    assert strict.tolist() == [False, False, True, True]
