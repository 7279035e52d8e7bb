"""Plain data returned by okfast: concepts, hits, diagnostics (SPEC §1.4, §1.6, §3.7).

All are frozen dataclasses: values, compared by value, safe to share.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Literal

from okfast.errors import InvalidArgumentError, InvalidArgumentTypeError

if TYPE_CHECKING:
    from okfast import _native

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

    def to_json(self) -> dict[str, str | None]:
        """Its fields by name, as every command's JSON carries a diagnostic
        that may name a source (docs/spec.md §10)."""
        return {
            "code": self.code,
            "severity": self.severity,
            "path": self.path,
            "source_id": self.source_id,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result of a single bundle (SPEC §3.7)."""

    concept_id: str
    #: A whole number for the weighted count, a float for BM25F.
    score: int | float
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
    #: ``authority`` as written (SPEC §7); the resolver applies the source's
    #: default and ranks unknown values last.
    authority: str | None
    supersedes: tuple[str, ...]
    superseded_by: tuple[str, ...]
    conflicts_with: tuple[str, ...]
    body: str
    # Compared but not hashed: a dict has no hash, and a concept is a
    # hashable value (docs/spec.md §1.4); equal concepts still hash alike.
    frontmatter: dict[str, Any] = field(compare=True, hash=False)
    extra: dict[str, Any] = field(compare=True, hash=False)

    def is_stale_at(self, now: datetime) -> bool:
        """docs/spec.md §2.2: stale when ``stale_after`` is set and ``now >=
        stale_after``. ``now`` is an aware ``datetime``, as a resolver's clock
        gives (§2.3): a naive one is refused whether or not the concept has a
        ``stale_after``, not compared with one only when it has."""
        if not isinstance(now, datetime):
            raise InvalidArgumentTypeError(
                f"now must be an aware datetime, got {type(now).__name__}"
            )
        if now.tzinfo is None or now.utcoffset() is None:
            raise InvalidArgumentError("now must be an aware datetime, got a naive one")
        return self.stale_after is not None and now >= self.stale_after

    @classmethod
    def _from_native(cls, c: _native.ConceptFields) -> Concept:
        fm: dict[str, Any] = c.frontmatter
        gen = c.generated
        return cls(
            concept_id=c.concept_id,
            path=c.path,
            type=c.type,
            title=c.title,
            description=c.description,
            tags=tuple(c.tags),
            resource=c.resource,
            status=c.status,
            status_known=c.status_known,
            stale_after=instant_from_micros(c.stale_after_us),
            generated=None if gen is None else Actor(gen.by, gen.at),
            verified=tuple(Actor(v.by, v.at) for v in c.verified),
            trust_tier=c.trust_tier,
            authority=c.authority,
            supersedes=tuple(c.supersedes),
            superseded_by=tuple(c.superseded_by),
            conflicts_with=tuple(c.conflicts_with),
            body=c.body,
            frontmatter=fm,
            extra={k: v for k, v in fm.items() if k not in INTERPRETED_KEYS},
        )


class DiagnosticCode(str, enum.Enum):
    """Every diagnostic code okfast reports (SPEC §1.6, §5.3–5.6, §7, §11)."""

    # Loading a bundle.
    INVALID_CONCEPT_ID = "InvalidConceptId"
    FILE_TOO_LARGE = "FileTooLarge"
    INVALID_UTF8 = "InvalidUtf8"
    INVALID_FRONTMATTER = "InvalidFrontmatter"
    MISSING_TYPE = "MissingType"
    MALFORMED_STALE_AFTER = "MalformedStaleAfter"
    UNREADABLE_FILE = "UnreadableFile"
    UNREADABLE_DIRECTORY = "UnreadableDirectory"
    SYMLINK_SKIPPED = "SymlinkSkipped"
    # Resolving across sources.
    NO_ENABLED_SOURCES = "NoEnabledSources"
    SOURCE_UNAVAILABLE = "SourceUnavailable"
    DUPLICATE_DIRECTORY = "DuplicateDirectory"
    NO_MATCHES = "NoMatches"
    NO_QUERY_TOKENS = "NoQueryTokens"
    # Governance (SPEC §7).
    UNKNOWN_AUTHORITY = "UnknownAuthority"
    BROKEN_SUPERSESSION = "BrokenSupersession"
    BROKEN_CONFLICT = "BrokenConflict"
    CONFLICT_DECLARED = "ConflictDeclared"
    CONFLICT_AMBIGUOUS = "ConflictAmbiguous"
    # Judged queries and their evaluation (docs/spec.md §11).
    BAD_JUDGED_LINE = "BadJudgedLine"
    DUPLICATE_QUERY = "DuplicateQuery"
    DUPLICATE_JUDGEMENT = "DuplicateJudgement"
    UNJUDGED_QUERY = "UnjudgedQuery"
    QUERY_TEXT_MISSING = "QueryTextMissing"
    UNKNOWN_DOC_ID = "UnknownDocId"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Exclusion:
    """A passage the resolver left out, and why (SPEC §5.8)."""

    source_id: str
    concept_id: str
    reason: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class TermMatch:
    """One query term of an explanation: the fields it matched and what it added
    to the score (title 3, tags_desc 2, body 1; SPEC §3.3)."""

    term: str
    fields: tuple[str, ...]
    weight: int


