"""okfast: fast, deterministic search over Open Knowledge Format bundles."""

from okfast._native import __version__
from okfast.bundle import Bundle
from okfast.cache_prune import CachePrune, PrunedFile, prune_cache
from okfast.catalog import Catalog, CatalogDiagnostic, ReloadResult, Source
from okfast.comparison import Comparison, PairedTest, compare
from okfast.context import Assembly, AssemblyBlock, ContextAssembler
from okfast.errors import (
    BundleNotFoundError,
    CacheDamagedError,
    CacheWarning,
    CatalogError,
    ConceptNotFoundError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MissingDependencyError,
    OkfastError,
    SettingsError,
)
from okfast.evaluation import EvalReport, Latency, QueryEval, evaluate
from okfast.memory import FileMemoryStore, MemoryEntry, Tier, capture
from okfast.memory.scope import Scope
from okfast.model import (
    Actor,
    Concept,
    Diagnostic,
    DiagnosticCode,
    Exclusion,
    Explanation,
    Hit,
    Passage,
    TermMatch,
)
from okfast.passages import Context, PassageList
from okfast.qrels import JudgedQuery, JudgedSet
from okfast.query import Query, StalePolicy, Strategy
from okfast.resolver import (
    GroupedResolver,
    MergedResolver,
    PriorityWeightedResolver,
    ReciprocalRankResolver,
    Resolver,
)
from okfast.scoring import BM25FParams, Scorer
from okfast.settings import Settings, SettingsDiagnostic

__all__ = [
    "BM25FParams",
    "Scorer",
    "Actor",
    "Assembly",
    "AssemblyBlock",
    "Bundle",
    "BundleNotFoundError",
    "CacheDamagedError",
    "CachePrune",
    "CacheWarning",
    "Catalog",
    "CatalogDiagnostic",
    "CatalogError",
    "Comparison",
    "Concept",
    "ConceptNotFoundError",
    "Context",
    "ContextAssembler",
    "Diagnostic",
    "DiagnosticCode",
    "EvalReport",
    "Exclusion",
    "Explanation",
    "FileMemoryStore",
    "GroupedResolver",
    "Hit",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "JudgedQuery",
    "JudgedSet",
    "Latency",
    "MemoryEntry",
    "MergedResolver",
    "MissingDependencyError",
    "OkfastError",
    "PairedTest",
    "Passage",
    "PassageList",
    "PriorityWeightedResolver",
    "Query",
    "QueryEval",
    "ReciprocalRankResolver",
    "ReloadResult",
    "Resolver",
    "Scope",
    "Settings",
    "SettingsDiagnostic",
    "SettingsError",
    "Source",
    "StalePolicy",
    "Strategy",
    "TermMatch",
    "Tier",
    "__version__",
    "capture",
    "compare",
    "evaluate",
    "PrunedFile",
    "prune_cache",
]
