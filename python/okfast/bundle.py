"""The Python face of one loaded bundle (docs/spec.md §1, §3.7).

The native snapshot does the work; this class shapes results into the public
dataclasses and validates arguments. A ``Bundle`` is immutable: to see changes
on disk, load it again or :meth:`Bundle.refresh` it.

Besides the public search API, a ``Bundle`` offers the column and per-position
reads the resolver, governance and the memory store are built on
(:meth:`Bundle.stale_after_us`, :meth:`Bundle.passage_fields`, …): code outside
this module talks to a bundle through these methods, never through its native
snapshot.
"""

from __future__ import annotations

import operator
import os
import warnings
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import cast

import numpy as np
import numpy.typing as npt

from okfast import _native

# A query's terms, split and folded once (docs/spec.md §3.1); its BM25F
# tokens for one language (§12.1); the statistics a BM25F search is scored
# with (§12.4). Re-exported: code outside this module names them from here.
from okfast._native import Bm25fQuery as Bm25fQuery
from okfast._native import Bm25fStats as Bm25fStats
from okfast._native import QueryTerms as QueryTerms
from okfast.arguments import (
    batch_of,
    flag_of,
    load_arguments,
    of_type,
    search_arguments,
    text_of,
    texts_of,
)
from okfast.cache import CacheUse, cache_file
from okfast.errors import (
    CacheWarning,
    ConceptNotFoundError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
)
from okfast.model import Concept, Diagnostic, Hit, Severity
from okfast.paths import bundle_root
from okfast.scoring import (
    BM25FParams,
    Scorer,
    fuse,
    language_of,
    scorer_of,
    whole_of,
)

#: ``progress(phase, done, total)`` of :meth:`Bundle.load`.
Progress = Callable[[str, int, int], object]


def query_terms(text: str | QueryTerms) -> QueryTerms:
    """``text``'s terms, split and folded once per search: every source's
    search, the excerpts and ``explain`` take the same object."""
    return text if isinstance(text, QueryTerms) else QueryTerms(text_of("the query", text))


def _text_of(text: str | QueryTerms) -> str:
    """The text BM25F tokenizes: terms split on white space joined by one
    space give the same tokens (white space always separates UAX #29 words)."""
    # A str is checked once, where its tokens are made (Bundle.bm25f_query).
    return " ".join(text.written) if isinstance(text, QueryTerms) else text


