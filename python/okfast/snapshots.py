"""The resolver's bundle snapshots: one loaded bundle per source directory and
analyzer language, re-checked against the disk when older than the
resolver's ``max_staleness`` (docs/spec.md §5.2, §12.2)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from okfast.bundle import Bundle, Progress
from okfast.catalog import Source
from okfast.errors import BundleNotFoundError
from okfast.paths import directory_key
from okfast.scoring import language_of
from okfast.settings import Settings

#: ``(lo, hi)``: the ids ``lo <= id < hi`` (docs/spec.md §1.10)
IdRange = tuple[str | None, str | None]


@dataclass
class CachedBundle:
    """One loaded bundle per resolved directory, with what ordering needs."""

    bundle: Bundle
    stale_us: npt.NDArray[np.int64]
    ordinal: npt.NDArray[np.uint32]
    checked: float


#: The snapshots one search took, by (directory key, language): a search
#: keeps them for all its sources and passes (docs/spec.md §5.10).
Taken = dict[tuple[str, str | None], CachedBundle]


class Snapshots:
    """The resolver's bundle cache. A snapshot is re-checked against the disk
    when it is older than ``max_staleness`` seconds (0: before every search);
    a change swaps in a refreshed snapshot (only changed files re-read), so a
    search in flight keeps the one it started with."""

    def __init__(
        self,
        max_staleness: float,
        progress: Progress | None = None,
        guard: Callable[[Source], tuple[str | None, tuple[int, int] | None]] | None = None,
    ) -> None:
        self.max_staleness = max_staleness
        self.progress = progress
        #: Why a source's directory may not be read now, if so, else the
        #: directory a load must open (Catalog.link_on_path), asked before
        #: every load or refresh.
        self.guard = guard
        self._lock = threading.Lock()
        #: (directory key, language, id range) → its snapshot
        self._snaps: dict[tuple[str, str | None, IdRange], CachedBundle] = {}
        #: The catalog generation whose sources the snapshots were last cut to.
        self._generation = -1

    def get(
        self,
        source: Source,
        language: str | None,
        *,
        force: bool = False,
        id_range: IdRange = (None, None),
    ) -> CachedBundle:
        """The source's snapshot analysed for ``language`` (docs/spec.md §12.2),
        of the concepts in ``id_range`` (docs/spec.md §1.10)."""
        assert source.directory is not None
        key = (directory_key(source.directory), language, id_range)
        with self._lock:
            snap = self._snaps.get(key)
        now = time.monotonic()
        if snap is not None and not force and now - snap.checked < self.max_staleness:
            return snap
        # docs/spec.md §5.10: a link put on the source's path since the
        # catalog was read is not followed to load or refresh through it.
        refused, reached = self.guard(source) if self.guard is not None else (None, None)
        if refused is not None:
            raise BundleNotFoundError(refused)
        if snap is None:
            bundle = Bundle.load(
                source.directory, progress=self.progress, language=language, id_range=id_range
            )
        else:
            changed = snap.bundle.refresh()
            if changed is None:
                snap.checked = now
                return snap
            bundle = changed
        # The path checked for links may name another directory by the time
        # the load opened it (a link put there meanwhile): what was read is
        # then not kept (docs/spec.md §5.10).
        if reached is not None and bundle._root_identity not in (None, reached):
            raise BundleNotFoundError(
                f"{source.directory} changed while it was opened (a symbolic link put on "
                "its path?); okfast does not follow links in source paths"
            )
        fresh = CachedBundle(bundle, bundle.stale_after_us(), bundle.ordinal_ranks(), now)
        with self._lock:
            # Two searches refreshing at once: the look that began later is
            # kept, whichever ends last, so no later search goes back to an
            # older disk than an earlier one saw (docs/spec.md §5.10).
            kept = self._snaps.get(key)
            if kept is None or kept.checked <= fresh.checked:
                self._snaps[key] = kept = fresh
        return kept

    def take(self, taken: Taken, source: Source, language: str | None) -> CachedBundle:
        """:meth:`get`, once per directory and language in a search: what
        ``taken`` holds from the search's earlier sources and passes
        (docs/spec.md §5.10), else the snapshot now, kept in ``taken``."""
        assert source.directory is not None
        key = (directory_key(source.directory), language)
        snap = taken.get(key)
        if snap is None:
            # Checked here, not before: a directory that went after this
            # search took it is still the one the search reads.
            if not source.directory.is_dir():
                raise BundleNotFoundError(f"{source.directory} is not a directory")
            snap = taken[key] = self.get(source, language)
        return snap

    def refresh(self, sources: Sequence[Source], language: Callable[[Source], str | None]) -> None:
        with self._lock:
            languages = {k[1] for k in self._snaps}
        for s in sources:
            # A source a search would refuse (a link on its path) is not
            # raised here for all the others: its snapshots are dropped, so
            # the next search that needs it reports it.
            if s.directory is not None and self.guard is not None and self.guard(s)[0] is not None:
                self._forget(s.directory)
                continue
            if s.directory is not None and s.directory.is_dir():
                try:
                    for lang in languages | {language(s)}:
                        self.get(s, lang, force=True)
                except BundleNotFoundError:
                    # Unreadable now (its permissions, or removed meanwhile):
                    # reported by the next search that needs it, as a missing
                    # one is, not raised here for all the others (§5.3).
                    self._forget(s.directory)

    def follow(self, knowledge: Sequence[Source], generation: int, *, again: bool = False) -> None:
        """Drop the snapshots of directories other than those of
        ``knowledge``, a catalog generation's enabled knowledge sources, once
        per generation (``again``: now): a source a reload removed, moved or
        disabled holds no bundle, mapped cache file or change watch after it
        (docs/spec.md §5.10). A search in flight keeps the snapshots it took."""
        with self._lock:
            if generation <= self._generation and not again:
                return
            self._generation = max(generation, self._generation)
        self.keep({directory_key(s.directory) for s in knowledge if s.directory is not None})

    def keep(self, directories: set[str]) -> None:
        """Drop the snapshots of every directory but ``directories`` (keys)."""
        with self._lock:
            for k in [k for k in self._snaps if k[0] not in directories]:
                del self._snaps[k]

    def _forget(self, directory: Path) -> None:
        """Drop every snapshot of ``directory``."""
        gone = directory_key(directory)
        with self._lock:
            for k in [k for k in self._snaps if k[0] == gone]:
                del self._snaps[k]


def source_language(
    source: Source, default: str | None, settings: Settings | None = None
) -> str | None:
    """The analyzer language of a source (docs/spec.md §12.2, §13): the
    settings' for it, else the catalog's, else ``default``."""
    named = (
        source.language if settings is None else settings.language_of(source.id, source.language)
    )
    return default if named is None else language_of(named)
