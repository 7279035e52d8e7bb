"""The resolver's bundle snapshots: one loaded bundle per source directory and
analyzer language, re-checked against the disk when older than the
resolver's ``max_staleness`` (docs/spec.md §5.2, §12.2)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from okfast.bundle import Bundle, Progress
from okfast.catalog import Source
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


class Snapshots:
    """The resolver's bundle cache. A snapshot is re-checked against the disk
    when it is older than ``max_staleness`` seconds (0: before every search);
    a change swaps in a refreshed snapshot (only changed files re-read), so a
    search in flight keeps the one it started with."""

    def __init__(self, max_staleness: float, progress: Progress | None = None) -> None:
        self.max_staleness = max_staleness
        self.progress = progress
        self._lock = threading.Lock()
        #: (directory key, language, id range) → its snapshot
        self._snaps: dict[tuple[str, str | None, IdRange], CachedBundle] = {}

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
        fresh = CachedBundle(bundle, bundle.stale_after_us(), bundle.ordinal_ranks(), now)
        with self._lock:
            self._snaps[key] = fresh
        return fresh

    def refresh(self, sources: Sequence[Source], language: Callable[[Source], str | None]) -> None:
        with self._lock:
            languages = {k[1] for k in self._snaps}
        for s in sources:
            if s.directory is not None and s.directory.is_dir():
                for lang in languages | {language(s)}:
                    self.get(s, lang, force=True)


def source_language(
    source: Source, default: str | None, settings: Settings | None = None
) -> str | None:
    """The analyzer language of a source (docs/spec.md §12.2, §13): the
    settings' for it, else the catalog's, else ``default``."""
    named = (
        source.language if settings is None else settings.language_of(source.id, source.language)
    )
    return default if named is None else language_of(named)
