"""What a shard sends of a passage (docs/spec.md §15.3): its fields as a
plain row, and its explanation parts (docs/spec.md §5.8, §12.5), read from
one snapshot of a bundle."""

from __future__ import annotations

from dataclasses import dataclass

from okfast.bundle import Bm25fQuery, Bm25fStats, Bundle, QueryTerms
from okfast.scoring import BM25FParams


@dataclass(frozen=True)
class Fields:
    """What a passage shows of a concept (the attributes
    :func:`okfast.model.passage_from_fields` reads)."""

    concept_id: str
    title: str | None
    excerpt: str
    path: str
    type: str | None
    tags: list[str]
    description: str | None
    trust_tier: str
    status: str
    stale_after_us: int | None
    authority: str | None


#: A :class:`Fields` as it crosses: its values, in its order (a tuple of
#: plain values pickles for a small part of what a dataclass instance costs).
Row = tuple[
    str, str | None, str, str, str | None, list[str], str | None, str, str, int | None, str | None
]


@dataclass(frozen=True)
class TermFields:
    term: str
    title: bool
    tags_desc: bool
    body: bool


@dataclass(frozen=True)
class FieldPart:
    field: str
    tf: int
    length: int
    weighted_tf: float
    contribution: float


@dataclass(frozen=True)
class TermPart:
    token: str
    idf: float
    weighted_tf: float
    score: float
    fields: list[FieldPart]


#: An explanation's parts: BM25F's per token and the weighted count's per
#: term, each when that scorer ranked the passage.
Explained = tuple["list[TermPart] | None", "list[TermFields] | None"]


@dataclass(frozen=True)
class Read:
    """Which passages of one unit to read, and how their excerpt and
    explanation are made."""

    unit: int
    version: str
    positions: tuple[int, ...]
    text: str
    bm25f: BM25FParams | None
    stats: Bm25fStats | None
    explain: bool
    fusion: bool = False


def rows_of(
    b: Bundle,
    positions: list[int],
    text: str,
    terms: QueryTerms | Bm25fQuery,
    stats: Bm25fStats | None,
    bm25f: BM25FParams | None,
    explain: bool,
    fusion: bool,
) -> list[tuple[Row, Explained | None]]:
    """What passages show of ``positions``, with their explanations when asked."""
    rows: list[tuple[Row, Explained | None]] = []
    for p in positions:
        f = b.passage_fields(p, terms)
        fields: Row = (
            f.concept_id,
            f.title,
            f.excerpt,
            f.path,
            f.type,
            list(f.tags),
            f.description,
            f.trust_tier,
            f.status,
            f.stale_after_us,
            f.authority,
        )
        rows.append(
            (fields, explain_parts(b, p, text, terms, stats, bm25f, fusion) if explain else None)
        )
    return rows


def explain_parts(
    b: Bundle,
    p: int,
    text: str,
    terms: QueryTerms | Bm25fQuery,
    stats: Bm25fStats | None,
    bm25f: BM25FParams | None,
    fusion: bool,
) -> Explained:
    """One passage's explanation parts (docs/spec.md §5.8, §12.5): the BM25F
    parts and the weighted count's term matches, each when its scorer ranked."""
    if isinstance(terms, QueryTerms):
        return None, _matches(b, p, terms)
    assert stats is not None and bm25f is not None
    parts = [
        TermPart(
            t.token,
            t.idf,
            t.weighted_tf,
            t.score,
            [FieldPart(f.field, f.tf, f.length, f.weighted_tf, f.contribution) for f in t.fields],
        )
        for t in b.explain_bm25f(p, terms, stats, bm25f)
    ]
    return parts, _matches(b, p, QueryTerms(text)) if fusion else None


def _matches(b: Bundle, p: int, terms: QueryTerms) -> list[TermFields]:
    return [TermFields(t.term, t.title, t.tags_desc, t.body) for t in b.explain_at(p, terms)]
