"""okfast's exceptions (SPEC §8).

Every exception derives from :class:`OkfastError` and from the built-in a
caller would already catch. The classes are created by the native module so
that Rust and Python raise the very same types.
"""

from okfast._native import BundleNotFoundError, InvalidArgumentError, OkfastError


class ConceptNotFoundError(OkfastError, KeyError):
    """No concept with that id in the bundle."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


__all__ = ["BundleNotFoundError", "ConceptNotFoundError", "InvalidArgumentError", "OkfastError"]


class CacheWarning(UserWarning):
    """A bundle's cache file could not be used (corrupt, truncated, from another
    okfast version) and was rebuilt; results are unaffected."""


__all__ += ["CacheWarning"]
