"""Directory paths: lexical normalisation, containment and the one OS-aware
comparison used wherever okfast asks "is this the same directory?" (SPEC §4.2, §5.5).

Windows and macOS file systems are case-insensitive by default, so two
catalog entries `./Docs` and `./docs` name one directory there and two
elsewhere. The convention is a parameter (default: this machine's) so both can
be tested on any machine.
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from okfast.errors import BundleNotFoundError, InvalidArgumentError, InvalidArgumentTypeError

if TYPE_CHECKING:
    from okfast.catalog import Catalog

#: How a command reads the catalog its ``--catalog`` and ``--catalog-root``
#: name (``cli._load_catalog``): ``None`` once the problems are reported.
LoadCatalog = Callable[[argparse.Namespace], "Catalog | None"]

#: Platforms whose default file systems compare names case-insensitively.
CASE_INSENSITIVE_PLATFORMS = ("win32", "cygwin", "darwin")

_WINDOWS_ABS = re.compile(r"^(?:[A-Za-z]:[\\/]|[\\/]{2})")


def is_case_insensitive(platform: str | None = None) -> bool:
    """Whether directory names compare case-insensitively on ``platform``."""
    return (platform or sys.platform).startswith(CASE_INSENSITIVE_PLATFORMS)


def directory_key(path: str | os.PathLike[str], *, platform: str | None = None) -> str:
    """The key under which two resolved directories are "the same" (SPEC §5.5):
    the path as is, case-folded (``str.casefold``) on Windows and macOS."""
    s = os.fspath(path)
    return s.casefold() if is_case_insensitive(platform) else s


def same_directory(
    a: str | os.PathLike[str], b: str | os.PathLike[str], *, platform: str | None = None
) -> bool:
    return directory_key(a, platform=platform) == directory_key(b, platform=platform)


def is_absolute_spelling(p: str) -> bool:
    """``/x``, ``C:\\x``, ``C:/x`` and ``\\\\host\\x`` are absolute wherever the
    catalog was written (SPEC §4.2). ``~`` is not expanded: ``~/x`` is relative."""
    return p.startswith(("/", "\\")) or bool(_WINDOWS_ABS.match(p))


def split_relative(p: str) -> list[str]:
    """Segments of a relative catalog path; ``/`` and ``\\`` both separate, so a
    catalog written on Windows reads the same everywhere."""
    return [s for s in re.split(r"[\\/]", p) if s not in ("", ".")]


def join_lexically(base: str, rel: str) -> str:
    """Join ``rel`` to ``base`` (absolute) and resolve ``.``/``..`` lexically,
    without resolving symbolic links (SPEC §4.2)."""
    return os.path.normpath(os.path.join(base, *split_relative(rel)))


def is_within(path: str, root: str) -> bool:
    """``path`` is ``root`` or inside it, compared exactly (both normalised)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def path_text(what: str, path: object) -> str:
    """``path`` (a ``str`` or an ``os.PathLike`` of one) as text; anything
    else — a number, ``None``, a bytes path — is okfast's type error naming
    ``what`` was wanted, not ``os.fspath``'s bare ``TypeError``."""
    try:
        given = os.fspath(path)  # type: ignore[call-overload]
    except TypeError:
        given = None
    if not isinstance(given, str):
        raise InvalidArgumentTypeError(f"{what} is text, got {type(path).__name__}")
    return given


def directory_text(what: str, path: object) -> str:
    """A directory named by an argument (:func:`path_text`) that is not the
    empty path: made a path, ``""`` is the working directory — an unset
    variable most likely, never a choice (docs/spec.md §1.6)."""
    given = path_text(what, path)
    if given == "":
        raise InvalidArgumentError(f"{what} is empty: an empty path names nothing")
    return given


def file_text(what: str, path: object) -> str:
    """A file an argument names to be written (:func:`path_text`): one holding
    a NUL or a character the file system cannot encode names no file, an
    ``InvalidArgumentError`` (docs/spec.md §8), not ``os``'s bare
    ``ValueError`` or ``UnicodeEncodeError``."""
    given = directory_text(what, path)
    if (why := _unnameable(given)) is not None:
        raise InvalidArgumentError(f"{what} {given!r} names no file: {why}")
    return given


def _unnameable(path: str) -> str | None:
    """Why no file system can hold ``path`` (a NUL, a character it cannot
    encode), or ``None``."""
    if "\x00" in path:
        return "it holds a NUL character"
    try:
        os.fsencode(path)
    except UnicodeError as e:
        return str(e)
    return None


