"""``catalog.json``: the list of sources a resolver searches (SPEC §4).

Parsing never raises on bad data: it collects every problem as a
:class:`CatalogDiagnostic` in one pass. :meth:`Catalog.load` and
:meth:`Catalog.parse` then raise :class:`CatalogError` (a ``ValueError``)
carrying them all when there is any; :meth:`Catalog.reload` keeps the last
good snapshot instead.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from okfast import _native, strict_json
from okfast.errors import CatalogError as CatalogError  # re-exported from here too
from okfast.errors import InvalidArgumentTypeError
from okfast.paths import (
    directory_key,
    directory_text,
    first_link,
    is_absolute_spelling,
    is_within,
    join_lexically,
    path_text,
    reached,
)

ROOT_KEYS = frozenset({"version", "sources", "settings"})
SOURCE_KEYS = frozenset(
    {"id", "path", "priority", "enabled", "role", "tier", "authority", "language"}
)
ROLES = ("knowledge", "memory")
TIERS = ("session", "user", "tenant")
#: docs/spec.md §7 authority levels, highest first (the core's list).
AUTHORITIES: tuple[str, ...] = _native.AUTHORITIES
#: The analyzer languages a source may name (docs/spec.md §12.2).
LANGUAGES: tuple[str, ...] = _native.LANGUAGES
_SAFE_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
_I32 = (-(2**31), 2**31 - 1)


def is_safe_segment(s: object) -> bool:
    """SPEC §1.2: ``[A-Za-z0-9_][A-Za-z0-9_.-]*``, ASCII, at most 255 bytes."""
    return isinstance(s, str) and len(s) <= 255 and bool(_SAFE_SEGMENT.match(s))


@dataclass(frozen=True, slots=True)
class CatalogDiagnostic:
    code: str
    message: str
    source_id: str | None = None

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


@dataclass(frozen=True, slots=True)
class Source:
    """One catalog entry. ``directory`` is the resolved bundle directory of an
    enabled source (``None`` for a disabled one)."""

    id: str
    path: str
    priority: int = 0
    enabled: bool = True
    role: str = "knowledge"
    tier: str | None = None
    authority: str | None = None
    directory: Path | None = None
    #: The analyzer language of its BM25F tokens (docs/spec.md §12.2): a
    #: language name, ``"none"`` (no stemming), or ``None`` when the catalog
    #: names none (the query's or resolver's ``BM25FParams.language`` applies).
    language: str | None = None


#: A catalog's sources and the generation they belong to, read together
#: (:meth:`Catalog.snapshot`).
CatalogView = tuple[tuple[Source, ...], int]


@dataclass(frozen=True, slots=True)
class ReloadResult:
    ok: bool
    generation: int
    diagnostics: tuple[CatalogDiagnostic, ...] = ()


def _has_nul(doc: Any) -> bool:
    # A stack, not recursion: a document nested a few hundred deep (which
    # the JSON reader takes) would pass Python's recursion limit (§4.1).
    stack = [doc]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if "\x00" in v:
                return True
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, dict):
            if any("\x00" in k for k in v):
                return True
            stack.extend(v.values())
    return False


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _resolve(
    root: str, base: str, raw: str, sid: str | None, label: str = ""
) -> tuple[Path | None, CatalogDiagnostic | None]:
    """SPEC §4.2, in order; the first failure is the diagnostic."""
    name = repr(sid) if sid is not None else label

    def bad(code: str, msg: str) -> tuple[None, CatalogDiagnostic]:
        return None, CatalogDiagnostic(code, msg, sid)

    if raw.strip() == "":
        return bad("EmptyPath", f"source {name} has an empty path")
    if is_absolute_spelling(raw):
        return bad(
            "AbsolutePath",
            f"source {name}: path {raw!r} is absolute; write it relative to the catalog",
        )
    if "\x00" in raw:
        return bad("InvalidPath", f"source {name}: path contains a NUL character")
    try:
        full = join_lexically(base, raw)
        os.fsencode(full)
    except (ValueError, UnicodeError) as e:
        return bad("InvalidPath", f"source {name}: path {raw!r} is not a valid path ({e})")
    if not is_within(full, root):
        return bad(
            "OutsideRoot",
            f"source {name}: path {raw!r} resolves to {full}, outside the catalog root {root}",
        )
    if not os.path.isdir(full):
        return bad("TargetNotFound", f"source {name}: {full} is not an existing directory")
    link = first_link(root, full)
    if link is not None:
        return bad("ReparsePointInPath", f"source {name}: {link}")
    return Path(full), None


def link_on_path(root: str | None, source: Source) -> tuple[str | None, tuple[int, int] | None]:
    """:meth:`Catalog.link_on_path` from the catalog root ``root``."""
    if root is None or source.directory is None:
        return None, None
    full = str(source.directory)
    why = first_link(root, full)
    return (why, None) if why is not None else reached(root, full)


@dataclass(frozen=True)
class Placed:
    """An enabled entry whose path resolved, problems elsewhere or not: what
    the memory overlap check compares (§4.2)."""

    label: str
    role: str
    directory: Path


def _parse_source(
    i: int,
    e: dict[str, Any],
    seen_ids: set[str],
    seen_tiers: dict[str, str],
    croot: str,
    base: str,
) -> tuple[Source | None, list[CatalogDiagnostic], Placed | None]:
    """One ``sources[i]`` entry: the source (when it has no problem), its
    diagnostics, and where it is (when its path resolved, problems or not)."""
    raw_id = e.get("id")
    sid = raw_id if isinstance(raw_id, str) else None
    diags: list[CatalogDiagnostic] = []

    def add(code: str, msg: str) -> None:
        diags.append(CatalogDiagnostic(code, msg, sid))

    for k in e:
        if k not in SOURCE_KEYS:
            add("UnknownSourceProperty", f"sources[{i}]: unknown property {k!r}")
    if sid is None or not is_safe_segment(sid):
        add(
            "InvalidSourceId",
            f"sources[{i}]: id {raw_id!r} must match [A-Za-z0-9_][A-Za-z0-9_.-]* (at most 255 bytes)",
        )
    elif sid in seen_ids:
        add("DuplicateSourceId", f"sources[{i}]: id {sid!r} is used twice")
    else:
        seen_ids.add(sid)
    raw_enabled = e.get("enabled", True)
    enabled = raw_enabled if isinstance(raw_enabled, bool) else True
    path = e.get("path", None if enabled else "")
    if not isinstance(path, str):
        add("EmptyPath", f"sources[{i}]: 'path' must be a non-empty string")
        path = None
    elif enabled and path.strip() == "":
        # A disabled source's path is not resolved (§4.2), so it may be
        # left out or blank: a source switched off before its bundle exists.
        add("EmptyPath", f"sources[{i}]: 'path' must be a non-empty string")
        path = None
    priority = e.get("priority", 0)
    if not (_is_int(priority) and _I32[0] <= priority <= _I32[1]):
        add(
            "MalformedPriority",
            f"sources[{i}]: priority must be a 32-bit integer, got {priority!r}",
        )
        priority = 0
    if not isinstance(raw_enabled, bool):
        add("MalformedEnabled", f"sources[{i}]: enabled must be true or false, got {raw_enabled!r}")
    role = e.get("role", "knowledge")
    if role not in ROLES:
        add("IllegalRole", f"sources[{i}]: role must be 'knowledge' or 'memory', got {role!r}")
        role = "knowledge"
    tier = e.get("tier")
    if role == "memory":
        if tier not in TIERS:
            add(
                "IllegalTier",
                f"sources[{i}]: a memory source needs tier 'session', 'user' or 'tenant', got {tier!r}",
            )
        elif tier in seen_tiers and enabled:
            add(
                "DuplicateMemoryTier",
                f"sources[{i}]: tier {tier!r} is already served by {seen_tiers[tier]!r}",
            )
        elif enabled:  # a disabled source serves no tier (docs/spec.md §4.1)
            seen_tiers[tier] = sid or f"sources[{i}]"
    elif "tier" in e:
        add("IllegalTier", f"sources[{i}]: a knowledge source may not have a tier")
    authority = e.get("authority")
    if authority is not None and authority not in AUTHORITIES:
        add(
            "IllegalAuthority",
            f"sources[{i}]: authority must be one of {', '.join(AUTHORITIES)}, got {authority!r}",
        )
        authority = None
    language = e.get("language")
    if language is not None and language != "none" and language not in LANGUAGES:
        add(
            "IllegalLanguage",
            f"sources[{i}]: language must be one of {', '.join(LANGUAGES)} or 'none', got {language!r}",
        )
        language = None
    directory = None
    if enabled and path is not None:
        # Checked whatever else is wrong with the entry: every problem is
        # reported (§4.1), and an overlap with memory is found (§4.2).
        directory, d = _resolve(croot, base, path, sid, f"sources[{i}]")
        if d is not None:
            diags.append(d)
    placed = None if directory is None else Placed(sid or f"sources[{i}]", role, directory)
    if diags or sid is None or path is None:
        return None, diags, placed
    tier = tier if role == "memory" else None
    source = Source(sid, path, priority, enabled, role, tier, authority, directory, language)
    return source, diags, placed


def parse_catalog(
    text: str, *, base_dir: str | os.PathLike[str], root: str | os.PathLike[str] | None = None
) -> tuple[tuple[Source, ...], tuple[CatalogDiagnostic, ...]]:
    """Parse catalog text: ``(sources, diagnostics)``; never raises on bad data."""
    sources, diags, _settings = _parse(text, base_dir, root)
    return sources, diags


def _settings_path(raw: Any, croot: str, base: str) -> tuple[Path | None, CatalogDiagnostic | None]:
    """docs/spec.md §4.1 ``settings``: a relative path to a file inside the
    root (which need not exist yet: ``okfast tune --apply`` creates it)."""
    if not isinstance(raw, str) or raw.strip() == "" or "\x00" in raw:
        return None, CatalogDiagnostic(
            "MalformedSettings", f"'settings' must be a non-empty relative path, got {raw!r}"
        )
    if is_absolute_spelling(raw):
        return None, CatalogDiagnostic(
            "MalformedSettings", f"'settings' path {raw!r} is absolute; write it relative"
        )
    try:
        full = join_lexically(base, raw)
        os.fsencode(full)
    except (ValueError, UnicodeError) as e:
        return None, CatalogDiagnostic(
            "MalformedSettings", f"'settings' path {raw!r} is not a valid path ({e})"
        )
    if not is_within(full, croot):
        return None, CatalogDiagnostic(
            "MalformedSettings", f"'settings' path {raw!r} resolves to {full}, outside the root"
        )
    return Path(full), None


def _memory_overlaps(sources: list[Placed]) -> list[CatalogDiagnostic]:
    """An enabled memory source whose directory is, is inside or holds an
    enabled knowledge source's (docs/spec.md §4.2): the knowledge bundle's
    walk would load every scope's memory as knowledge that any scope can
    search, or the store would read knowledge files as a scope's memory.
    Source paths hold no links below the root (§4.2), so comparing them
    lexically is exact."""
    knowledge = [(s, directory_key(s.directory)) for s in sources if s.role == "knowledge"]
    out = []
    for m in sources:
        if m.role != "memory":
            continue
        mk = directory_key(m.directory)
        for k, kk in knowledge:
            if is_within(mk, kk) or is_within(kk, mk):
                where = "is" if mk == kk else "is inside" if is_within(mk, kk) else "holds"
                out.append(
                    CatalogDiagnostic(
                        "MemoryOverlapsKnowledge",
                        f"memory source {m.label!r}: {m.directory} {where} the directory of "
                        f"knowledge source {k.label!r}; a scope's memory would be searchable "
                        "as knowledge by every scope",
                        None if m.label.startswith("sources[") else m.label,
                    )
                )
                break
    return out


def _root_of(base_dir: str | os.PathLike[str], root: str | os.PathLike[str] | None) -> str:
    """The root source paths resolve against: ``root`` when given, else the
    catalog's directory; absolute and normalised (§4.2)."""
    at = directory_text("root", root) if root is not None else directory_text("base_dir", base_dir)
    return os.path.normpath(os.path.abspath(at))


