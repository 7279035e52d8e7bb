"""The Python face of one loaded bundle (SPEC §1, §3.7).

The native snapshot does the work; this class shapes results into the public
dataclasses and validates arguments. A ``Bundle`` is immutable: to see changes
on disk, load it again.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from functools import cached_property
from pathlib import Path

import numpy as np
import numpy.typing as npt

from okfast import _native
from okfast.cache import cache_file, default_cache_dir
from okfast.errors import CacheWarning, ConceptNotFoundError
from okfast.model import Concept, Diagnostic, Hit

#: ``progress(phase, done, total)`` of :meth:`Bundle.load`.
Progress = Callable[[str, int, int], object]


class Bundle:
    """An OKF bundle loaded and indexed in memory.

    Searching is thread-safe and releases the GIL; any number of threads may
    search one bundle at once.
    """

    __slots__ = ("_native", "__dict__")

    def __init__(self, native: _native.Bundle) -> None:
        self._native = native
        #: What the load did with the persistent cache: ``off``, ``hit`` (no file
        #: read), ``partial`` (changed files read), ``miss`` (first load) or
        #: ``rebuilt`` (the cache file was rejected; see :attr:`cache_detail`).
        self.cache_status = "off"
        self.cache_detail = ""
        self.cache_file: Path | None = None
        #: For a load through the cache: how many concept files were read from
        #: disk (not taken from the cache file; ``0`` on an unchanged reopen)
        #: and how many directories were listed from disk (a directory whose
        #: device, inode, mtime and ctime are unchanged, and older than the
        #: cache file by 2 s, has its listing taken from the cache file; every
        #: file is still stat'ed). ``None`` when the cache was not used.
        self.cache_reread: int | None = None
        self.cache_listed: int | None = None

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        cache: bool = True,
        progress: Progress | None = None,
    ) -> Bundle:
        """Load the bundle at ``path``.

        With ``cache`` (the default) the parsed files are kept in a cache file
        under ``cache_dir`` (default: :func:`okfast.cache.default_cache_dir`),
        so reopening reads only the files that changed; results are identical
        either way. An unusable cache file is rebuilt with a
        :class:`okfast.CacheWarning`.

        ``progress(phase, done, total)`` — phase ``walk``, ``read`` (``done`` of
        ``total`` files), ``index`` or ``done`` — is called about every 100 ms
        while loading and once at the end. Ctrl-C stops a long load cleanly
        (``KeyboardInterrupt``, nothing half-built is kept); so does an exception
        raised by ``progress``, which propagates.

        Raises :class:`okfast.BundleNotFoundError` (a ``FileNotFoundError``) only
        when ``path`` is not a readable directory; problems in files are reported
        in :attr:`diagnostics` and the rest of the bundle loads.
        """
        root = os.path.abspath(os.fspath(path))
        where = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        if not cache or where is None:
            return cls(_native.Bundle.load(root, progress))
        file, why = cache_file(root, where)
        if file is None:
            b = cls(_native.Bundle.load(root, progress))
            b.cache_detail = why
            return b
        native, status, detail, reread, listed = _native.Bundle.load_cached(
            root, str(file), progress
        )
        b = cls(native)
        b.cache_status, b.cache_detail, b.cache_file = status, detail, file
        b.cache_reread, b.cache_listed = reread, listed
        if status == "rebuilt":
            warnings.warn(
                f"okfast: cache file {file} {detail}; it was rebuilt", CacheWarning, stacklevel=2
            )
        return b

    def refresh(self) -> Bundle | None:
        """Look at the disk again: a new ``Bundle`` when files changed (only new
        and changed files are read again), ``None`` when nothing did. This
        snapshot never changes, so searches in flight are unaffected.

        On Linux the snapshot's directories are watched: when only files
        changed, only the files the change queue names are looked at (no walk),
        and when none of their indexed text changed the index is shared; every
        30 s, and whenever a directory changed, every file is compared instead.
        The result is always exactly that of a fresh :meth:`load`."""
        fresh = self._native.refresh()
        return None if fresh is None else Bundle(fresh)

    def __len__(self) -> int:
        return len(self._native)

    def __contains__(self, concept_id: object) -> bool:
        return isinstance(concept_id, str) and self._native.position(concept_id) is not None

    def __repr__(self) -> str:
        return f"<okfast.Bundle {str(self.root)!r}: {len(self)} concepts>"

    @property
    def made_by(self) -> str:
        """How this snapshot was made: ``load``; by :meth:`refresh`, ``walk``
        (every file compared), ``events`` (only the files the change queue
        named were looked at) or ``events, index kept`` (and no indexed text
        changed, so the index is shared with the previous snapshot)."""
        return self._native.made_by

    @property
    def stored_texts(self) -> int:
        """How many concepts' body and frontmatter are read from the cache file
        when asked for (one positioned read each, checksummed) instead of being
        held in memory: every concept after a load through the cache, none with
        ``cache=False``. See "Memory model" in the README."""
        return self._native.stored_texts

    @property
    def root(self) -> Path:
        return Path(self._native.root)

    @property
    def okf_version(self) -> str | None:
        """``okf_version`` of the root ``index.md`` frontmatter, if readable."""
        return self._native.okf_version

    @cached_property
    def concept_ids(self) -> tuple[str, ...]:
        """Concept ids in id order (SPEC §1.2); positions index this tuple."""
        return tuple(self._native.concept_ids)

    @cached_property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        return tuple(
            Diagnostic(code=c, message=m, path=p, severity=s)  # type: ignore[arg-type]
            for c, m, p, s in self._native.diagnostics
        )

    def concept(self, concept_id: str) -> Concept:
        """Every field of one concept, body included."""
        pos = self._native.position(concept_id)
        if pos is None:
            raise ConceptNotFoundError(f"no concept {concept_id!r} in bundle {str(self.root)!r}")
        return Concept._from_native(self._native.concept(pos))

    def search(self, text: str, *, tag: str | None = None, limit: int | None = None) -> list[Hit]:
        """Concepts with a positive score, by score then id (SPEC §3).

        ``limit`` keeps the first N of the same order; ``tag`` keeps concepts
        carrying that tag (case-folded). An empty or blank query has no results.
        """
        rows = self._native.search_rows(text, tag=tag, limit=limit)
        return [Hit(cid, score, title, excerpt, path) for cid, score, title, excerpt, path in rows]

    def search_arrays(
        self, text: str, *, tag: str | None = None, limit: int | None = None
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint32]]:
        """The same order as :meth:`search` as two numpy arrays, no object per hit.

        ``positions`` (``int32``) index :attr:`concept_ids`; ``scores`` are ``uint32``.
        """
        return self._native.search_arrays(text, tag=tag, limit=limit)

    def excerpt(self, concept_id: str, text: str) -> str:
        """SPEC §3.5 excerpt of one concept for a query."""
        pos = self._native.position(concept_id)
        if pos is None:
            raise ConceptNotFoundError(f"no concept {concept_id!r} in bundle {str(self.root)!r}")
        return self._native.excerpt(pos, text)