def writable(what: str, path: str | os.PathLike[str]) -> None:
    """Refuse, before a long search, an output file that could not be
    written after it (docs/spec.md §10.1): a directory, a file this process
    may not write, or a missing one whose nearest existing ancestor is not a
    directory it may create entries in (missing folders are made)."""
    p = Path(path)
    if p.is_dir():
        raise InvalidArgumentError(f"cannot write {what} {p}: it is a directory")
    if os.path.lexists(p):
        if not os.access(p, os.W_OK):
            raise InvalidArgumentError(f"cannot write {what} {p}: permission denied")
        return
    at = p.parent
    while not os.path.lexists(at) and at != at.parent:
        at = at.parent
    if not at.is_dir():
        raise InvalidArgumentError(f"cannot write {what} {p}: {at} is not a directory")
    if not os.access(at, os.W_OK | os.X_OK):
        raise InvalidArgumentError(f"cannot write {what} {p}: permission denied in {at}")


def absolute(path: str) -> str:
    """``path`` made absolute against the working directory, ``.`` parts and
    repeated separators dropped, ``..`` kept (docs/spec.md §1.1): the OS
    resolves ``link/..`` to the parent of where ``link`` points, which
    ``os.path.abspath`` removing both by text is not."""
    if os.name != "posix":
        return os.path.abspath(path)
    if not os.path.isabs(path):
        path = os.path.join(os.getcwd(), path)
    # POSIX gives exactly two leading slashes a meaning of their own.
    lead = "//" if path.startswith("//") and not path.startswith("///") else "/"
    return lead + "/".join(p for p in path.split("/") if p not in ("", "."))


def bundle_root(path: str | os.PathLike[str]) -> str:
    """A bundle root as an absolute path; one no file system can hold is
    not a readable directory (docs/spec.md §1.1)."""
    given = path_text("a bundle path", path)
    if given == "":
        # An unset variable, most likely: never the working directory.
        raise BundleNotFoundError("an empty path names no bundle directory")
    root = absolute(given)
    if (why := _unnameable(root)) is not None:
        raise BundleNotFoundError(f"{root!r} is not a readable directory: {why}")
    return root


def option_file(text: str) -> str:
    """An argparse type: the file an option names (``--catalog``,
    ``--settings``, ``--qrels``, ``--out``, …). An empty one, an unset
    variable most likely, would name the working directory: a usage error
    saying so (docs/spec.md §10.1)."""
    if not text:
        raise argparse.ArgumentTypeError("the path is empty")
    return text


def catalog_options(parser: argparse.ArgumentParser, help: str = "catalog.json") -> None:
    """``--catalog FILE`` and ``--catalog-root DIR``, as every command that
    reads a catalog takes them: the root is ``Catalog.load``'s ``root``, the
    directory every source path must lie in (docs/spec.md §4.2, §10.1), so a
    catalog kept apart from bundles it may not write beside can name them."""
    parser.add_argument("--catalog", type=option_file, required=True, help=help)
    parser.add_argument(
        "--catalog-root",
        type=option_file,
        default=None,
        metavar="DIR",
        help="the directory every source must be in (default: the catalog's own)",
    )


def first_link(root: str, full: str) -> str | None:
    """Why ``full`` is not a source directory when a symbolic link lies
    between the root (which may itself be one) and it (docs/spec.md §4.2), the deepest
    first; ``None`` when none does."""
    cur = full
    while cur != root and len(cur) > len(root):
        if os.path.islink(cur):
            return f"{cur} is a symbolic link; okfast does not follow links in source paths"
        cur = os.path.dirname(cur)
    return None


def reached(root: str, full: str) -> tuple[str | None, tuple[int, int] | None]:
    """``full`` opened from ``root`` one directory at a time, no link
    followed: ``(None, (device, inode))``; a link met on the way (put there
    since :func:`first_link` looked) refuses it; any other failure is left
    to the load to report."""
    if not hasattr(os, "O_NOFOLLOW") or os.open not in os.supports_dir_fd:
        return None, None
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None, None
    try:
        for part in os.path.relpath(full, root).split(os.sep):
            fd, parent = os.open(part, flags, dir_fd=fd), fd
            os.close(parent)
        st = os.fstat(fd)
        return None, (st.st_dev, st.st_ino)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            return (
                f"{full}: a symbolic link on its path; okfast does not follow links in source paths",
                None,
            )
        return None, None
    finally:
        os.close(fd)
