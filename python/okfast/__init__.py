"""okfast: fast, deterministic search over Open Knowledge Format bundles."""

from okfast._native import __version__
from okfast.bundle import Bundle
from okfast.errors import (
    BundleNotFoundError,
    ConceptNotFoundError,
    InvalidArgumentError,
    OkfastError,
)
from okfast.model import Actor, Concept, Diagnostic, Hit

__all__ = [
    "Actor",
    "Bundle",
    "BundleNotFoundError",
    "Concept",
    "ConceptNotFoundError",
    "Diagnostic",
    "Hit",
    "InvalidArgumentError",
    "OkfastError",
    "__version__",
]
