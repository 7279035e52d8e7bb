"""Whose memory, and where it lives: ``Scope``, ``Tier`` and ``memory_path`` (SPEC §6.1–6.2).

Ownership model (the store relies on it): the directory ``memory_path(tier,
scope)`` belongs to the scope cut down to that tier's level — tenant memory of
``A`` belongs to ``Scope("A")``, user memory of ``A/alice`` to
``Scope("A", "alice")``. A scope *reads* the tiers that apply to it (its own and
its ancestors', session → user → tenant), so a session sees its user's and its
tenant's memory by design; it never reaches a directory of a scope that is not
itself or an ancestor.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass

from okfast.catalog import is_safe_segment
from okfast.errors import InvalidArgumentError, InvalidArgumentTypeError

_RESERVED = "_local"


@dataclass(frozen=True, slots=True)
class Scope:
    """Immutable and equal by value. Each given id must be a safe segment
    (``[A-Za-z0-9_][A-Za-z0-9_.-]*``, at most 255 bytes) other than
    ``_local``; a user needs a tenant and a session needs a user."""

    tenant: str | None = None
    user: str | None = None
    session: str | None = None

    def __post_init__(self) -> None:
        for name in ("tenant", "user", "session"):
            v = getattr(self, name)
            if v is None:
                continue
            if not isinstance(v, str) or not is_safe_segment(v) or v == _RESERVED:
                error = InvalidArgumentError if isinstance(v, str) else InvalidArgumentTypeError
                raise error(
                    f"Scope.{name} {v!r} is not a safe id ([A-Za-z0-9_][A-Za-z0-9_.-]*, "
                    "at most 255 bytes, not _local)"
                )
        if self.user is not None and self.tenant is None:
            raise InvalidArgumentError("Scope: a user needs a tenant")
        if self.session is not None and self.user is None:
            raise InvalidArgumentError("Scope: a session needs a user")

    @classmethod
    def local(cls) -> Scope:
        """The single-user scope: no tenant, user or session."""
        return cls()

    @property
    def is_local(self) -> bool:
        return self.tenant is None and self.user is None and self.session is None

    def __str__(self) -> str:
        if self.is_local:
            return "local"
        return "/".join(x for x in (self.tenant, self.user, self.session) if x is not None)


class Tier(str, enum.Enum):
    """Memory tiers, in read order (SPEC §6.2)."""

    SESSION = "session"
    USER = "user"
    TENANT = "tenant"

    def __str__(self) -> str:
        return self.value


#: Read order: the most specific memory first.
READ_ORDER = (Tier.SESSION, Tier.USER, Tier.TENANT)


def tier_of(tier: Tier | str) -> Tier:
    """``tier`` as a :class:`Tier`; an unknown name is an argument error
    (:class:`okfast.InvalidArgumentError`, docs/spec.md §8), not the enum's
    plain ``ValueError``."""
    try:
        return Tier(tier)
    except ValueError:
        names = ", ".join(t.value for t in Tier)
        raise InvalidArgumentError(f"unknown memory tier {tier!r} (one of {names})") from None


def applies(tier: Tier, scope: Scope) -> bool:
    """A tier applies to a scope when the scope is local or names that tier's id."""
    if scope.is_local:
        return True
    return {
        Tier.TENANT: scope.tenant,
        Tier.USER: scope.user,
        Tier.SESSION: scope.session,
    }[tier] is not None


def own_tier(scope: Scope) -> Tier | None:
    """The tier whose directory this scope owns outright (``None`` for the local
    scope, which owns the ``_local`` directory of every tier)."""
    if scope.session is not None:
        return Tier.SESSION
    if scope.user is not None:
        return Tier.USER
    if scope.tenant is not None:
        return Tier.TENANT
    return None


def _seg(x: str | None) -> str:
    # Lower-case for readability, hash of the exact id for identity: `Alice` and
    # `alice` land in different directories even on a case-insensitive disk.
    if x is None:
        return _RESERVED
    return x.lower() + "-" + hashlib.sha256(x.encode()).hexdigest()[:16]


def _check_scope(scope: object) -> None:
    """A wrong type is an argument error (docs/spec.md §8), not an
    ``AttributeError`` from reading its ids."""
    if not isinstance(scope, Scope):
        raise InvalidArgumentTypeError(f"scope must be a Scope, got {type(scope).__name__}")


def below_path(tier: Tier, owner: Scope) -> str:
    """The directory of a lower tier that holds the memory of every scope below
    ``owner`` (a tenant's users, a user's sessions): ``memory_path`` cut after
    ``owner``'s own ids."""
    tier = tier_of(tier)
    _check_scope(owner)
    parts = [f"memory-{tier.value}", _seg(owner.tenant)]
    if owner.user is not None:
        parts.append(_seg(owner.user))
    return "/".join(parts)


def memory_path(tier: Tier, scope: Scope) -> str:
    """The scope's directory for a tier, relative to the tier root, ``/``-separated:
    ``memory-tenant/{seg(t)}``, ``memory-user/{seg(t)}/{seg(u)}`` or
    ``memory-session/{seg(t)}/{seg(u)}/{seg(s)}``, where ``seg(x)`` is
    ``x.lower() + "-" + sha256(x)[:16]`` and ``_local`` for an absent id."""
    tier = tier_of(tier)
    _check_scope(scope)
    parts = [f"memory-{tier.value}", _seg(scope.tenant)]
    if tier in (Tier.USER, Tier.SESSION):
        parts.append(_seg(scope.user))
    if tier is Tier.SESSION:
        parts.append(_seg(scope.session))
    return "/".join(parts)
