"""The settings file a long-running server's resolver was opened with,
watched: whether it has changed since, and whether it now gives other
settings (docs/spec.md §13.5). A stat before each call is all it costs while
the file stays as it was."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from okfast.catalog import Catalog
from okfast.errors import OkfastError
from okfast.resolver import Resolver
from okfast.settings import Settings, settings_for

_log = logging.getLogger(__name__)

Stamp = tuple[int, int, int, int, int] | None


def stamp_of(path: Path) -> Stamp:
    """What tells one state of ``path`` from another: the file it names
    (device, inode: a rename over it is another file), its size and its
    modification and change times; ``None`` when nothing is there."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class SettingsWatch:
    """The settings file of ``catalog`` (``given``, a path the caller named,
    else the one the catalog names), stamped now — before the resolver it
    watches for reads it, so a change made while it was being read is seen
    as a change."""

    def __init__(self, catalog: Catalog, given: str | os.PathLike[str] | None) -> None:
        self.catalog = catalog
        self.given = Path(given) if given is not None else None
        self.path = self.given if self.given is not None else catalog.settings_path
        self._stamp = stamp_of(self.path) if self.path is not None else None

    def changed(self) -> bool:
        """Whether the file is not as it was when last read."""
        return self.path is not None and stamp_of(self.path) != self._stamp

    def reread(self, resolver: Resolver) -> Settings | None:
        """Read the file again (its stamp first): the settings it gives when
        they, or their diagnostics, are not what ``resolver`` runs on, else
        ``None``. A file that cannot be read now, or one the caller named
        that is no longer a regular file (a FIFO would wait for a writer),
        keeps the resolver's (``None``), with a warning: a server goes on as
        it ran rather than fail every call or fall back to the defaults. A
        removed file the catalog names gives the defaults, as at a start."""
        assert self.path is not None
        self._stamp = stamp_of(self.path)
        if self.given is not None and not is_regular_file(self.given):
            _kept(self.path, "not a regular file (or gone)")
            return None
        try:
            now = settings_for(self.catalog, self.given)
        except (OkfastError, OSError, ValueError) as e:
            _kept(self.path, str(e))
            return None
        unreadable = [d.message for d in now[1] if d.code == "SettingsUnreadable"]
        if unreadable:
            # Mid-way through an editor's write, say: the next change is
            # looked at again, rather than the defaults served meanwhile.
            _kept(self.path, unreadable[0])
            return None
        if now == (resolver.settings, resolver.settings_diagnostics):
            return None
        for d in now[1]:
            # The lines the command line prints for them (docs/spec.md §13.4).
            _log.warning("okfast: settings %s: %s", self.path, d)
        return now[0]


def _kept(path: Path, why: str) -> None:
    _log.warning("okfast: settings %s changed but cannot be read, kept as they were: %s", path, why)


def is_regular_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a regular file (after links): one that can be
    read again without waiting for a writer, as a FIFO would."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False
