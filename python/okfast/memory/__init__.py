"""Scoped memory (SPEC §6): tenant, user and session memory stored as OKF
concepts, read with the knowledge scorer, never leaking across scopes."""

from okfast.memory.capture import capture
from okfast.memory.entry import MemoryEntry
from okfast.memory.scope import Scope, Tier, memory_path
from okfast.memory.store import (
    FileMemoryStore,
    MemoryConcept,
    MemoryDeleteResult,
    MemoryListing,
    MemoryReadResult,
    MemoryWriteResult,
)

__all__ = [
    "FileMemoryStore",
    "MemoryConcept",
    "MemoryDeleteResult",
    "MemoryEntry",
    "MemoryListing",
    "MemoryReadResult",
    "MemoryWriteResult",
    "Scope",
    "Tier",
    "capture",
    "memory_path",
]
