"""``FileMemoryStore``: scoped memory as OKF concepts on a local disk (SPEC §6.3).

Every operation returns data and never raises for a data condition: a bad
name, an unconfigured tier, a symbolic link, a file that does not parse or an
I/O error is an ``error`` / a diagnostic in the result.

Who may do what (see :mod:`okfast.memory.scope` for ownership):

- ``read`` and ``enumerate`` cover the tiers that apply to the scope, in the
  order session → user → tenant: a scope sees its own memory and its
  ancestors' (a session sees its user's and tenant's), never a sibling's.
- ``write`` appends to any tier that applies to the scope (a session may
  capture into its user's memory — the default of ``capture``).
- ``delete_scope`` removes only what the scope owns: the tier directories of
  its own level (all three ``_local`` ones for the local scope). It never
  removes an ancestor's shared memory — deleting user ``A/alice`` leaves
  tenant ``A``'s memory alone — and removes descendants (a user's sessions, a
  tenant's users) only with ``cascade=True``, which is what a data-subject
  erasure request wants.

The store is for local file systems: see :mod:`okfast.memory.files`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from okfast.arguments import flag_of, search_arguments
from okfast.bundle import Bm25fQuery, Bundle, QueryTerms, query_terms
from okfast.catalog import Catalog
from okfast.errors import (
    EntryError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    UnsafePathError,
)
from okfast.memory import files
from okfast.memory.entry import (
    MAX_FILE_BYTES,
    MemoryEntry,
    appended,
    check_name,
    check_section,
    new_file,
    parse_problem,
    render_frontmatter,
)
from okfast.memory.scope import (
    READ_ORDER,
    Scope,
    Tier,
    applies,
    below_path,
    memory_path,
    own_tier,
    tier_of,
)
from okfast.model import Diagnostic, DiagnosticCode, Passage, passage_from_fields
from okfast.scoring import BM25FParams, Scorer, scorer_of

_CACHE_SIZE = 32  # bundle snapshots kept warm; each holds one inotify instance
_MOVED_RETRIES = 32


@dataclass(frozen=True, slots=True)
class MemoryReadResult:
    passages: tuple[Passage, ...]
    diagnostics: tuple[Diagnostic, ...]


@dataclass(frozen=True, slots=True)
class MemoryWriteResult:
    written: bool
    error: str | None = None
    #: ``memory_path/name`` of the concept appended to (also set on failure
    #: when the target was known).
    concept_id: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryDeleteResult:
    tiers_deleted: tuple[Tier, ...]
    error: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryConcept:
    tier: Tier
    concept_id: str
    title: str | None
    #: The concept's body, only when enumerated with ``bodies=True``.
    body: str | None = None


class MemoryListing(list[MemoryConcept]):
    """What ``enumerate`` returns: the list of :class:`MemoryConcept` of SPEC
    §6.3 (tier read order, then id order), with the problems met in
    ``diagnostics`` (a planted link, an unreadable tier)."""

    def __init__(self, concepts: Iterable[MemoryConcept], diagnostics: Iterable[Diagnostic]):
        super().__init__(concepts)
        self.diagnostics: tuple[Diagnostic, ...] = tuple(diagnostics)

    @property
    def concepts(self) -> tuple[MemoryConcept, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return f"MemoryListing({list(self)!r}, diagnostics={list(self.diagnostics)!r})"


def _unavailable(tier: Tier, message: str) -> Diagnostic:
    return Diagnostic(
        code=DiagnosticCode.SOURCE_UNAVAILABLE.value,
        message=message,
        source_id=f"memory:{tier.value}",
        severity="error",
    )


def _scope_of(scope: object) -> Scope:
    """``scope`` when it is a :class:`Scope`: a wrong type is an argument error
    (docs/spec.md §8), never an ``AttributeError`` from deep in an operation."""
    if not isinstance(scope, Scope):
        raise InvalidArgumentTypeError(f"scope must be a Scope, got {type(scope).__name__}")
    return scope


def _root_of(tier: Tier, root: object) -> str:
    """A tier root as an absolute ``str`` path. A path holding NUL or a lone
    surrogate names no file on any disk: it is refused here, as the catalog
    refuses it (docs/spec.md §4, §6.3), rather than failing every operation."""
    if isinstance(root, bytes) or not isinstance(root, str | os.PathLike):
        raise InvalidArgumentTypeError(
            f"memory tier {tier.value!r} root must be a str or os.PathLike path, "
            f"got {type(root).__name__}"
        )
    path = os.fspath(root)
    if not isinstance(path, str):
        raise InvalidArgumentTypeError(
            f"memory tier {tier.value!r} root must be a str path, got {type(path).__name__}"
        )
    if "\x00" in path:
        raise InvalidArgumentError(f"memory tier {tier.value!r} root contains a NUL character")
    if path == "":
        # Made absolute, "" is the working directory: never a choice (§1.6).
        raise InvalidArgumentError(
            f"memory tier {tier.value!r} root is empty: an empty path names no directory"
        )
    try:
        os.fsencode(path)
    except UnicodeEncodeError as e:
        raise InvalidArgumentError(
            f"memory tier {tier.value!r} root {path!r} is not a valid path: "
            f"it cannot be encoded for the file system ({e.reason})"
        ) from None
    return os.path.abspath(path)


class FileMemoryStore:
    """Memory tiers rooted at directories: ``{Tier.USER: "/srv/mem/user", …}``.
    A tier without a root is not configured; writing to it is an error."""

    def __init__(self, roots: Mapping[Tier | str, str | os.PathLike[str]]) -> None:
        if not isinstance(roots, Mapping):
            raise InvalidArgumentTypeError(
                f"roots must be a mapping of tier to path, got {type(roots).__name__}"
            )
        self._roots: dict[Tier, str] = {}
        for tier, root in roots.items():
            t = tier_of(tier)
            self._roots[t] = _root_of(t, root)
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, tuple[files.DirHandle, Bundle]] = OrderedDict()
        #: How many deletes this store has finished: a snapshot loaded while
        #: one ran is served but not kept (docs/spec.md §6.3).
        self._erasures = 0

    @classmethod
    def from_catalog(cls, catalog: Catalog) -> FileMemoryStore:
        """The enabled ``role: memory`` sources of a catalog, one per tier."""
        if not isinstance(catalog, Catalog):
            raise InvalidArgumentTypeError(
                f"catalog must be a Catalog, got {type(catalog).__name__}"
            )
        return cls(
            {
                Tier(s.tier): s.directory
                for s in catalog.sources
                if s.role == "memory" and s.enabled and s.tier and s.directory is not None
            }
        )

    @property
    def roots(self) -> dict[Tier, Path]:
        return {t: Path(r) for t, r in self._roots.items()}

    def __repr__(self) -> str:
        return f"FileMemoryStore({ {t.value: r for t, r in self._roots.items()}!r})"

    # -- reading ---------------------------------------------------------------

    def _tiers(self, scope: Scope) -> list[Tier]:
        return [t for t in READ_ORDER if t in self._roots and applies(t, scope)]

    def _snapshot(
        self, tier: Tier, scope: Scope, language: str | None = None
    ) -> tuple[Bundle | None, Diagnostic | None]:
        """The scope's directory of one tier as a loaded bundle analysed for
        ``language`` (``None`` when it does not exist), checked link-free from
        the tier root down."""
        rel = memory_path(tier, scope)
        if not files.SUPPORTED:
            return None, _unavailable(tier, "memory needs a POSIX file system API")
        with self._lock:
            erasures = self._erasures
        try:
            root_fd = files.open_root(self._roots[tier])
            if root_fd is None:
                return None, _unavailable(tier, f"memory tier root {self._roots[tier]} is missing")
            try:
                fd = files.open_chain(root_fd, rel.split("/"), create=False)
            finally:
                os.close(root_fd)
            path = os.path.join(self._roots[tier], *rel.split("/"))
            if fd is None:
                self._forget(path)
                return None, None
            try:
                here = files.DirHandle(fd, path)
            except BaseException:
                os.close(fd)
                raise
            slot = f"{path}\0{language}"
            with self._lock:
                cached = self._cache.get(slot)
            if cached is not None and cached[0].key == here.key:
                # The same directory (the cached handle keeps it from being
                # freed, so its number is not another's): refreshed through
                # the handle it was loaded through. An empty bundle is falsy:
                # compare with None, or a scope whose last file went would
                # go on serving it.
                here = cached[0]
                with files.read_locked(here.fd):
                    fresh = cached[1].refresh()
                bundle = cached[1] if fresh is None else fresh
            else:
                # Never cached: a cache file would outlive delete_scope (erasure).
                with files.read_locked(here.fd):
                    bundle = Bundle.load(here.path, cache=False, language=language)
            with self._lock:
                # A delete that finished meanwhile cleared the snapshots: this
                # one may be of what it erased, so it is not put back.
                if self._erasures == erasures:
                    self._cache[slot] = (here, bundle)
                    self._cache.move_to_end(slot)
                while len(self._cache) > _CACHE_SIZE:
                    self._cache.popitem(last=False)
            return bundle, None
        except UnsafePathError as e:
            return None, _unavailable(tier, f"{rel}: {e}")
        except FileNotFoundError:
            # Deleted while we looked: empty, as if never there.
            self._forget(os.path.join(self._roots[tier], *rel.split("/")))
            return None, None
        except OSError as e:
            return None, _unavailable(tier, f"{rel}: {e.strerror or e}")

    def _forget(self, path: str) -> None:
        """Drop the snapshots of a scope directory found gone (erased by
        another store or process): nothing of an erased scope is kept, in
        memory either, once a read has seen it go (docs/spec.md §6.3)."""
        with self._lock:
            for slot in [k for k in self._cache if k.split("\0", 1)[0] == path]:
                del self._cache[slot]

    def _bundles(
        self, scope: Scope, diags: list[Diagnostic], language: str | None = None
    ) -> Iterator[tuple[Tier, Bundle, str, str]]:
        """``(tier, bundle, source_id, concept id prefix)`` of each applicable tier
        whose directory exists, in read order, its BM25F tokens analysed for
        ``language``; problems go to ``diags``."""
        for tier in self._tiers(scope):
            bundle, problem = self._snapshot(tier, scope, language)
            if problem is not None:
                diags.append(problem)
            if bundle is None:
                continue
            sid, here = f"memory:{tier.value}", memory_path(tier, scope)
            # Paths from the tier root, as a passage's are (docs/spec.md §6.3):
            # the scope directory's own name would say nothing of the scope.
            diags.extend(
                Diagnostic(d.code, d.message, _below(here, d.path), sid, d.severity)
                for d in bundle.diagnostics
            )
            yield tier, bundle, sid, here + "/"

    def read(
        self,
        scope: Scope,
        text: str,
        *,
        limit: int | None = None,
        scorer: Scorer | str = Scorer.WEIGHTED_COUNT,
        bm25f: BM25FParams | None = None,
        tag: str | None = None,
    ) -> MemoryReadResult:
        """Memory passages for ``text``: for each applicable tier in read order,
        the scope's directory searched as a bundle with the knowledge scorer
        (``scorer``; BM25F and fusion score each tier with its own statistics
        and ``bm25f.language``). ``source_id`` is ``memory:<tier>``; ``concept_id``
        is ``memory_path + "/" + id``; ``limit`` caps the passages of each tier;
        ``tag`` keeps the concepts carrying it (the filter of docs/spec.md §3.6)."""
        # Every argument is checked here, before any tier is looked at, not
        # only by the bundles searched: a scope without memory yet must refuse
        # a bad one too (docs/spec.md §6.3, §8).
        scope = _scope_of(scope)
        how = scorer_of(scorer)
        tag, limit, params = search_arguments(tag, limit, bm25f)
        terms = query_terms(text)
        passages: list[Passage] = []
        diags: list[Diagnostic] = []
        language = None if how is Scorer.WEIGHTED_COUNT else params.language
        for _tier, bundle, sid, prefix in self._bundles(scope, diags, language):
            query: QueryTerms | Bm25fQuery = terms
            score: npt.NDArray[np.uint32] | npt.NDArray[np.float64]
            if how is not Scorer.WEIGHTED_COUNT:
                # BM25F's tokens make the excerpt of BM25F and fusion passages.
                query = bundle.bm25f_query(text, params)
            asked = terms if how is Scorer.WEIGHTED_COUNT else text
            pos, score = bundle.search_arrays(asked, tag=tag, limit=limit, scorer=how, bm25f=params)
            for p, sc in zip(pos.tolist(), score.tolist(), strict=True):
                passages.append(
                    passage_from_fields(
                        bundle.passage_fields(p, query),
                        source_id=sid,
                        score=sc,
                        priority=0,
                        default_authority=None,
                        is_stale=False,
                        body=_body_reader(bundle, p),
                        prefix=prefix,
                    )
                )
        return MemoryReadResult(tuple(passages), tuple(diags))

    def enumerate(self, scope: Scope, *, bodies: bool = False) -> MemoryListing:
        """The scope's memory concepts (applicable tiers, read order, id order);
        ``bodies=True`` includes each body (an export for an access request)."""
        scope = _scope_of(scope)
        bodies = flag_of("bodies", bodies)
        out: list[MemoryConcept] = []
        diags: list[Diagnostic] = []
        for tier, bundle, _sid, prefix in self._bundles(scope, diags):
            no_terms = query_terms("")
            for pos, cid in enumerate(bundle.concept_ids):
                title = bundle.passage_fields(pos, no_terms).title
                body = bundle.body_at(pos) if bodies else None
                out.append(MemoryConcept(tier, prefix + cid, title, body))
        return MemoryListing(out, diags)

    # -- writing ---------------------------------------------------------------

    def _check_tier(self, scope: Scope, tier: Tier | str) -> Tier:
        try:
            t = Tier(tier)
        except ValueError:
            raise EntryError(f"unknown memory tier {tier!r}") from None
        if t not in self._roots:
            raise EntryError(f"memory tier {t.value!r} is not configured")
        if not applies(t, scope):
            raise EntryError(f"memory tier {t.value!r} does not apply to scope {scope}")
        if not files.SUPPORTED:
            raise EntryError("memory needs a POSIX file system API (dir_fd, O_NOFOLLOW, flock)")
        return t

    def write(self, scope: Scope, entry: MemoryEntry, tier: Tier | str) -> MemoryWriteResult:
        """Append ``entry.section`` to ``memory_path/entry.name`` (created with
        ``entry.frontmatter`` when new) as one atomic, durable step under the
        scope directory's lock. An existing file that does not parse is left
        byte for byte as it is."""
        # Wrong types are argument errors, raised (docs/spec.md §8); what is
        # wrong inside an entry is a refused write (§6.3).
        scope = _scope_of(scope)
        if not isinstance(entry, MemoryEntry):
            raise InvalidArgumentTypeError(
                f"entry must be a MemoryEntry, got {type(entry).__name__}"
            )
        cid = None
        try:
            t = self._check_tier(scope, tier)
            name = check_name(entry.name)
            where = memory_path(t, scope)
            cid = where + "/" + name
            if any(len(p.encode()) > 255 for p in where.split("/")):
                raise EntryError("a scope id is too long for a directory name (max 238 bytes)")
            section = check_section(entry.section)
            render_frontmatter(entry.frontmatter)  # producer check before any I/O
            self._append(t, scope, entry, name, section)
        except EntryError as e:
            return MemoryWriteResult(False, str(e), cid)
        except UnsafePathError as e:
            return MemoryWriteResult(False, f"refused: {e}", cid)
        except OSError as e:
            return MemoryWriteResult(False, f"I/O error: {e}", cid)
        return MemoryWriteResult(True, None, cid)

    def _append(self, t: Tier, scope: Scope, entry: MemoryEntry, name: str, section: str) -> None:
        parts = memory_path(t, scope).split("/")
        fname = name + ".md"
        root_fd = files.open_root(self._roots[t])
        if root_fd is None:
            raise EntryError(f"memory tier root {self._roots[t]} is missing")
        try:
            for _ in range(_MOVED_RETRIES):
                with contextlib.ExitStack() as held:
                    # A delete may have renamed a directory of the chain away
                    # while we waited for its lock: start again on the live one.
                    fd = files.lock_chain(root_fd, parts, held)
                    if fd is None:
                        continue
                    files.sweep(fd)
                    old = files.read_file(fd, fname)
                    if old is None:
                        data = new_file(entry, section)
                    else:
                        problem = parse_problem(name, old)
                        if problem is not None:
                            raise EntryError(
                                f"existing {fname} does not parse, left unchanged: {problem}"
                            )
                        data = appended(old, section)
                    if len(data) > MAX_FILE_BYTES:
                        raise EntryError(
                            f"{fname} would exceed 16 MiB, which readers skip; write to a new name"
                        )
                    files.replace_file(fd, fname, data)
                    return
            raise EntryError("the scope directory kept being deleted during the write")
        finally:
            os.close(root_fd)

    # -- deleting --------------------------------------------------------------

    def delete_scope(
        self, scope: Scope, tier: Tier | str | None = None, *, cascade: bool = False
    ) -> MemoryDeleteResult:
        """Remove the scope's own memory: the given tier, or every configured
        tier the scope owns. Each directory is renamed aside (atomically) and then
        removed, never following links. ``cascade=True`` also removes the
        memory of scopes below it (a user's sessions; a tenant's users and
        sessions). ``tiers_deleted`` lists the tiers where something existed."""
        scope = _scope_of(scope)
        cascade = flag_of("cascade", cascade)
        if not files.SUPPORTED:
            return MemoryDeleteResult((), "memory needs a POSIX file system API")
        own = own_tier(scope)
        if tier is None:
            wanted = [t for t in READ_ORDER if t in self._roots and (own is None or t is own)]
        else:
            try:
                t = Tier(tier)
            except ValueError:
                return MemoryDeleteResult((), f"unknown memory tier {tier!r}")
            if t not in self._roots:
                return MemoryDeleteResult((), f"memory tier {t.value!r} is not configured")
            if own is not None and t is not own:
                return MemoryDeleteResult(
                    (), f"scope {scope} owns {own.value} memory, not {t.value} memory"
                )
            wanted = [t]
        targets: list[tuple[Tier, list[str]]] = [
            (t, memory_path(t, scope).split("/")) for t in wanted
        ]
        if cascade and own is not None:
            # Below a tenant or a user: the same prefix in the lower tiers.
            for lower in READ_ORDER:
                if lower in self._roots and READ_ORDER.index(lower) < READ_ORDER.index(own):
                    targets.append((lower, below_path(lower, scope).split("/")))
        deleted: list[Tier] = []
        errors: list[str] = []
        for t, parts in targets:
            try:
                if self._delete(t, parts) and t not in deleted:
                    deleted.append(t)
            except (UnsafePathError, EntryError) as e:
                errors.append(f"{t.value}: refused: {e}")
            except OSError as e:
                errors.append(f"{t.value}: I/O error: {e}")
        with self._lock:
            self._erasures += 1
            self._cache.clear()
        deleted.sort(key=READ_ORDER.index)
        return MemoryDeleteResult(tuple(deleted), "; ".join(errors) or None)

    def _delete(self, t: Tier, parts: list[str]) -> bool:
        root_fd = files.open_root(self._roots[t])
        if root_fd is None:
            # An erasure that found no root proves nothing (an unmounted
            # volume): an error, as a read and a write report (docs/spec.md §6.3).
            raise EntryError(f"memory tier root {self._roots[t]} is missing")
        try:
            parent = files.open_chain(root_fd, parts[:-1], create=False)
            if parent is None:
                return False
            try:
                # What an earlier delete, killed, left renamed aside.
                files.sweep_aside(parent)
                for _ in range(_MOVED_RETRIES):
                    target = files.open_chain(parent, parts[-1:], create=False)
                    if target is None:
                        return False
                    try:
                        with files.locked(target, erasing=True) as held:
                            # Another delete may have renamed it aside (and a
                            # writer made a new one) while we waited: the one
                            # renamed must be the one locked (docs/spec.md §6.3).
                            if not held or not files.still_at(parent, parts[-1], target):
                                continue
                            # Directories holding only the lock files that
                            # writers below leave are no memory (§6.3).
                            existed = files.holds_files(target)
                            return files.delete_aside(parent, parts[-1]) and existed
                    finally:
                        os.close(target)
                raise EntryError("the scope directory kept being replaced during the delete")
            finally:
                os.close(parent)
        finally:
            os.close(root_fd)


def _below(directory: str, path: str | None) -> str | None:
    """A bundle diagnostic's ``path`` (``""``: the bundle's root) from the tier root."""
    if path is None:
        return None
    return f"{directory}/{path}" if path else directory


def _body_reader(bundle: Bundle, pos: int) -> Callable[[], str]:
    return lambda: bundle.body_at(pos)