@dataclass(frozen=True, slots=True)
class FieldScore:
    """What one field adds to one BM25F token's score (docs/spec.md §12.5):
    the token's frequency in it, the field's length, ``weight · tf / norm``,
    and its share of the token's score."""

    field: str
    tf: int
    length: int
    weighted_tf: float
    contribution: float


@dataclass(frozen=True, slots=True)
class TokenScore:
    """One query token's part of a BM25F score (docs/spec.md §12.5); the
    listed tokens' scores sum, in query order, to the passage's BM25F score
    (its score, but under fusion)."""

    token: str
    idf: float
    weighted_tf: float
    score: float
    fields: tuple[FieldScore, ...]


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a passage is where it is (``Query(explain=True)``, SPEC §5.8).

    ``sort_key`` lists the strategy's sort fields with this passage's values,
    in the order they are compared (before the fairness reorder, which may
    move a passage later to let other sources through, and before pinning,
    which moves ``pinned`` passages to the front). ``rank`` is the 1-based
    place in ``context.passages``."""

    strategy: str
    sort_key: tuple[tuple[str, Any], ...]
    #: The weighted count's terms the passage holds, in query order (empty
    #: for BM25F; docs/spec.md §5.8).
    matches: tuple[TermMatch, ...]
    pinned: bool
    rank: int
    fairness_quota: int | None = None
    #: BM25F: the part of the score of each query token that adds to it
    #: (empty for the weighted count; docs/spec.md §12.5).
    bm25f: tuple[TokenScore, ...] = ()


@dataclass(frozen=True, slots=True)
class Passage:
    """One resolved passage (SPEC §5.2). ``body`` is read on demand."""

    source_id: str
    concept_id: str
    #: A whole number for the weighted count (docs/spec.md §3.3), a float for
    #: BM25F (§12.3).
    score: int | float
    priority: int
    title: str | None
    excerpt: str
    path: str
    type: str | None
    tags: tuple[str, ...]
    description: str | None
    trust_tier: str
    status: str
    stale_after: datetime | None
    is_stale: bool
    authority: str
    fused_score: float | None = None
    #: Set when the query asked for ``explain=True``.
    explanation: Explanation | None = None
    _body: Callable[[], str] | None = field(default=None, repr=False, compare=False)

    @property
    def body(self) -> str:
        """The concept's body, read from the loaded snapshot when asked for."""
        return self._body() if self._body is not None else ""


def passage_from_fields(
    f: _native.PassageFields,
    *,
    source_id: str,
    score: int | float,
    priority: int,
    default_authority: str | None,
    is_stale: bool,
    body: Callable[[], str],
    fused_score: float | None = None,
    prefix: str = "",
    explanation: Explanation | None = None,
) -> Passage:
    """A :class:`Passage` from what the snapshot shows of a concept;
    ``prefix`` goes before the concept id and path (memory passages are named
    by their scope directory)."""
    return Passage(
        source_id=source_id,
        concept_id=prefix + f.concept_id,
        score=score,
        priority=priority,
        title=f.title,
        excerpt=f.excerpt,
        path=prefix + f.path,
        type=f.type,
        tags=tuple(f.tags),
        description=f.description,
        trust_tier=f.trust_tier,
        status=f.status,
        stale_after=instant_from_micros(f.stale_after_us),
        is_stale=is_stale,
        # An unknown value stays as written, the empty one too (docs/spec.md
        # §5.2): only an absent one takes the source's default.
        authority=f.authority if f.authority is not None else default_authority or "reference",
        fused_score=fused_score,
        explanation=explanation,
        _body=body,
    )
