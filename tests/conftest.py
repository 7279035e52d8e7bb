"""Shared fixtures: tiny bundles written on the fly, and the third-party corpora."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from okfast.catalog import Catalog

TESTS = Path(__file__).resolve().parent

# Bundles load through the persistent cache by default: keep the suite's cache
# files out of the user's cache directory, in a directory of this run's own,
# removed when the run ends (each run writes hundreds of megabytes there).
_OWN_CACHE_DIR: str | None = None
if "OKFAST_CACHE_DIR" not in os.environ:
    _OWN_CACHE_DIR = tempfile.mkdtemp(prefix="okfast-test-cache-")
    os.environ["OKFAST_CACHE_DIR"] = _OWN_CACHE_DIR
REPO = TESTS.parent
sys.path.insert(0, str(TESTS))  # so tests can `import reference`

#: Real third-party bundles live beside the project, never inside it.
CORPORA = Path(os.environ.get("OKFAST_CORPORA", REPO.parent / "shared" / "corpora"))

requires_corpora = pytest.mark.skipif(
    not CORPORA.is_dir(),
    reason=f"third-party corpora not found at {CORPORA} (../shared/corpora beside the project)",
)

MakeBundle = Callable[[dict[str, "str | bytes"]], Path]


def pytest_unconfigure(config: pytest.Config) -> None:
    if _OWN_CACHE_DIR is not None:
        shutil.rmtree(_OWN_CACHE_DIR, ignore_errors=True)


def write_bundle(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write ``{relative path: text or bytes}`` under ``root`` (text as UTF-8, verbatim)."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        p.write_bytes(data)
    return root


@pytest.fixture
def make_bundle(tmp_path: Path) -> MakeBundle:
    counter = iter(range(1_000_000))

    def make(files: dict[str, str | bytes]) -> Path:
        return write_bundle(tmp_path / f"b{next(counter)}", files)

    return make


def link_swapped_in_at_load(
    monkeypatch: pytest.MonkeyPatch, directory: Path, swapped: Path, outside: Path
) -> None:
    """``Bundle.load`` of ``directory`` first moves ``swapped`` (a directory on
    its path) aside and puts a link to ``outside`` in its place: a link put on
    a source path between the check and the load (docs/spec.md §5.10)."""
    from typing import Any

    from okfast import Bundle

    real_load = Bundle.load.__func__  # type: ignore[attr-defined]

    def swap_then_load(cls: type[Bundle], path: Any, **kw: Any) -> Bundle:
        if Path(path) == directory and not swapped.is_symlink():
            swapped.rename(swapped.with_name(swapped.name + "-was"))
            swapped.symlink_to(outside)
        return real_load(cls, path, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(Bundle, "load", classmethod(swap_then_load))


def make_catalog(
    tmp: Path, bundles: dict[str, dict[str, str]], sources: list[dict[str, object]]
) -> Catalog:
    """Write ``{bundle dir: {file: text}}`` and a catalog of ``sources`` under ``tmp``."""
    import json

    from okfast.catalog import Catalog

    for name, files in bundles.items():
        write_bundle(tmp / name, dict(files))
    (tmp / "catalog.json").write_text(json.dumps({"version": 1, "sources": sources}))
    return Catalog.load(tmp / "catalog.json")


def pytest_sessionstart(session: pytest.Session) -> None:
    """With OKFAST_EXPECT_INSTALLED (set by `make test-wheel`), the suite must
    test the okfast installed under that directory, never ./python."""
    expected = os.environ.get("OKFAST_EXPECT_INSTALLED")
    if expected:
        import okfast

        where = Path(okfast.__file__).resolve()
        if Path(expected).resolve() not in where.parents:
            raise pytest.UsageError(f"okfast was imported from {where}, not from {expected}")