def _parse(
    text: str, base_dir: str | os.PathLike[str], root: str | os.PathLike[str] | None
) -> tuple[tuple[Source, ...], tuple[CatalogDiagnostic, ...], Path | None]:
    base = os.path.normpath(os.path.abspath(directory_text("base_dir", base_dir)))
    croot = _root_of(base, root)
    diags: list[CatalogDiagnostic] = []
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        doc = strict_json.loads(text)
    except ValueError as e:
        return (), (CatalogDiagnostic("ParseError", f"catalog is not valid JSON: {e}"),), None
    if not isinstance(doc, dict):
        return (), (CatalogDiagnostic("ParseError", "catalog root must be a JSON object"),), None
    if _has_nul(doc):
        diags.append(
            CatalogDiagnostic("EmbeddedNul", "catalog contains a NUL character in a string or key")
        )
    for k in doc:
        if k not in ROOT_KEYS:
            diags.append(CatalogDiagnostic("UnknownRootProperty", f"unknown root property {k!r}"))
    if not (_is_int(doc.get("version")) and doc.get("version") == 1):
        diags.append(
            CatalogDiagnostic(
                "WrongVersion", f"catalog version must be the integer 1, got {doc.get('version')!r}"
            )
        )
    entries = doc.get("sources")
    if not isinstance(entries, list) or not entries:
        diags.append(CatalogDiagnostic("EmptySources", "catalog needs a non-empty 'sources' array"))
        entries = []
    # A root problem, as the others above: before the entries' (§4.1).
    settings = None
    if "settings" in doc:
        settings, d = _settings_path(doc["settings"], croot, base)
        if d is not None:
            diags.append(d)
    sources: list[Source] = []
    placed: list[Placed] = []
    seen_ids: set[str] = set()
    seen_tiers: dict[str, str] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            diags.append(CatalogDiagnostic("ParseError", f"sources[{i}] must be a JSON object"))
            continue
        src, problems, where = _parse_source(i, entry, seen_ids, seen_tiers, croot, base)
        diags += problems
        if src is not None:
            sources.append(src)
        if where is not None:
            placed.append(where)
    diags += _memory_overlaps(placed)
    return tuple(sources), tuple(diags), settings