class Bundle:
    """An OKF bundle loaded and indexed in memory.

    Searching is thread-safe and releases the GIL; any number of threads may
    search one bundle at once.
    """

    __slots__ = ("_native", "_cache", "__dict__")

    def __init__(self, native: _native.Bundle, cache: CacheUse | None = None) -> None:
        of_type("Bundle.load's native bundle", native, _native.Bundle)
        self._native = native
        self._cache = cache or CacheUse()

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        cache: bool = True,
        progress: Progress | None = None,
        language: str | None = None,
        id_range: tuple[str | None, str | None] | None = None,
    ) -> Bundle:
        """Load the bundle at ``path``.

        ``id_range=(lo, hi)`` keeps only the concept files whose ids are in
        ``lo <= id < hi`` in id order (``None``: an open bound), and the load
        diagnostics whose paths are (docs/spec.md §1.10): several processes
        can so each hold a share of one large bundle. A part has its own cache
        file, and its refreshes keep its range.

        ``language`` is the analyzer of its BM25F tokens (docs/spec.md §12.2):
        one of :data:`okfast.scoring.LANGUAGES`, or ``None`` (the default) to
        stem nothing.

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
        root = bundle_root(path)
        language = language_of(language)
        lo, hi = load_arguments(id_range, progress)
        if not flag_of("cache", cache):
            return cls(_native.Bundle.load(root, None, progress, language, lo, hi))
        file, why = cache_file(root, cache_dir, language, (lo, hi))
        if file is None:
            native = _native.Bundle.load(root, None, progress, language, lo, hi)
            return cls(native, CacheUse(detail=why))
        native = _native.Bundle.load(root, str(file), progress, language, lo, hi)
        r = native.load_report
        assert r is not None  # a load through a cache file reports on it
        b = cls(native, CacheUse(r.status, r.detail, file, r.reread, r.listed))
        if r.status == "rebuilt":
            warnings.warn(
                f"okfast: cache file {file} {r.detail}; it was rebuilt", CacheWarning, stacklevel=2
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

    @property
    def language(self) -> str | None:
        """The language its BM25F tokens are analysed for; ``None``: not stemmed."""
        return self._native.language

    def __len__(self) -> int:
        return len(self._native)

    def __contains__(self, concept_id: object) -> bool:
        return isinstance(concept_id, str) and self.position(concept_id) is not None

    def __repr__(self) -> str:
        return f"<okfast.Bundle {str(self.root)!r}: {len(self)} concepts>"

    # -- what the load did with the persistent cache -------------------------------

    @property
    def cache(self) -> CacheUse:
        """What the load did with the persistent cache, as one value."""
        return self._cache

    @property
    def cache_status(self) -> str:
        """``off``, ``hit``, ``partial``, ``miss`` or ``rebuilt`` (:class:`CacheUse`)."""
        return self._cache.status

    @property
    def cache_detail(self) -> str:
        return self._cache.detail

    @property
    def cache_file(self) -> Path | None:
        return self._cache.file

    @property
    def cache_reread(self) -> int | None:
        return self._cache.reread

    @property
    def cache_listed(self) -> int | None:
        return self._cache.listed

    @property
    def id_range(self) -> tuple[str | None, str | None]:
        """The ids this snapshot holds of its directory: ``(lo, hi)``, ``lo <= id
        < hi`` in id order, ``None`` an open bound; ``(None, None)`` for the
        whole bundle (docs/spec.md §1.10)."""
        return self._native.id_range

    #: The root directory its walk opened, as (device, inode): docs/spec.md §5.10.
    _root_identity = property(lambda self: self._native.root_identity)

    @property
    def made_by(self) -> str:
        """How this snapshot was made: ``load``, ``load, index kept`` (a load
        through the cache that read some files again, none with changed indexed
        text, and used the saved index; docs/spec.md §9.4) or ``load, index
        spliced`` (a few files read again with changed indexed text, added or
        removed, and the saved index spliced with theirs: the results of a
        rebuild, without one); by :meth:`refresh`, ``walk`` (every file
        compared), ``events`` (only the files the change queue named were
        looked at), ``events, index kept`` (and no indexed text changed, so the
        index is shared with the previous snapshot) or ``events, index
        spliced`` (a few concepts changed, the previous index spliced)."""
        return self._native.made_by

    @property
    def stored_texts(self) -> int:
        """How many concepts' body and frontmatter are read from the cache file
        when asked for (one positioned read each, checksummed) instead of being
        held in memory: every concept after a load through the cache, none with
        ``cache=False`` (docs/memory-model.md)."""
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
        """Concept ids in id order (docs/spec.md §1.2); positions index this tuple."""
        return tuple(self._native.concept_ids)

    @cached_property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        return tuple(diagnostic_of(d) for d in self._native.diagnostics)

    def position(self, concept_id: str) -> int | None:
        """The position of ``concept_id`` in :attr:`concept_ids`, if it is there."""
        if not isinstance(concept_id, str):
            raise InvalidArgumentTypeError(f"a concept id is text, got {type(concept_id).__name__}")
        try:
            return self._native.position(concept_id)
        except UnicodeEncodeError:
            return None  # a lone surrogate: no concept id holds one (§1.2)

    def _position_of(self, concept_id: str) -> int:
        pos = self.position(concept_id)
        if pos is None:
            raise ConceptNotFoundError(f"no concept {concept_id!r} in bundle {str(self.root)!r}")
        return pos

    def concept(self, concept_id: str) -> Concept:
        """Every field of one concept, body included."""
        return Concept._from_native(self._native.concept(self._position_of(concept_id)))

    # -- search ----------------------------------------------------------------------

    def search(
        self,
        text: str | QueryTerms,
        *,
        tag: str | None = None,
        limit: int | None = None,
        scorer: Scorer | str = Scorer.WEIGHTED_COUNT,
        bm25f: BM25FParams | None = None,
        rrf_k: int = 60,
    ) -> list[Hit]:
        """Concepts with a positive score, by score then id (docs/spec.md §3, §12).

        ``limit`` keeps the first N of the same order; ``tag`` keeps concepts
        carrying that tag (case-folded). An empty or blank query has no results.
        ``scorer=Scorer.BM25F`` scores with ``bm25f`` (default
        :class:`BM25FParams`) and the bundle's own statistics; its tokens are
        those of the language the bundle was loaded with. ``Scorer.FUSION``
        fuses the two rankings by reciprocal rank with constant ``rrf_k``
        (§12.10); its excerpts are BM25F's.
        """
        how = scorer_of(scorer)
        tag, limit, params = search_arguments(tag, limit, bm25f, rrf_k)
        if how is Scorer.WEIGHTED_COUNT:
            hits = self._native.search_hits(query_terms(text), tag=tag, limit=limit)
            return [Hit(h.concept_id, h.score, h.title, h.excerpt, h.path) for h in hits]
        query = self.bm25f_query(_text_of(text), params)
        pos, scores = self._ranked(text, query, how, params, tag, limit, rrf_k)
        return self._bm25f_hits(query, pos, scores)

    def search_many(
        self,
        texts: Sequence[str | QueryTerms],
        *,
        tag: str | None = None,
        limit: int | None = None,
        scorer: Scorer | str = Scorer.WEIGHTED_COUNT,
        bm25f: BM25FParams | None = None,
        rrf_k: int = 60,
    ) -> list[list[Hit]]:
        """:meth:`search` of each of ``texts``, in order, with the same
        arguments and the same results (docs/spec.md §3.7): the weighted
        count's and BM25F's queries scored in one native call, in parallel
        with the GIL released (with the weighted count, the excerpts too);
        fusion's one query at a time."""
        texts = texts_of(texts)
        how = scorer_of(scorer)
        tag, limit, params = search_arguments(tag, limit, bm25f, rrf_k)
        if how is Scorer.WEIGHTED_COUNT:
            terms = [query_terms(t) for t in texts]
            many = self._native.search_hits_many(terms, tag=tag, limit=limit)
            return [
                [Hit(h.concept_id, h.score, h.title, h.excerpt, h.path) for h in hits]
                for hits in many
            ]
        queries, found = self._ranked_many(texts, how, params, tag, limit, rrf_k)
        return [self._bm25f_hits(q, *r) for q, r in zip(queries, found, strict=True)]

    def _bm25f_hits(
        self,
        query: Bm25fQuery,
        pos: npt.NDArray[np.int32],
        scores: npt.NDArray[np.uint32] | npt.NDArray[np.float64],
    ) -> list[Hit]:
        ids = self.concept_ids
        out = []
        for p, sc in zip(pos.tolist(), scores.tolist(), strict=True):
            f = self._native.passage_fields(p, query)
            out.append(Hit(ids[p], sc, f.title, f.excerpt, f.path))
        return out

    def _bm25f_many(
        self, queries: list[Bm25fQuery], params: BM25FParams, tag: str | None, limit: int | None
    ) -> list[tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]]:
        """Each of ``queries`` scored with this bundle's own statistics for it
        (arguments already checked by the public search)."""
        stats = [self.bm25f_stats(q.tokens) for q in queries]
        return self._native.search_bm25f_many(queries, stats, params.native(), tag=tag, limit=limit)

    def search_arrays(
        self,
        text: str | QueryTerms,
        *,
        tag: str | None = None,
        limit: int | None = None,
        scorer: Scorer | str = Scorer.WEIGHTED_COUNT,
        bm25f: BM25FParams | None = None,
        rrf_k: int = 60,
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint32] | npt.NDArray[np.float64]]:
        """The same order as :meth:`search` as two numpy arrays, no object per hit.

        ``positions`` (``int32``) index :attr:`concept_ids`; scores are
        ``uint32`` for the weighted count, ``float64`` for BM25F and fusion.
        """
        how = scorer_of(scorer)
        tag, limit, params = search_arguments(tag, limit, bm25f, rrf_k)
        if how is Scorer.WEIGHTED_COUNT:
            return self._native.search_arrays(query_terms(text), tag=tag, limit=limit)
        query = self.bm25f_query(_text_of(text), params)
        return self._ranked(text, query, how, params, tag, limit, rrf_k)

    def _ranked(
        self,
        text: str | QueryTerms,
        query: Bm25fQuery,
        how: Scorer,
        params: BM25FParams,
        tag: str | None,
        limit: int | None,
        rrf_k: int,
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]:
        """A BM25F or fusion search's arrays, ``text``'s BM25F tokens
        ``query`` already made (:meth:`search` needs them for its excerpts)."""
        stats = self.bm25f_stats(query.tokens)
        # The public search checked the arguments: straight to the native calls.
        native = params.native()
        if how is Scorer.BM25F:
            return self._native.search_bm25f(query, stats, native, tag=tag, limit=limit)
        counted, _ = self._native.search_arrays(query_terms(text), tag=tag, limit=None)
        ranked, _ = self._native.search_bm25f(query, stats, native, tag=tag, limit=None)
        pos, fused = fuse(counted, ranked, self.ordinal_ranks(), rrf_k)
        return (pos, fused) if limit is None else (pos[:limit], fused[:limit])

    def search_arrays_many(
        self,
        texts: Sequence[str | QueryTerms],
        *,
        tag: str | None = None,
        limit: int | None = None,
        scorer: Scorer | str = Scorer.WEIGHTED_COUNT,
        bm25f: BM25FParams | None = None,
        rrf_k: int = 60,
    ) -> list[Found]:
        """:meth:`search_arrays` of each of ``texts``, in order, with the same
        arguments and the same results: the weighted count's and BM25F's
        queries scored in one native call, in parallel with the GIL released."""
        texts = texts_of(texts)
        how = scorer_of(scorer)
        tag, limit, params = search_arguments(tag, limit, bm25f, rrf_k)
        if how is Scorer.WEIGHTED_COUNT:
            terms = [query_terms(t) for t in texts]
            return list(self._native.search_arrays_many(terms, tag=tag, limit=limit))
        return self._ranked_many(texts, how, params, tag, limit, rrf_k)[1]

    def _ranked_many(
        self,
        texts: Sequence[str | QueryTerms],
        how: Scorer,
        params: BM25FParams,
        tag: str | None,
        limit: int | None,
        rrf_k: int,
    ) -> tuple[list[Bm25fQuery], list[Found]]:
        """A BM25F or fusion batch (arguments checked): each text's BM25F
        tokens (its excerpts' too) and its arrays. BM25F's are one native
        call; fusion's one fused search per query."""
        queries = [self.bm25f_query(_text_of(t), params) for t in texts]
        if how is Scorer.BM25F:
            return queries, list(self._bm25f_many(queries, params, tag, limit))
        kw = {"tag": tag, "limit": limit, "bm25f": params, "rrf_k": rrf_k}
        return queries, [self.search_arrays(t, scorer=how, **kw) for t in texts]  # type: ignore[arg-type]

    def excerpt(self, concept_id: str, text: str | QueryTerms) -> str:
        """docs/spec.md §3.5 excerpt of one concept for a query."""
        return self._native.excerpt(self._position_of(concept_id), query_terms(text))

    # -- BM25F (docs/spec.md §12) -------------------------------------------------------

    def bm25f_query(self, text: str, params: BM25FParams) -> Bm25fQuery:
        """``text``'s tokens for this bundle's language, stop words dropped
        when ``params`` asks."""
        params = of_type("params", params, BM25FParams)
        return Bm25fQuery(text_of("the query", text), self.language, params.stop_words)

    def bm25f_stats(self, tokens: list[str]) -> Bm25fStats:
        """This bundle's own statistics for ``tokens`` (any tokens: sources
        analysed for different languages sum theirs over all their tokens)."""
        texts_of(tokens)
        return self._native.bm25f_stats([text_of("a token", t) for t in tokens])

    def search_bm25f(
        self,
        query: Bm25fQuery,
        stats: Bm25fStats,
        params: BM25FParams,
        *,
        tag: str | None = None,
        limit: int | None = None,
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]:
        """Positions and BM25F scores, by score then id, scored with ``stats``
        (this bundle's own, or a catalog's)."""
        tag, limit, params = search_arguments(tag, limit, of_type("params", params, BM25FParams))
        query, stats = of_type("query", query, Bm25fQuery), of_type("stats", stats, Bm25fStats)
        return self._native.search_bm25f(query, stats, params.native(), tag=tag, limit=limit)

    def search_bm25f_many(
        self,
        queries: Sequence[Bm25fQuery],
        stats: Sequence[Bm25fStats],
        params: BM25FParams,
        *,
        tag: str | None = None,
        limit: int | None = None,
    ) -> list[tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]]:
        """:meth:`search_bm25f` of each of ``queries``, the ``i``-th scored
        with ``stats[i]``: one native call, in parallel with the GIL released."""
        tag, limit, params = search_arguments(tag, limit, of_type("params", params, BM25FParams))
        qs = [of_type("a query", q, Bm25fQuery) for q in batch_of("queries", queries, ())]
        sts = [of_type("stats", st, Bm25fStats) for st in batch_of("stats", stats, ())]
        return self._native.search_bm25f_many(qs, sts, params.native(), tag=tag, limit=limit)

    def explain_bm25f(
        self, position: int, query: Bm25fQuery, stats: Bm25fStats, params: BM25FParams
    ) -> list[_native.Bm25fTermPart]:
        """Per query token that adds to the concept's score, what each field
        adds (docs/spec.md §12.5)."""
        query, stats = of_type("query", query, Bm25fQuery), of_type("stats", stats, Bm25fStats)
        params = of_type("params", params, BM25FParams)
        return self._native.explain_bm25f(self._at(position), query, stats, params.native())

    # -- columns and per-position reads (for resolvers, governance, memory) ----------

    def _at(self, position: int) -> int:
        # The core checks the range too; a negative or huge int would fail
        # its conversion first, with a raw OverflowError (docs/spec.md §8).
        try:
            at = operator.index(position)  # numpy's ints too (result arrays)
        except TypeError:
            at = None
        if at is None or isinstance(position, bool | np.bool_):
            raise InvalidArgumentTypeError(f"a position is an int, got {position!r}")
        if not 0 <= at < len(self):
            raise InvalidArgumentError(f"position {at} out of range 0..{len(self)}")
        return at

    def stale_after_us(self) -> npt.NDArray[np.int64]:
        """Each concept's ``stale_after`` in microseconds since the epoch, by
        position; :data:`NEVER_STALE_US` where it has none."""
        return self._native.stale_after_us()

    def ordinal_ranks(self) -> npt.NDArray[np.uint32]:
        """Each concept id's rank in ordinal (code point) order, by position."""
        return self._native.ordinal_ranks()

    def authority_ranks(self) -> npt.NDArray[np.uint8]:
        """Each concept's authority rank (docs/spec.md §7), by position."""
        return self._native.authority_ranks()

    def governance(self) -> list[_native.GovernanceDecl]:
        """The concepts that declare supersession or conflicts, in position order."""
        return self._native.governance()

    def pinned(
        self, positions: npt.NDArray[np.int32], title_key: str, id_key: str
    ) -> npt.NDArray[np.bool_]:
        """docs/spec.md §5.8 pinning of each of ``positions``."""
        return self._native.pinned(
            positions, text_of("title_key", title_key), text_of("id_key", id_key)
        )

    def passage_fields(
        self, position: int, terms: QueryTerms | Bm25fQuery
    ) -> _native.PassageFields:
        """What a passage shows of the concept at ``position`` for ``terms``
        (its excerpt by the scorer the terms are for)."""
        return self._native.passage_fields(
            self._at(position), of_type("terms", terms, (QueryTerms, Bm25fQuery))
        )

    def authority_at(self, position: int) -> str | None:
        """The ``authority`` the concept at ``position`` declares, as written."""
        return self._native.passage_fields(self._at(position), _NO_TERMS).authority

    def body_at(self, position: int) -> str:
        """The body of the concept at ``position``."""
        return self._native.body(self._at(position))

    def explain_at(self, position: int, terms: QueryTerms) -> list[_native.TermFields]:
        """Which fields each term the concept at ``position`` holds matches
        (docs/spec.md §5.8)."""
        return self._native.explain(self._at(position), of_type("terms", terms, QueryTerms))


