"""Where a bundle's persistent cache lives (docs/cache-format.md).

One file per bundle and analyzer language (docs/spec.md §9), named by a hash
of the absolute root (and the language, when it is not the default), holding
every concept file's parsed fields and diagnostics with the size and
modification time it was read at (format: ``rust/core/src/cache/``).
Reopening a bundle re-reads only files that changed, were added or are
"racy" (modified within 2 s of the cache being written). The file also holds
the index, reused when every file matched and rebuilt otherwise, so results
are exactly those of a load without cache.

The cache directory is ``$OKFAST_CACHE_DIR`` when set (``off`` or empty
disables caching), else ``$XDG_CACHE_HOME/okfast``, else ``~/.cache/okfast``.
It is never inside the bundle: a cache directory within the bundle root is
refused (the load runs without cache). Writes are temp file + rename, so
concurrent processes never see a torn file (a killed load's temp file is
removed by the next write in the directory); a file that is torn anyway (a
crash, a full disk) fails its checksum and is rebuilt, with a
:class:`okfast.CacheWarning`. Nothing is unpickled: the format is okfast's own.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from okfast.errors import InvalidArgumentError
from okfast.paths import path_text

ENV = "OKFAST_CACHE_DIR"
_OFF = {"", "off", "0", "none", "false"}


def default_cache_dir() -> Path | None:
    """The cache directory from the environment; ``None`` when disabled.
    ``InvalidArgumentError`` when it names a home directory that cannot be
    found (``~nosuchuser``, or no ``$HOME`` and no password entry)."""
    env = os.environ.get(ENV)
    try:
        if env is not None:
            return None if env.strip().lower() in _OFF else Path(env).expanduser()
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = Path(xdg) if xdg else Path.home() / ".cache"
    except RuntimeError as e:  # pathlib's "Could not determine home directory"
        named = f"${ENV} {env!r}" if env is not None else "~/.cache/okfast"
        raise InvalidArgumentError(f"cache directory {named} is unusable ({e})") from None
    return base / "okfast"


def cache_file(
    root: str,
    cache_dir: str | os.PathLike[str] | None,
    language: str | None,
    id_range: tuple[str | None, str | None] = (None, None),
) -> tuple[Path | None, str]:
    """``(file, "")`` for the bundle at the absolute path ``root`` analysed
    for ``language`` (its part ``id_range``: docs/spec.md §1.10) in
    ``cache_dir`` (``None``: :func:`default_cache_dir`), or ``(None, why)``
    when it cannot be used (``why`` empty when the cache is disabled)."""
    if cache_dir is None:
        try:
            cache_dir = default_cache_dir()
        except InvalidArgumentError as e:
            return None, f"{e}; not caching"
        if cache_dir is None:
            return None, ""
    given = path_text("a cache directory", cache_dir)
    if given == "":
        # Made a `Path`, "" is the working directory: a slip, not a choice,
        # as for a bundle's path (docs/spec.md §1.6, §9.1).
        return (
            None,
            "cache directory '' is unusable (an empty path names no directory); not caching",
        )
    cache_dir = Path(given)
    try:
        real_root = Path(root).resolve()
        real_dir = cache_dir.resolve()
        if real_dir == real_root or real_root in real_dir.parents:
            return None, f"cache directory {cache_dir} is inside the bundle; not caching"
        cache_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    except (OSError, RuntimeError, ValueError) as e:
        # ValueError: a NUL or a lone surrogate, which names no directory.
        return None, f"cache directory {str(cache_dir)!r} is unusable ({e}); not caching"
    # One file per analyzer, so loading a bundle for two languages does not
    # make each load rebuild the other's file; the default language keeps the
    # name files had before languages existed (an older file is then opened,
    # rejected for its format and rebuilt with a warning, not left behind).
    name = os.fsencode(root)
    if language is not None:
        name += b"\0" + (language or "none").encode()
    if id_range != (None, None):
        # A part's file is named for its bounds too (each one marked present
        # or open, so no two ranges share a name).
        for bound in id_range:
            name += b"\0" + (b"\1" if bound is None else b"=" + bound.encode())
    key = hashlib.sha256(name).hexdigest()[:32]
    return cache_dir / f"{key}.okfc", ""


@dataclass(frozen=True, slots=True)
class CacheUse:
    """What a load did with the persistent cache (docs/spec.md §9)."""

    #: ``off``, ``hit`` (no file read), ``partial`` (changed files read),
    #: ``miss`` (first load) or ``rebuilt`` (the cache file was rejected; see
    #: ``detail``).
    status: str = "off"
    detail: str = ""
    file: Path | None = None
    #: Concept files read from disk rather than taken from the cache file
    #: (``0`` on an unchanged reopen); ``None`` without the cache.
    reread: int | None = None
    #: Directories listed from disk rather than taken from the cache file (an
    #: unchanged directory's recorded listing is reused; every file is still
    #: stat'ed); ``None`` without the cache.
    listed: int | None = None
