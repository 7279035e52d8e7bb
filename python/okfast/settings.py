"""A settings file: how a team's resolver ranks, in one versioned JSON file (docs/spec.md §13).

It holds the scorer and its BM25F parameters, the strategy, the fairness
quota, the reciprocal-rank constant and per-source analyzer languages — what
``okfast tune`` searches and proposes. Reading never raises on a bad entry:
each problem is a :class:`SettingsDiagnostic` and that entry is ignored, so
the rest applies. Only a file that cannot be read or is not a JSON object
raises :class:`~okfast.errors.SettingsError`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import math
import os
import secrets
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, SupportsIndex

from okfast import strict_json
from okfast.arguments import surrogate_in
from okfast.errors import InvalidArgumentError, InvalidArgumentTypeError, SettingsError
from okfast.paths import file_text, path_text
from okfast.query import Query, Strategy, strategy_of
from okfast.scoring import (
    BM25F_FIELDS,
    DEFAULT_BM25F,
    LANGUAGES,
    BM25FParams,
    Scorer,
    count_of,
    rrf_k_of,
    scorer_of,
)
from okfast.terminal import one_line, print_err

if TYPE_CHECKING:
    from okfast.catalog import Catalog

#: The settings format's version; a file naming another is refused entry by entry.
SETTINGS_VERSION = 1
_KEYS = ("version", "scorer", "strategy", "fairness_quota", "rrf_k", "bm25f", "languages")
_BM25F_KEYS = ("k1", "weights", "b", "language", "stop_words")


@dataclass(frozen=True, slots=True)
class SettingsDiagnostic:
    """One problem of a settings file; the entry it names was ignored."""

    code: str
    message: str

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


@dataclass(frozen=True)
class Settings:
    """How a resolver ranks (docs/spec.md §13). ``None`` leaves a choice to
    the resolver's own default; explicit resolver arguments win over these."""

    scorer: Scorer | None = None
    strategy: Strategy | None = None
    fairness_quota: int | None = None
    rrf_k: int | None = None
    bm25f: BM25FParams | None = None
    #: Per-source analyzer language (``"none"``: no stemming), over the catalog's.
    languages: Mapping[str, str] = field(default_factory=dict)
    #: Where the settings came from (``okfast tune`` writes it): kept as read.
    provenance: Mapping[str, Any] | None = None
    path: Path | None = field(default=None, compare=False)
    diagnostics: tuple[SettingsDiagnostic, ...] = field(default=(), compare=False)

    if TYPE_CHECKING:
        # What the generated __init__ takes (docs/spec.md §13.2): names for
        # the enums and numpy integers, held converted.
        def __init__(
            self,
            scorer: Scorer | str | None = None,
            strategy: Strategy | str | None = None,
            fairness_quota: SupportsIndex | None = None,
            rrf_k: SupportsIndex | None = None,
            bm25f: BM25FParams | None = None,
            languages: Mapping[str, str] = ...,
            provenance: Mapping[str, Any] | None = None,
            path: Path | None = None,
            diagnostics: tuple[SettingsDiagnostic, ...] = (),
        ) -> None: ...

    def __post_init__(self) -> None:
        # Checked however the settings are made — the constructor and
        # replace() as well as a file — so what save() writes is what load()
        # reads back, and a bad value fails here, not at a search
        # (docs/spec.md §13.2).
        if self.scorer is not None:
            object.__setattr__(self, "scorer", scorer_of(self.scorer))
        if self.strategy is not None:
            object.__setattr__(self, "strategy", strategy_of(self.strategy))
        if self.fairness_quota is not None:
            object.__setattr__(
                self, "fairness_quota", count_of("fairness_quota", self.fairness_quota)
            )
        if self.rrf_k is not None:
            object.__setattr__(self, "rrf_k", rrf_k_of(self.rrf_k))
        if self.bm25f is not None and not isinstance(self.bm25f, BM25FParams):
            raise InvalidArgumentTypeError(
                f"Settings.bm25f must be a BM25FParams, got {type(self.bm25f).__name__}"
            )
        if not isinstance(self.languages, Mapping):
            raise InvalidArgumentTypeError(
                "Settings.languages must map source ids to languages, "
                f"got {type(self.languages).__name__}"
            )
        for sid, lang in self.languages.items():
            if (problem := _language_problem(sid, lang)) is not None:
                raise InvalidArgumentError(problem)
        # A copy: the caller's dict changed later does not change these settings.
        object.__setattr__(self, "languages", dict(self.languages))
        if self.provenance is not None:
            if not isinstance(self.provenance, Mapping):
                raise InvalidArgumentTypeError(
                    f"Settings.provenance must be a mapping, got {type(self.provenance).__name__}"
                )
            if (what := _unkeepable(dict(self.provenance))) is not None:
                raise InvalidArgumentError(
                    f"Settings.provenance holds {what}, which cannot be written"
                )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Settings:
        """Read ``path``. Raises :class:`~okfast.errors.SettingsError` when it
        cannot be read or is not a JSON object; every other problem is a
        diagnostic (in ``.diagnostics``) and its entry is ignored."""
        given = path_text("a settings path", path)
        p = Path(os.path.abspath(given))
        # Named as given, as its diagnostics are (docs/spec.md §13.4).
        name = f"settings {given}"
        try:
            text = p.read_bytes().decode("utf-8")
        except OSError as e:
            raise SettingsError(f"{name}: could not be read: {e.strerror or e}") from None
        except UnicodeDecodeError as e:
            raise SettingsError(f"{name}: not UTF-8 (byte {e.start})") from None
        except ValueError as e:
            # A NUL or a lone surrogate in the name: no file is called that.
            raise SettingsError(f"{name}: could not be read: {e}") from None
        return dataclasses.replace(cls.parse(text, name=name), path=p)

    @classmethod
    def parse(cls, text: str, *, name: str = "settings") -> Settings:
        """Settings from JSON text (see :meth:`load`); ``name`` begins an
        error's message."""
        if not isinstance(text, str):
            raise InvalidArgumentTypeError(
                f"Settings.parse takes JSON text (a str), got {type(text).__name__}"
            )
        try:
            doc = strict_json.loads(text.removeprefix("\ufeff"))
        except ValueError as e:
            raise SettingsError(f"{name}: not valid JSON: {e}") from None
        if not isinstance(doc, dict):
            raise SettingsError(f"{name}: not a JSON object")
        return cls.from_dict(doc)

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Settings:
        """Settings from a parsed JSON object, problems as diagnostics."""
        if not isinstance(doc, Mapping):
            raise InvalidArgumentTypeError(f"settings are a mapping, got {type(doc).__name__}")
        r = _Reader()
        version = doc.get("version")
        # The integer itself: not 1.0, not true.
        if type(version) is not int or version != SETTINGS_VERSION:
            r.bad(
                "WrongVersion",
                f"settings version must be the integer {SETTINGS_VERSION}, got {version!r}",
            )
            return cls(diagnostics=tuple(r.diags))
        for k in doc:
            if k not in (*_KEYS, "provenance"):
                r.bad("UnknownProperty", f"unknown settings property {k!r}")
        provenance = doc.get("provenance")
        if provenance is not None and not isinstance(provenance, dict):
            r.bad("WrongType", f"'provenance' must be an object, got {provenance!r}")
            provenance = None
        elif (what := _unkeepable(provenance)) is not None:
            r.bad("IllegalValue", f"'provenance' holds {what}, which cannot be kept as read")
            provenance = None
        return cls(
            scorer=r.choice(doc, "scorer", Scorer),
            strategy=r.choice(doc, "strategy", Strategy),
            fairness_quota=r.whole(doc, "fairness_quota"),
            rrf_k=r.whole(doc, "rrf_k"),
            bm25f=r.bm25f(doc.get("bm25f")),
            languages=r.languages(doc.get("languages")),
            provenance=provenance,
            diagnostics=tuple(r.diags),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object :meth:`parse` reads back to equal settings."""
        out: dict[str, Any] = {"version": SETTINGS_VERSION}
        if self.scorer is not None:
            out["scorer"] = self.scorer.value
        if self.strategy is not None:
            out["strategy"] = self.strategy.value
        if self.fairness_quota is not None:
            out["fairness_quota"] = self.fairness_quota
        if self.rrf_k is not None:
            out["rrf_k"] = self.rrf_k
        if self.bm25f is not None:
            p = self.bm25f
            # As floats, however given: equal settings write equal bytes
            # (2 and 2.0 are one k1), and tune tells candidates apart by them.
            out["bm25f"] = {
                "k1": float(p.k1),
                "weights": {f: float(v) for f, v in zip(BM25F_FIELDS, p.weights, strict=True)},
                "b": {f: float(v) for f, v in zip(BM25F_FIELDS, p.b, strict=True)},
                "language": p.language,
                "stop_words": p.stop_words,
            }
        if self.languages:
            out["languages"] = dict(sorted(self.languages.items()))
        if self.provenance is not None:
            out["provenance"] = dict(self.provenance)
        return out

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON with sorted keys: the same
        settings give the same bytes."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`to_json` to ``path`` atomically (a reader sees the
        old file or the new one, never a part)."""
        write_atomically(Path(file_text("a settings path", path)), self.to_json())

    def query(self, text: str, **fields: Any) -> Query:
        """A query of ``text`` carrying these settings' choices (scorer,
        strategy, quota, rrf_k, BM25F parameters) and ``fields``. A choice
        left ``None`` is the resolver's default, so this is what a resolver
        with these settings runs only on a resolver with the built-in defaults;
        :meth:`Resolver.configured` is exact on any resolver."""
        return Query(
            text,
            strategy=self.strategy,
            fairness_quota=self.fairness_quota,
            scorer=self.scorer,
            bm25f=self.bm25f,
            rrf_k=self.rrf_k,
            **fields,
        )

    def with_choices(self, **choices: Any) -> Settings:
        """These settings with the choices that are not ``None`` in ``choices``
        replaced (command-line flags over a file)."""
        given = {k: v for k, v in choices.items() if v is not None}
        # __post_init__ converts and checks them (InvalidArgumentError).
        return dataclasses.replace(self, **given)

    def language_of(self, source_id: str, catalog_language: str | None) -> str | None:
        """A source's analyzer language: these settings' for it, else the catalog's."""
        return self.languages.get(source_id, catalog_language)


def _unwritable_text(text: str) -> str | None:
    """Why ``text`` cannot be written as UTF-8 (a lone surrogate, which a
    JSON ``\\ud800`` escape reads to), or ``None``."""
    at = surrogate_in(text)
    return None if at is None else f"text with a lone surrogate ({at})"


def _language_problem(sid: object, lang: object) -> str | None:
    """What is wrong with a ``languages`` entry, or ``None``: a source id is
    written back as a key, so it must be text UTF-8 can encode, or save()
    would fail (docs/spec.md §13.2); the language one of LANGUAGES or none."""
    why = _unwritable_text(sid) if isinstance(sid, str) else "not text"
    if why is not None:
        return f"languages key {sid!r} is not a source id: {why}"
    if lang != "none" and lang not in LANGUAGES:
        return f"languages[{sid!r}] must be one of {', '.join(LANGUAGES)} or 'none', got {lang!r}"
    return None


#: The deepest nesting a kept part (``provenance``) may have (docs/spec.md §13.2).
MAX_KEPT_DEPTH = 200


def _unkeepable(value: Any) -> str | None:
    """What in ``value`` (a part kept as read: ``provenance``) cannot be
    written back by :meth:`Settings.save` and read back equal (docs/spec.md
    §13.2), or ``None``: an integer too long to convert, a float that is not
    finite (``1e999`` reads as ``inf``, which strict JSON cannot write), text
    or a key holding a lone surrogate (not UTF-8), or anything that is not
    a JSON value (:meth:`Settings.from_dict` may be given any mapping)."""
    # A stack, not recursion: the document may be nested as deeply as the
    # reader allowed, with this call's frames on top of the reader's.
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if depth > MAX_KEPT_DEPTH:
            # save()'s json.dumps recurses: deeper could not be written back.
            return f"values nested deeper than {MAX_KEPT_DEPTH} levels"
        if v is None or isinstance(v, bool):
            continue
        if isinstance(v, int):
            try:
                str(v)  # past the interpreter's digit limit, json.dumps cannot write it
            except ValueError:
                return f"an integer of {v.bit_length()} bits (more digits than Python writes)"
            continue
        if isinstance(v, strict_json.OversizedInteger):
            return repr(v)
        if isinstance(v, float):
            if not math.isfinite(v):
                return repr(v)
        elif isinstance(v, str):
            if (why := _unwritable_text(v)) is not None:
                return why
        elif isinstance(v, dict):
            for k in v:
                if not isinstance(k, str):
                    return f"the key {k!r}, not text"
                if (why := _unwritable_text(k)) is not None:
                    return f"a key of {why}"
            stack.extend((x, depth + 1) for x in reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in reversed(v))
        else:
            return f"a {type(v).__name__}, not a JSON value"
    return None


def _absent(path: Path) -> bool:
    try:
        os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        pass
    return False


def settings_for(
    catalog: Catalog, settings: Settings | str | os.PathLike[str] | None
) -> tuple[Settings, tuple[SettingsDiagnostic, ...]]:
    """The settings a resolver applies and their diagnostics (docs/spec.md
    §13): an unreadable file named by the catalog is a diagnostic, and the
    resolver runs on its defaults; one passed by the caller raises."""
    if settings is None and catalog.settings_path is not None:
        if (odd := _not_a_file(catalog.settings_path)) is not None:
            # A FIFO would block the read until a writer came (a file passed
            # by the caller may be one: `--settings <(...)`).
            return Settings(), (SettingsDiagnostic("SettingsUnreadable", odd),)
        try:
            settings = Settings.load(catalog.settings_path)
        except SettingsError as e:
            # Only a name that is not there is absent (docs/spec.md §13.3):
            # a link that loops or dangles is present, and a name too long
            # or below a directory that cannot be searched can be no file's.
            if not _absent(catalog.settings_path):
                # Printed under the file's name already (§13.4): said once.
                why = str(e).removeprefix(f"settings {catalog.settings_path}: ")
                return Settings(), (SettingsDiagnostic("SettingsUnreadable", why),)
            return Settings(), ()
    elif settings is not None and not isinstance(settings, Settings):
        settings = Settings.load(settings)
    if settings is None:
        return Settings(), ()
    known = {s.id for s in catalog.sources}
    unknown = tuple(
        SettingsDiagnostic("UnknownSource", f"languages names source {sid!r}, not in the catalog")
        for sid in sorted(settings.languages)
        if sid not in known
    )
    return settings, settings.diagnostics + unknown


def _not_a_file(path: Path) -> str | None:
    """Why ``path``, when it exists, is not a file settings are read from
    (a directory, a FIFO, a device), or ``None``."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None  # absent or unreadable: Settings.load says which
    if stat.S_ISREG(mode):
        return None
    return "not a regular file"


class ResolverDefaults(NamedTuple):
    """A resolver's defaults (docs/spec.md §5.2)."""

    strategy: Strategy
    fairness_quota: int | None
    scorer: Scorer
    bm25f: BM25FParams
    rrf_k: int

    @staticmethod
    def of(
        settings: Settings,
        strategy: Strategy | str | None = None,
        fairness_quota: int | None = None,
        scorer: Scorer | str | None = None,
        bm25f: BM25FParams | None = None,
        rrf_k: int | None = None,
    ) -> ResolverDefaults:
        """Each default: the argument, else the settings', else the built-in
        one (docs/spec.md §13.3)."""
        strategy = settings.strategy if strategy is None else strategy
        try:
            # `is None`, not `or`: "" or 0 is a bad strategy, not the default.
            strategy = Strategy(Strategy.GROUPED if strategy is None else strategy)
        except ValueError:
            raise InvalidArgumentError(f"unknown strategy {strategy!r}") from None
        quota = settings.fairness_quota if fairness_quota is None else fairness_quota
        scorer = settings.scorer if scorer is None else scorer
        if bm25f is not None and not isinstance(bm25f, BM25FParams):
            raise InvalidArgumentTypeError(
                f"default_bm25f must be a BM25FParams, got {type(bm25f).__name__}"
            )
        rrf_k = settings.rrf_k if rrf_k is None else rrf_k
        return ResolverDefaults(
            strategy,
            None if quota is None else count_of("default_fairness_quota", quota),
            scorer_of(Scorer.WEIGHTED_COUNT if scorer is None else scorer),
            bm25f or settings.bm25f or DEFAULT_BM25F,
            rrf_k_of(60 if rrf_k is None else rrf_k),
        )


def print_diagnostics(where: object, diagnostics: Iterable[SettingsDiagnostic]) -> None:
    """Each diagnostic of the settings file ``where`` as one line on stderr,
    worded as every command words it (docs/spec.md §13.4)."""
    for d in diagnostics:
        # One line each, whatever the file's name or a value holds (§10.1).
        print_err(one_line(f"okfast: settings {where}: {d}"))


def command_settings(catalog: Catalog, path: str | None) -> Settings:
    """A command's settings (:func:`settings_for`): ``--settings FILE``, else
    the file the catalog names; each diagnostic printed on stderr under the
    file's name."""
    settings, problems = settings_for(catalog, path)
    print_diagnostics(path if path is not None else catalog.settings_path, problems)
    return settings


def load_settings(path: str | None) -> Settings:
    """A command's ``--settings FILE``: the file's settings, each diagnostic
    printed on stderr (the entry is ignored); no file, empty settings."""
    if path is None:
        return Settings()
    settings = Settings.load(path)
    print_diagnostics(path, settings.diagnostics)
    return settings


def write_atomically(path: Path, text: str) -> None:
    """``text`` to ``path`` through a temporary file in the same directory.

    What is at ``path`` is written to, never replaced by another kind of
    file (docs/spec.md §13.2): a symbolic link to a file has its target
    replaced (the link kept), and a FIFO, a device or a process
    substitution's pipe is written through, as a shell's ``>`` writes, since
    renaming over it would swap it for a plain file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(path, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        return
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    # Not derived from the name: any name the system takes can be written.
    tmp = path.with_name(f".okfast-{secrets.token_hex(8)}.tmp")
    # Created as open() creates a file (mode 0o666 less the umask), not
    # mkstemp's 0o600; a file replaced keeps its mode.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        # newline="": the text's line ends written as they are (a settings
        # file restored by a revert is the bytes it was).
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            with contextlib.suppress(FileNotFoundError):
                os.chmod(f.fileno(), stat.S_IMODE(path.stat().st_mode))
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class _Reader:
    """Reads entries, collecting a diagnostic for each bad one."""

    def __init__(self) -> None:
        self.diags: list[SettingsDiagnostic] = []

    def bad(self, code: str, message: str) -> None:
        self.diags.append(SettingsDiagnostic(code, message))

    def choice(self, doc: Mapping[str, Any], key: str, kind: Any) -> Any:
        v = doc.get(key)
        if v is None:
            return None
        try:
            return kind(v)
        except ValueError:
            names = ", ".join(x.value for x in kind)
            self.bad("IllegalValue", f"{key!r} must be one of {names}, got {v!r}")
            return None

    def whole(self, doc: Mapping[str, Any], key: str) -> int | None:
        v = doc.get(key)
        if v is None:
            return None
        try:
            return count_of(repr(key), v)
        except InvalidArgumentError as e:
            self.bad("IllegalValue", str(e))
            return None

    def languages(self, v: Any) -> dict[str, str]:
        if v is None:
            return {}
        if not isinstance(v, dict):
            self.bad(
                "WrongType", f"'languages' must be an object of source id to language, got {v!r}"
            )
            return {}
        out = {}
        for sid, lang in v.items():
            if (problem := _language_problem(sid, lang)) is not None:
                self.bad("IllegalValue", problem)
            else:
                out[sid] = lang
        return out

    def bm25f(self, v: Any) -> BM25FParams | None:
        if v is None:
            return None
        if not isinstance(v, dict):
            self.bad("WrongType", f"'bm25f' must be an object, got {v!r}")
            return None
        args: dict[str, Any] = {}
        for k in v:
            if k not in _BM25F_KEYS:
                self.bad("UnknownProperty", f"unknown property 'bm25f.{k}'")
        if "k1" in v:
            args["k1"] = v["k1"]
        for group, suffix in (("weights", "_weight"), ("b", "_b")):
            per = v.get(group)
            if per is None:
                continue
            if not isinstance(per, dict):
                self.bad("WrongType", f"'bm25f.{group}' must be an object of field to number")
                continue
            for name, x in per.items():
                if name not in BM25F_FIELDS:
                    self.bad(
                        "UnknownProperty",
                        f"'bm25f.{group}.{name}' is not a field ({', '.join(BM25F_FIELDS)})",
                    )
                else:
                    args[name + suffix] = x
        if v.get("language") is not None:
            args["language"] = v["language"]
        if "stop_words" in v:
            args["stop_words"] = v["stop_words"]
        # Each value is checked alone, so one bad number drops only itself.
        kept: dict[str, Any] = {}
        for name, x in args.items():
            try:
                BM25FParams(**{name: x})
            except InvalidArgumentError as e:
                self.bad("IllegalValue", f"bm25f: {e}")
                continue
            kept[name] = x
        return BM25FParams(**kept)
