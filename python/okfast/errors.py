"""okfast's exceptions (docs/spec.md §8): every class okfast raises is defined here.

Every exception derives from :class:`OkfastError` and from the built-in a
caller would already catch (``ValueError``, ``TypeError``,
``FileNotFoundError``, ``KeyError``, ``OSError``). The native module raises
these very classes: it looks them up in this module, which therefore must not
import ``okfast._native`` (pure Python, no import cycle).

Argument checks, made in Python or in native code, raise
:class:`InvalidArgumentError` (a ``ValueError``); an argument that must be text
and is not raises :class:`InvalidArgumentTypeError`, which is also a
``TypeError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = [
    "BundleNotFoundError",
    "CacheDamagedError",
    "CacheWarning",
    "CatalogError",
    "ConceptNotFoundError",
    "EntryError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "MissingDependencyError",
    "OkfastError",
    "SettingsError",
    "UnsafePathError",
]

if TYPE_CHECKING:
    from okfast.catalog import CatalogDiagnostic


class OkfastError(Exception):
    """Base class of every exception okfast raises."""


class InvalidArgumentError(OkfastError, ValueError):
    """An argument is outside its domain (a programmer error). Raised by every
    argument check, in Python or in the native core."""


class InvalidArgumentTypeError(InvalidArgumentError, TypeError):
    """An argument that must be text is not a ``str`` (a query text, a scope id,
    captured text). Also a ``TypeError``, what Python raises for a wrong type,
    and an :class:`InvalidArgumentError`, so either catches it. A numeric
    argument is checked against its domain as a whole ("a finite number >= 0"):
    a wrong type there is an :class:`InvalidArgumentError`."""


class BundleNotFoundError(OkfastError, FileNotFoundError):
    """The bundle root is missing or is not a readable directory."""


class ConceptNotFoundError(OkfastError, KeyError):
    """No concept with that id in the bundle."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class CatalogError(OkfastError, ValueError):
    """The catalog has problems; ``.diagnostics`` lists every one."""

    def __init__(self, diagnostics: tuple[CatalogDiagnostic, ...]) -> None:
        self.diagnostics = diagnostics
        super().__init__("\n".join(str(d) for d in diagnostics))


class SettingsError(OkfastError, ValueError):
    """A settings file cannot be read or is not a JSON object (docs/spec.md
    §13). A bad entry inside one is a diagnostic, not this error."""


class CacheDamagedError(OkfastError, OSError):
    """A text kept in a bundle's cache file failed its check when it was read
    after the load: the file was changed in place. The file is removed, so the
    next load rebuilds it; wrong text is never returned."""


class EntryError(InvalidArgumentError):
    """Why a memory entry cannot be written (a bad name, frontmatter or section,
    a tier that is unknown or does not apply). The store reports it as data: a
    ``MemoryWriteResult`` with ``written=False`` and this message."""


class UnsafePathError(OkfastError, OSError):
    """A symbolic link or a non-directory where the memory store needs a
    directory or a regular file. The store reports it as data (a diagnostic or
    a result's ``error``), so it does not reach a caller."""


class MissingDependencyError(OkfastError, ImportError):
    """A feature needs a package of an optional extra that is not installed
    (``okfast.evaluate`` needs ``okfast[eval]``); the message names the extra
    and the command that installs it."""


class CacheWarning(UserWarning):
    """A bundle's cache file could not be used (corrupt, truncated, from another
    okfast version) and was rebuilt; results are unaffected. A warning, not an
    exception."""
