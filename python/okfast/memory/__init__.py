"""Scoped memory (SPEC §6). So far: the scope a query or a memory belongs to."""

from okfast.memory.scope import Scope

__all__ = ["Scope"]
