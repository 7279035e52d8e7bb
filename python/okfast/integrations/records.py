"""okfast values as plain JSON-ready dicts, the one shape every integration
hands out: the MCP server's structured output, LangChain ``Document.metadata``
and LlamaIndex ``TextNode.metadata``.

The shapes are typed (``TypedDict``) without importing any framework. Tuples become lists and instants ISO 8601
strings, so ``json.dumps`` takes every record as it is.
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any

if sys.version_info >= (3, 12):
    from typing import TypedDict
else:
    # Before 3.12 pydantic (which derives the MCP SDK's output schemas) reads
    # nested TypedDicts only from typing_extensions, a dependency of every
    # framework these records go to.
    from typing_extensions import TypedDict

from okfast.model import Actor, Concept, Diagnostic, Exclusion, Explanation, Passage


class TermMatchRecord(TypedDict):
    """One query term: the fields it matched and what it added to the score."""

    term: str
    fields: list[str]
    weight: int


class FieldScoreRecord(TypedDict):
    """What one field adds to one BM25F token's score (docs/spec.md §12.5)."""

    field: str
    tf: int
    length: int
    weighted_tf: float
    contribution: float


class TokenScoreRecord(TypedDict):
    """One query token's part of a BM25F score (docs/spec.md §12.5)."""

    token: str
    idf: float
    weighted_tf: float
    score: float
    fields: list[FieldScoreRecord]


class ExplanationRecord(TypedDict):
    """Why a passage is where it is (docs/spec.md §5.8): the strategy, its sort
    key with this passage's values in comparison order, the matched terms
    (weighted count) or the tokens' parts of the score (BM25F), whether the
    exact-title pin moved it, and its 1-based rank."""

    strategy: str
    sort_key: list[list[Any]]
    matches: list[TermMatchRecord]
    bm25f: list[TokenScoreRecord]
    pinned: bool
    rank: int
    fairness_quota: int | None


class PassageRecord(TypedDict):
    """One resolved passage (docs/spec.md §5.2), without its body."""

    source_id: str
    concept_id: str
    #: A whole number for the weighted count, a float for BM25F (docs/spec.md §12).
    score: int | float
    title: str | None
    excerpt: str
    path: str
    type: str | None
    tags: list[str]
    description: str | None
    trust_tier: str
    status: str
    authority: str
    stale_after: str | None
    is_stale: bool
    #: Set under ``reciprocal_rank`` only: the key the passages are ordered by.
    fused_score: float | None
    #: Set when the query asked for ``explain``.
    explanation: ExplanationRecord | None


class DiagnosticRecord(TypedDict):
    """A problem found in the data, reported instead of raised (docs/spec.md §1.6)."""

    code: str
    severity: str
    message: str
    source_id: str | None
    path: str | None


class ExclusionRecord(TypedDict):
    """A passage the resolver left out, and why (docs/spec.md §5.8)."""

    source_id: str
    concept_id: str
    reason: str
    detail: str


class ActorRecord(TypedDict):
    by: str | None
    at: str | None


class ConceptRecord(TypedDict):
    """Every field of one concept (docs/spec.md §1.4), its body and its frontmatter."""

    source_id: str
    concept_id: str
    path: str
    type: str | None
    title: str | None
    description: str | None
    tags: list[str]
    resource: str | None
    status: str
    status_known: bool
    stale_after: str | None
    is_stale: bool
    generated: ActorRecord | None
    verified: list[ActorRecord]
    trust_tier: str
    #: As written, else the source's default, else ``reference`` — the value
    #: the resolver ranks by, as in :class:`PassageRecord`.
    authority: str
    supersedes: list[str]
    superseded_by: list[str]
    conflicts_with: list[str]
    body: str
    frontmatter: dict[str, Any]


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.isoformat()


def explanation_record(x: Explanation) -> ExplanationRecord:
    return {
        "strategy": x.strategy,
        "sort_key": [[name, value] for name, value in x.sort_key],
        "matches": [
            {"term": m.term, "fields": list(m.fields), "weight": m.weight} for m in x.matches
        ],
        "bm25f": [
            {
                "token": t.token,
                "idf": t.idf,
                "weighted_tf": t.weighted_tf,
                "score": t.score,
                "fields": [
                    {
                        "field": f.field,
                        "tf": f.tf,
                        "length": f.length,
                        "weighted_tf": f.weighted_tf,
                        "contribution": f.contribution,
                    }
                    for f in t.fields
                ],
            }
            for t in x.bm25f
        ],
        "pinned": x.pinned,
        "rank": x.rank,
        "fairness_quota": x.fairness_quota,
    }


def passage_record(p: Passage) -> PassageRecord:
    return {
        "source_id": p.source_id,
        "concept_id": p.concept_id,
        "score": p.score,
        "title": p.title,
        "excerpt": p.excerpt,
        "path": p.path,
        "type": p.type,
        "tags": list(p.tags),
        "description": p.description,
        "trust_tier": p.trust_tier,
        "status": p.status,
        "authority": p.authority,
        "stale_after": _iso(p.stale_after),
        "is_stale": p.is_stale,
        "fused_score": p.fused_score,
        "explanation": None if p.explanation is None else explanation_record(p.explanation),
    }


def diagnostic_record(d: Diagnostic) -> DiagnosticRecord:
    return {
        "code": d.code,
        "severity": d.severity,
        "message": d.message,
        "source_id": d.source_id,
        "path": d.path,
    }


def exclusion_record(e: Exclusion) -> ExclusionRecord:
    return {
        "source_id": e.source_id,
        "concept_id": e.concept_id,
        "reason": e.reason,
        "detail": e.detail,
    }


def _actor(a: Actor) -> ActorRecord:
    return {"by": a.by, "at": a.at}


def concept_record(
    source_id: str, c: Concept, *, default_authority: str | None, now: datetime
) -> ConceptRecord:
    return {
        "source_id": source_id,
        "concept_id": c.concept_id,
        "path": c.path,
        "type": c.type,
        "title": c.title,
        "description": c.description,
        "tags": list(c.tags),
        "resource": c.resource,
        "status": c.status,
        "status_known": c.status_known,
        "stale_after": _iso(c.stale_after),
        "is_stale": c.is_stale_at(now),
        "generated": None if c.generated is None else _actor(c.generated),
        "verified": [_actor(a) for a in c.verified],
        "trust_tier": c.trust_tier,
        # The same fallback as the resolver's passages (okfast.model.passage_from_row):
        # written, even empty, it is the effective one (docs/spec.md §5.2, §7).
        "authority": c.authority if c.authority is not None else default_authority or "reference",
        "supersedes": list(c.supersedes),
        "superseded_by": list(c.superseded_by),
        "conflicts_with": list(c.conflicts_with),
        "body": c.body,
        "frontmatter": dict(c.frontmatter),
    }
