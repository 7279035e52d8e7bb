"""``Scope``: whose memory — a tenant, a user of it, a session of that user (SPEC §6.1)."""

from __future__ import annotations

from dataclasses import dataclass

from okfast.catalog import is_safe_segment

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
            if not is_safe_segment(v) or v == _RESERVED:
                raise ValueError(
                    f"Scope.{name} {v!r} is not a safe id ([A-Za-z0-9_][A-Za-z0-9_.-]*, not _local)"
                )
        if self.user is not None and self.tenant is None:
            raise ValueError("Scope: a user needs a tenant")
        if self.session is not None and self.user is None:
            raise ValueError("Scope: a session needs a user")

    @classmethod
    def local(cls) -> Scope:
        """The single-user scope: no tenant, user or session."""
        return cls()

    @property
    def is_local(self) -> bool:
        return self.tenant is None and self.user is None and self.session is None