#: No terms: a concept's fields without an excerpt.
_NO_TERMS = QueryTerms("")

#: ``stale_after_us`` of a concept that declares no ``stale_after``.
NEVER_STALE_US: int = _native.NEVER_STALE_US


#: One search's positions and scores, in result order (``uint32`` scores
#: for the weighted count, ``float64`` for BM25F and fusion).
Found = tuple[npt.NDArray[np.int32], npt.NDArray[np.uint32] | npt.NDArray[np.float64]]


def diagnostic_of(d: _native.Diagnostic) -> Diagnostic:
    return Diagnostic(d.code, d.message, d.path, severity=cast(Severity, d.severity))


def read_concept(path: str, data: bytes) -> tuple[Concept | None, tuple[Diagnostic, ...]]:
    """One concept file's bytes read as a bundle reads them (docs/spec.md
    §1.3–1.4, without the walk's id and size checks): its concept, unless it
    is skipped, and its diagnostics."""
    r = _native.read_concept(path, data)
    concept = None if r.concept is None else Concept._from_native(r.concept)
    return concept, tuple(diagnostic_of(d) for d in r.diagnostics)


def split_ranges(path: str | os.PathLike[str], parts: int) -> list[tuple[str | None, str | None]]:
    """``parts`` consecutive id ranges that cut the bundle at ``path`` into
    parts of nearly equal numbers of concept files, for
    ``Bundle.load(id_range=…)`` (docs/spec.md §1.10). Only the directories are
    listed, no file is read; raises :class:`okfast.BundleNotFoundError` when
    ``path`` is not a readable directory."""
    n = whole_of(parts)
    if n is None or not 1 <= n <= MAX_PARTS:
        raise InvalidArgumentError(
            f"parts must be a whole number from 1 to {MAX_PARTS}, got {parts!r}"
        )
    return _native.split_ranges(bundle_root(path), n)


#: The most parts a bundle is cut into (docs/spec.md §1.10): each is an
#: actor's share, and the cut lists one range a part.
MAX_PARTS = 65_536