#: Held while a reload replaces a catalog's snapshot and while a search reads
#: one (:meth:`Catalog.snapshot`): one lock for all catalogs (reloads are
#: rare and reads short), so a catalog holds none and pickles as it is.
_RELOAD = threading.Lock()
#: Held by a reload from its read to its install (searches never take it).
_RELOADING = threading.Lock()


def _is_regular(path: Path) -> bool:
    """Whether ``path`` is a regular file (following links), or is missing
    or unreadable: a reload then reports what reading it says."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return True


@dataclass
class Catalog:
    """A parsed catalog snapshot (SPEC §4). Sources keep file order."""

    sources: tuple[Source, ...]
    path: Path | None = None
    root: Path | None = None
    generation: int = 1
    _base_dir: Path | None = field(default=None, repr=False)
    #: The settings file the catalog names (docs/spec.md §13), resolved; it
    #: may not exist yet.
    settings_path: Path | None = None
    #: ``sha256:`` + hex of the bytes this snapshot was parsed from (None for
    #: :meth:`parse`): what a tuning's provenance names (docs/spec.md §14.3),
    #: even if the file changes afterwards.
    sha256: str | None = None
    #: The root source paths were resolved against (absolute, normalised),
    #: checked again for links before each load (docs/spec.md §5.10);
    #: ``None`` for a catalog made from its sources directly.
    _resolved_root: str | None = field(default=None, repr=False)
    _by_id: tuple[tuple[Source, ...], dict[str, Source]] = field(
        default=((), {}), repr=False, compare=False
    )

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None
    ) -> Catalog:
        """Read and parse ``path``; raises :class:`CatalogError` listing every problem."""
        p = Path(os.path.abspath(path_text("a catalog path", path)))
        if root is not None:
            directory_text("root", root)
        sources, diags, settings, digest = _read_and_parse(p, root)
        if diags:
            raise CatalogError(diags)
        root_path = Path(root) if root is not None else None
        at = _root_of(p.parent, root)
        return cls(sources, p, root_path, 1, p.parent, settings, digest, at)

    @classmethod
    def parse(
        cls,
        text: str,
        *,
        base_dir: str | os.PathLike[str],
        root: str | os.PathLike[str] | None = None,
    ) -> Catalog:
        if not isinstance(text, str):
            raise InvalidArgumentTypeError(f"a catalog's text is a str, got {type(text).__name__}")
        sources, diags, settings = _parse(text, base_dir, root)
        if diags:
            raise CatalogError(diags)
        root_path = Path(root) if root is not None else None
        at = _root_of(base_dir, root)
        return cls(sources, None, root_path, 1, Path(base_dir), settings, None, at)

    def link_on_path(self, source: Source) -> tuple[str | None, tuple[int, int] | None]:
        """Why ``source``'s directory may not be loaded now: a symbolic link
        put between the catalog root and it since the catalog was read
        (docs/spec.md §4.2, §5.10); ``None`` when there is none. Beside it,
        the device and inode of the directory reached from the root without
        following a link, which the load must then have opened (on POSIX;
        ``None`` where it cannot be told)."""
        return link_on_path(self._resolved_root, source)

    @property
    def resolved_root(self) -> str | None:
        """The directory sources' paths are checked for links from (§4.2)."""
        return self._resolved_root

    def snapshot(self) -> CatalogView:
        """The sources and the generation they belong to, read together: a
        :meth:`reload` running meanwhile gives both before or both after it
        (docs/spec.md §4.3), never one of each."""
        with _RELOAD:
            return self.sources, self.generation

    def source(self, source_id: str) -> Source | None:
        # One lookup, not a scan (MCP's list_sources asks once per source); the
        # map follows `sources` when a reload or a caller replaces them.
        sources, by_id = self._by_id
        if sources is not self.sources:
            sources = self.sources
            by_id = {s.id: s for s in reversed(sources)}  # the first of an id wins
            self._by_id = (sources, by_id)
        return by_id.get(source_id)

    def reload(self) -> ReloadResult:
        """Read the file again. On success the sources are replaced and the
        generation goes up; on failure the current snapshot stays."""
        if self.path is None:
            return ReloadResult(
                False,
                self.generation,
                (
                    CatalogDiagnostic(
                        "ParseError", "catalog was parsed from text; nothing to reload"
                    ),
                ),
            )
        if not _is_regular(self.path):
            # A FIFO (`--catalog <(...)`) was read once; a second read would
            # wait for a writer that never comes (docs/spec.md §4.3).
            why = f"catalog {self.path} is not a regular file; nothing to reload"
            return ReloadResult(False, self.generation, (CatalogDiagnostic("ParseError", why),))
        # One reload at a time, read to installed: one that read an older
        # file must not install it after one that read the newer (§4.3).
        with _RELOADING:
            # The root as resolved when loaded: a relative one given then
            # (`--catalog-root .`) still names that directory after a chdir,
            # as the catalog's own path does (docs/spec.md §4.3).
            root = self._resolved_root if self.root is not None else None
            sources, diags, settings, digest = _read_and_parse(self.path, root)
            if diags:
                return ReloadResult(False, self.generation, diags)
            with _RELOAD:
                self.sources = sources
                self.settings_path = settings
                self.sha256 = digest
                self.generation += 1
                return ReloadResult(True, self.generation)


