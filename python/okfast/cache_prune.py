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
import errno
import hashlib
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
from okfast.paths import file_text
from okfast.scoring import real_of

#: A cache file's name (docs/spec.md §9.1).
_NAME = re.compile(r"[0-9a-f]{32}\.okfc")
_MAGIC = b"OKFASTC\0"
#: How much of a header is read: the magic, the format, the version and the
#: root; a root longer than this is not checked.
_HEADER = 64 * 1024
_DAY = 86_400
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
    days = None
    if unused_days is not None:
        # Any real number (docs/spec.md §5.1); a whole one stays exact, so
        # one past the floats' range means never, not an overflow.
        days = real_of(unused_days)
        if days is None:
            raise InvalidArgumentTypeError(
                f"unused_days must be a number, got {type(unused_days).__name__}"
            )
        if not days >= 0 or (isinstance(days, float) and math.isinf(days)):
            raise InvalidArgumentError(
                f"unused_days must be a finite number >= 0, got {unused_days!r}"
            )
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
        names = []  # no cache there yet: nothing to prune
    except NotADirectoryError as e:
        if os.path.lexists(where):  # a file where the directory should be
            raise InvalidArgumentError(
                f"cache directory {where} cannot be listed ({e.strerror})"
            ) from e
        names = []  # below a file: no cache there either
    except OSError as e:
        raise InvalidArgumentError(
            f"cache directory {where} cannot be listed ({e.strerror or e})"
        ) from e
    for name in names:
        path = where / name
        try:
            found = _judge(path, now, days)
        except FileNotFoundError:
            continue  # a load replacing it, or another prune, removed it meanwhile
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
    return Path(file_text("cache directory", cache_dir))


def _judge(
    path: Path, now: float, days: int | float | None
) -> tuple[PrunedFile, os.stat_result] | None:
    """Why ``path`` goes, with what it was when judged; ``None`` when it stays."""
    st, header = _look(path)
    if st is None:
        return None  # okfast writes regular files only
    root = None if header is None else _root(header, path.name)
    if root is not None and _gone(root):
        return PrunedFile(path, "root gone", root, st.st_size), st
    if days is not None:
        # A new file's access time may be its write's, so never older than
        # that; a time ahead of the clock is now.
        used = min(max(st.st_atime, st.st_mtime), now)
        if now - used >= days * _DAY:
            return PrunedFile(path, "unused", root, st.st_size), st
    return None


def _look(path: Path) -> tuple[os.stat_result | None, bytes | None]:
    """``path``'s status (``None`` when it is no regular file) and its
    header, read without counting as a use: opened with O_NOATIME, or, where
    the system has none, its access time put back. Where O_NOATIME is
    refused (not the file's owner, who alone could also put the time back),
    the header is not read (``None``)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    noatime = getattr(os, "O_NOATIME", 0)
    try:
        fd = os.open(path, flags | noatime)
    except PermissionError as e:
        if not noatime or e.errno != errno.EPERM:
            raise  # no permission to read it at all
        st = os.lstat(path)
        return (st if stat.S_ISREG(st.st_mode) else None), None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, None
        header = os.read(fd, _HEADER)
        if not noatime and os.fstat(fd).st_atime_ns != st.st_atime_ns:
            with contextlib.suppress(OSError):
                os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))
        return st, header
    finally:
        os.close(fd)


def _root(header: bytes, name: str) -> str | None:
    """The bundle root a cache file's header names (a part's without its
    bounds), when the header's root, bounds and language are those the
    file's name was made from (docs/spec.md §9.1) — so a root okfast wrote
    lossily (a name not valid UTF-8, its bytes written as U+FFFD) or a
    forged header is never judged; else ``None``."""
    if not header.startswith(_MAGIC):
        return None
    fields: list[bytes] = []
    at = len(_MAGIC) + 4  # after the format
    try:
        for _ in range(3):  # the okfast version, the root, the analyzer
            (n,) = struct.unpack_from("<I", header, at)
            fields.append(header[at + 4 : at + 4 + n])
            if len(fields[-1]) != n:
                return None
            at += 4 + n
    except struct.error:
        return None
    root, sep, bounds = fields[1].partition(b"\0")
    tail = sep + bounds
    for named in (root + tail, root + b"\0" + fields[2] + tail):
        if hashlib.sha256(named).hexdigest()[:32] == name[:32]:
            text = os.fsdecode(root)
            return text if os.path.isabs(text) else None
    return None


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
