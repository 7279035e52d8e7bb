"""okfast: fast, deterministic search over Open Knowledge Format bundles."""

from okfast._native import __version__
from okfast.bundle import Bundle
from okfast.catalog import Catalog, CatalogDiagnostic, ReloadResult, Source
from okfast.context import Assembly, AssemblyBlock, ContextAssembler
from okfast.errors import (
    BundleNotFoundError,
    CacheDamagedError,
    CacheWarning,
    CatalogError,
    ConceptNotFoundError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    OkfastError,
)
from okfast.memory import FileMemoryStore, MemoryEntry, Tier, capture
from okfast.memory.scope import Scope
from okfast.model import (
    Actor,
    Concept,
    Diagnostic,
    DiagnosticCode,
    Exclusion,
    Hit,
    Passage,
)
from okfast.passages import Context, PassageList
from okfast.query import Query, StalePolicy, Strategy
from okfast.resolver import (
    GroupedResolver,
    MergedResolver,
    PriorityWeightedResolver,
    ReciprocalRankResolver,
    Resolver,
)

__all__ = [
    "Actor",
    "Assembly",
    "AssemblyBlock",
    "Bundle",
    "BundleNotFoundError",
    "CacheDamagedError",
    "CacheWarning",
    "Catalog",
    "CatalogDiagnostic",
    "CatalogError",
    "Concept",
    "ConceptNotFoundError",
    "Context",
    "ContextAssembler",
    "Diagnostic",
    "DiagnosticCode",
    "Exclusion",
    "FileMemoryStore",
    "GroupedResolver",
    "Hit",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "MemoryEntry",
    "MergedResolver",
    "OkfastError",
    "Passage",
    "PassageList",
    "PriorityWeightedResolver",
    "Query",
    "ReciprocalRankResolver",
    "ReloadResult",
    "Resolver",
    "Scope",
    "Source",
    "StalePolicy",
    "Strategy",
    "Tier",
    "__version__",
    "capture",
]
