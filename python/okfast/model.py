"""Plain data returned by okfast: concepts, hits, diagnostics (SPEC §1.4, §1.6, §3.7).

All are frozen dataclasses: values, compared by value, safe to share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

Severity = Literal["error", "warning"]

#: Frontmatter keys okfast interprets; everything else lands in ``Concept.extra``.
INTERPRETED_KEYS = frozenset(
    {
        "type",
        "title",
        "description",
        "tags",
        "resource",
        "status",
        "stale_after",
        "generated",
        "timestamp",  # the OKF v0.1 spelling of generated.at
        "verified",
        "authority",
        "supersedes",
        "superseded_by",
        "conflicts_with",
    }
)

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def instant_from_micros(us: int | None) -> datetime | None:
    """Microseconds since the Unix epoch (UTC) → an aware datetime."""
    return None if us is None else _EPOCH + timedelta(microseconds=us)


@dataclass(frozen=True, slots=True)
class Actor:
    """``{by, at}`` of ``generated`` and of each ``verified`` entry, as display text."""

    by: str | None
    at: str | None


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A problem found in data, reported instead of raised (SPEC §1.6)."""

    code: str
    message: str
    path: str | None = None
    source_id: str | None = None
    severity: Severity = "error"


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result of a single bundle (SPEC §3.7)."""

    concept_id: str
    score: int
    title: str | None
    excerpt: str
    path: str


@dataclass(frozen=True, slots=True)
class Concept:
    """A loaded concept with every field of SPEC §1.4 and its body."""

    concept_id: str
    path: str
    type: str | None
    title: str | None
    description: str | None
    tags: tuple[str, ...]
    resource: str | None
    status: str
    status_known: bool
    stale_after: datetime | None
    generated: Actor | None
    verified: tuple[Actor, ...]
    trust_tier: str
    body: str
    frontmatter: dict[str, Any] = field(compare=True)
    extra: dict[str, Any] = field(compare=True)

    def is_stale_at(self, now: datetime) -> bool:
        """SPEC §2.2: stale when ``stale_after`` is set and ``now >= stale_after``."""
        return self.stale_after is not None and now >= self.stale_after

    @classmethod
    def _from_native(cls, d: dict[str, Any]) -> Concept:
        fm: dict[str, Any] = d["frontmatter"]
        gen = d["generated"]
        return cls(
            concept_id=d["concept_id"],
            path=d["path"],
            type=d["type"],
            title=d["title"],
            description=d["description"],
            tags=tuple(d["tags"]),
            resource=d["resource"],
            status=d["status"],
            status_known=d["status_known"],
            stale_after=instant_from_micros(d["stale_after_us"]),
            generated=None if gen is None else Actor(gen["by"], gen["at"]),
            verified=tuple(Actor(v["by"], v["at"]) for v in d["verified"]),
            trust_tier=d["trust_tier"],
            body=d["body"],
            frontmatter=fm,
            extra={k: v for k, v in fm.items() if k not in INTERPRETED_KEYS},
        )
