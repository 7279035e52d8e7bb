"""The one OS-aware directory comparison, tested for both conventions on any machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from okfast import (
    Bundle,
    BundleNotFoundError,
    Catalog,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from okfast.bundle import split_ranges
from okfast.memory import FileMemoryStore
from okfast.paths import (
    bundle_root,
    directory_key,
    is_absolute_spelling,
    is_case_insensitive,
    is_within,
    join_lexically,
    same_directory,
    split_relative,
)
from okfast.paths import reached as reach
from okfast.settings import Settings


@pytest.mark.parametrize(
    ("platform", "insensitive"),
    [("linux", False), ("freebsd14", False), ("darwin", True), ("win32", True), ("cygwin", True)],
)
def test_case_rule_per_platform(platform: str, insensitive: bool) -> None:
    assert is_case_insensitive(platform) is insensitive
    assert same_directory("/x/Docs", "/x/docs", platform=platform) is insensitive
    assert same_directory("/x/docs", "/x/docs", platform=platform)
    assert not same_directory("/x/docs", "/x/doc", platform=platform)
    # casefold, not lower: ß and SS are one name where case does not matter.
    assert same_directory("/x/STRASSE", "/x/straße", platform=platform) is insensitive
    assert (directory_key("/A", platform=platform) == "/a") is insensitive


@pytest.mark.parametrize("p", ["/x", "\\x", "C:\\x", "c:/x", "\\\\host\\share", "//host/share"])
def test_absolute_spellings(p: str) -> None:
    assert is_absolute_spelling(p)


@pytest.mark.parametrize("p", ["x", "./x", "~/x", "..\\x", "C:x", "$HOME/x"])
def test_relative_spellings(p: str) -> None:
    assert not is_absolute_spelling(p)


def test_lexical_join_and_containment() -> None:
    assert split_relative(".\\a//b/./c") == ["a", "b", "c"]
    assert join_lexically("/r", "./shared/../shared") == "/r/shared"
    assert join_lexically("/r", "a/../../r/b") == "/r/b"
    assert is_within("/r", "/r") and is_within("/r/a", "/r")
    assert not is_within("/rx", "/r") and not is_within("/", "/r")


@pytest.mark.parametrize("path", ["b1\x00x", "\udc00", "a/\ud800/b", ""])
def test_a_root_no_file_system_can_hold_is_not_a_directory(path: str) -> None:
    with pytest.raises(BundleNotFoundError, match="is not a readable directory|empty path"):
        bundle_root(path)
    with pytest.raises(BundleNotFoundError):
        Bundle.load(path, cache=False)


def test_a_root_in_bytes_is_a_type_error() -> None:
    with pytest.raises(InvalidArgumentTypeError, match="a bundle path is text"):
        Bundle.load(b"/tmp", cache=False)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", [5, None, b"/tmp", 1.5])
def test_a_path_that_is_no_path_is_okfasts_type_error(path: object, tmp_path: Path) -> None:
    """docs/spec.md §1.1, §4.3, §13.2: not os.fspath's bare TypeError."""
    with pytest.raises(InvalidArgumentTypeError, match="a bundle path is text"):
        Bundle.load(path, cache=False)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentTypeError, match="a catalog path is text"):
        Catalog.load(path)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentTypeError, match="a settings path is text"):
        Settings.load(path)  # type: ignore[arg-type]
    if path is not None:
        with pytest.raises(InvalidArgumentTypeError, match="root is text"):
            Catalog.load(tmp_path / "catalog.json", root=path)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentTypeError, match="base_dir is text"):
            Catalog.parse('{"version": 1, "sources": []}', base_dir=path)  # type: ignore[arg-type]


def test_an_empty_directory_argument_is_refused_not_the_working_directory(
    tmp_path: Path,
) -> None:
    """docs/spec.md §1.6, §4.3, §6.3: made a path, "" would be the working
    directory, where a catalog's sources or a memory tier would then live."""
    (tmp_path / "catalog.json").write_text('{"version": 1, "sources": []}')
    with pytest.raises(InvalidArgumentError, match="root is empty"):
        Catalog.load(tmp_path / "catalog.json", root="")
    with pytest.raises(InvalidArgumentError, match="base_dir is empty"):
        Catalog.parse('{"version": 1, "sources": []}', base_dir="")
    with pytest.raises(InvalidArgumentError, match="'user' root is empty"):
        FileMemoryStore({"user": ""})
    for text in (None, b"{}"):
        with pytest.raises(InvalidArgumentTypeError, match="a catalog's text is a str"):
            Catalog.parse(text, base_dir=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentTypeError, match="catalog must be a Catalog"):
        FileMemoryStore.from_catalog("catalog.json")  # type: ignore[arg-type]


def test_a_bundle_path_keeps_dot_dot_for_the_os_to_resolve(tmp_path: Path) -> None:
    """docs/spec.md §1.1: ``link/..`` is the parent of where ``link`` points;
    removing both by text walked another directory (here: the one holding
    the link, with a concept that is not the bundle's)."""
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    (tmp_path / "real" / "inside.md").write_text("---\ntype: T\n---\nx\n")
    (tmp_path / "other" / "wrong.md").write_text("---\ntype: T\n---\nx\n")
    (tmp_path / "link").symlink_to(tmp_path / "real" / "sub")
    given = f"{tmp_path}/link/.."
    assert bundle_root(given) == given
    bundle = Bundle.load(given, cache=False)
    assert (str(bundle.root), bundle.concept_ids) == (given, ("inside",))
    (tmp_path / "real" / "second.md").write_text("---\ntype: T\n---\nx\n")
    assert split_ranges(given, 2) == split_ranges(tmp_path / "real", 2) != split_ranges(tmp_path, 2)
    # ``.`` parts and repeated separators are still dropped.
    assert bundle_root(f"{tmp_path}//real/./sub/") == f"{tmp_path}/real/sub"


def test_a_source_directory_is_reached_from_the_root_without_following_links(
    tmp_path: Path,
) -> None:
    # docs/spec.md §5.10: what a resolver compares the loaded root with.
    tmp = tmp_path.resolve()
    (tmp / "a" / "b").mkdir(parents=True)
    st = os.stat(tmp / "a" / "b")
    assert reach(str(tmp), str(tmp / "a" / "b")) == (None, (st.st_dev, st.st_ino))
    os.symlink(tmp / "a", tmp / "l")
    why, found = reach(str(tmp), str(tmp / "l" / "b"))
    assert found is None and why is not None and "a symbolic link on its path" in why
    # The root itself may be a link.
    alias = tmp.parent / (tmp.name + "-root-alias")
    os.symlink(tmp, alias)
    assert reach(str(alias), str(alias / "a" / "b")) == (None, (st.st_dev, st.st_ino))
    assert reach(str(tmp), str(tmp / "missing")) == (None, None)