def _read_and_parse(
    p: Path, root: str | os.PathLike[str] | None
) -> tuple[tuple[Source, ...], tuple[CatalogDiagnostic, ...], Path | None, str | None]:
    """The file's sources, problems, settings path and the digest of the
    bytes read (one read: what is parsed is what is digested)."""
    try:
        data = p.read_bytes()
    except OSError as e:
        why = f"catalog {p} could not be read: {e.strerror or e}"
        return (), (CatalogDiagnostic("ParseError", why),), None, None
    except ValueError as e:
        # A NUL, or a lone surrogate the file system cannot encode: no file
        # has that name (§4.3), as for a missing one.
        why = f"catalog {str(p)!r} could not be read: {e}"
        return (), (CatalogDiagnostic("ParseError", why),), None, None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        why = f"catalog {p} is not UTF-8 (byte {e.start})"
        return (), (CatalogDiagnostic("ParseError", why),), None, None
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    sources, diags, settings = _parse(text, p.parent, root)
    if settings is not None and (directory_key(settings) == directory_key(p) or _same(settings, p)):
        # `tune --apply` would write settings over the catalog (§4.1); a
        # link or a second name of it is the same file, whatever the spelling.
        why = f"'settings' path names the catalog file itself ({p})"
        diags = (CatalogDiagnostic("MalformedSettings", why), *diags)
    return sources, diags, settings, digest


def _same(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` are one file now (a missing ``a``: no)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False
