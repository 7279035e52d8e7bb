"""Pruning the cache directory (docs/spec.md §9.9): the cache files of
bundle roots that are gone, and of those no load used for a number of days.

A cache directory gains one file per bundle root, language and part ever
loaded (§9.1) and no load removes another's; so a machine that loads
release after release of a bundle, each from a new directory, keeps every
release's file. Only files named as okfast names them are looked at; the
bundle root is read from the file's header (docs/cache-format.md), the last
use from its access time, which a load that uses the file keeps within an
hour of the truth (§9.9). Removing a file a process has mapped is harmless
on POSIX (the mapping stays), and a load that finds no file builds one.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import stat
import struct
import time
from dataclasses import dataclass
from pathlib import Path

from okfast.cache import default_cache_dir
from okfast.errors import InvalidArgumentError, InvalidArgumentTypeError
from okfast.paths import path_text

#: A cache file's name (docs/spec.md §9.1).
_NAME = re.compile(r"[0-9a-f]{32}\.okfc")
_MAGIC = b"OKFASTC\0"
#: How much of a header is read: the magic, the format, the version and the
#: root; a root longer than this is not checked.
_HEADER = 64 * 1024
_DAY = 86_400.0
_REPLACED = "replaced"


@dataclass(frozen=True, slots=True)
class PrunedFile:
    """One cache file a prune removed (or, with ``dry_run``, would remove)."""

    path: Path
    #: ``root gone`` or ``unused``
    reason: str
    #: its bundle root as the header names it, or ``None`` when unread
    root: str | None
    size: int


@dataclass(frozen=True, slots=True)
class CachePrune:
    """What :func:`prune_cache` did (docs/spec.md §9.9)."""

    cache_dir: Path
    removed: tuple[PrunedFile, ...]
    #: cache files left in place
    kept: int
    #: one line per file that could not be looked at or removed
    errors: tuple[str, ...]
    dry_run: bool

    @property
    def freed(self) -> int:
        """The bytes of the removed files."""
        return sum(f.size for f in self.removed)


def prune_cache(
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    unused_days: float | None = None,
    dry_run: bool = False,
) -> CachePrune:
    """Remove the cache files of ``cache_dir`` (default: §9.1's) whose bundle
    root is no longer a directory and, with ``unused_days``, those no load
    used for that many days (docs/spec.md §9.9)."""
    where = _directory(cache_dir)
    if unused_days is not None:
        if isinstance(unused_days, bool) or not isinstance(unused_days, (int, float)):
            raise InvalidArgumentTypeError(
                f"unused_days must be a number, got {type(unused_days).__name__}"
            )
        if not (math.isfinite(unused_days) and unused_days >= 0):
            raise InvalidArgumentError(f"unused_days must be a number >= 0, got {unused_days!r}")
    if not isinstance(dry_run, bool):
        raise InvalidArgumentTypeError(f"dry_run must be a bool, got {type(dry_run).__name__}")
    now = time.time()
    removed: list[PrunedFile] = []
    errors: list[str] = []
    kept = 0
    try:
        # Only regular files: okfast writes no other kind (a link is not followed).
        names = sorted(
            e.name
            for e in os.scandir(where)
            if _NAME.fullmatch(e.name) and e.is_file(follow_symlinks=False)
        )
    except FileNotFoundError:
        names = []  # no cache yet: nothing to prune
    except OSError as e:
        raise InvalidArgumentError(
            f"cache directory {where} cannot be listed ({e.strerror or e})"
        ) from e
    for name in names:
        path = where / name
        try:
            found = _judge(path, now, unused_days)
        except OSError as e:
            errors.append(f"{path}: cannot be read ({e.strerror or e})")
            kept += 1
            continue
        if found is None:
            kept += 1
            continue
        pruned, st = found
        if not dry_run:
            why = _remove(path, st)
            if why is not None:
                if why is not _REPLACED:
                    errors.append(f"{path}: cannot be removed ({why})")
                kept += 1
                continue
        removed.append(pruned)
    return CachePrune(where, tuple(removed), kept, tuple(errors), dry_run)


def _directory(cache_dir: str | os.PathLike[str] | None) -> Path:
    if cache_dir is None:
        found = default_cache_dir()
        if found is None:
            raise InvalidArgumentError(
                "the cache is disabled ($OKFAST_CACHE_DIR); name the directory to prune"
            )
        return found
    given = path_text("a cache directory", cache_dir)
    if given == "":
        raise InvalidArgumentError("cache directory '' names no directory")
    return Path(given)


def _judge(
    path: Path, now: float, unused_days: float | None
) -> tuple[PrunedFile, os.stat_result] | None:
    """Why ``path`` goes, with what it was when judged; ``None`` when it stays."""
    fd = _open_unmarked(path)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None  # okfast writes regular files only
        root = _root(os.read(fd, _HEADER))
        # Reading the header is no use: the access time a later prune judges
        # by stays the last load's (where O_NOATIME was refused, put back).
        if os.fstat(fd).st_atime_ns != st.st_atime_ns:
            with contextlib.suppress(OSError):
                os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))
    finally:
        os.close(fd)
    if root is not None and _gone(root):
        return PrunedFile(path, "root gone", root, st.st_size), st
    if unused_days is not None:
        # A new file's access time may be its write's; never older than that.
        used = max(st.st_atime, st.st_mtime)
        if now - used >= unused_days * _DAY:
            return PrunedFile(path, "unused", root, st.st_size), st
    return None


def _open_unmarked(path: Path) -> int:
    """``path`` opened to read, without following a link and, where the
    system allows it (the file's owner, on Linux), without updating its
    access time."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    noatime = getattr(os, "O_NOATIME", 0)
    if noatime:
        try:
            return os.open(path, flags | noatime)
        except PermissionError:
            pass  # not the owner: opened as usual, the time put back after
    return os.open(path, flags)


def _root(header: bytes) -> str | None:
    """The bundle root a cache file's header names (a part's without its
    bounds), or ``None`` when it is not one okfast wrote or cannot be read."""
    if not header.startswith(_MAGIC):
        return None
    try:
        at = len(_MAGIC) + 4  # the format
        (n,) = struct.unpack_from("<I", header, at)
        at += 4 + n  # the okfast version
        (n,) = struct.unpack_from("<I", header, at)
        raw = header[at + 4 : at + 4 + n]
    except struct.error:
        return None
    if len(raw) != n:
        return None
    text = raw.decode("utf-8", "replace").split("\0", 1)[0]
    # A name not valid UTF-8 was written as U+FFFD: its directory is unknown.
    return None if "\ufffd" in text or not text else text


def _gone(root: str) -> bool:
    """Whether ``root`` is surely no directory now: missing, or a file. A
    directory that cannot be looked at (permissions) is not gone."""
    try:
        return not stat.S_ISDIR(os.stat(root).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except (OSError, ValueError):
        return False


def _remove(path: Path, judged: os.stat_result) -> str | None:
    """Remove ``path`` if it is still the file judged (a load may have put a
    new one in its place meanwhile); why not, when it fails."""
    try:
        now = os.lstat(path)
        if (now.st_dev, now.st_ino) != (judged.st_dev, judged.st_ino):
            return _REPLACED  # a load put a new file in its place: it stays
        path.unlink()
    except FileNotFoundError:
        return None  # gone already
    except OSError as e:
        return e.strerror or str(e)
    return None
