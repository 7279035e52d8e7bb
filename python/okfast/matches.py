"""What a resolution's search of its sources gathers before the passages
are ordered (docs/spec.md §5.2–§5.3, §12.1): how the query is scored, each
searched source's matches, their concatenation, and the diagnostic of a
BM25F query with no token to score."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from okfast.bundle import QueryTerms
from okfast.model import Diagnostic, DiagnosticCode, Exclusion
from okfast.passages import SourceSnapshot
from okfast.scoring import BM25FParams, Scorer
from okfast.snapshots import CachedBundle

#: Scores: whole numbers for the weighted count, floats for BM25F.
Scores = npt.NDArray[np.uint32] | npt.NDArray[np.float64]


@dataclass(frozen=True)
class Scoring:
    """How a query is scored: the scorer, the weighted count's terms, the
    BM25F parameters, the reciprocal-rank constant (docs/spec.md §3, §12)."""

    scorer: Scorer
    terms: QueryTerms
    bm25f: BM25FParams
    rrf_k: int
    #: at most this many passages asked of each source (docs/spec.md §5.2:
    #: a search that reads only its ranking); ``None`` asks for all
    depth: int | None = None


@dataclass
class Matches:
    """What searching the selected sources produced, before ordering."""

    searched: list[SourceSnapshot]
    snaps: list[CachedBundle]
    src: list[npt.NDArray[np.uint32]]
    pos: list[npt.NDArray[np.int32]]
    score: list[npt.NDArray[np.uint32] | npt.NDArray[np.float64]]
    diagnostics: list[Diagnostic]
    exclusions: list[Exclusion]
    any_searched: bool
    #: per searched source, when its list was cut at the depth: the best
    #: score of its passages past the cut (before the stale filter), else
    #: ``None``
    cut: list[float | None] = field(default_factory=list)
    #: whether any source's list held a passage before the stale filter
    found_any: bool = False

    def unavailable(self, source_id: str, why: str) -> None:
        """A source that could not be searched: its exclusion and its
        ``SourceUnavailable`` error (docs/spec.md §5.3)."""
        self.exclusions.append(Exclusion(source_id, "", "source-unavailable", why))
        self.diagnostics.append(
            Diagnostic(
                DiagnosticCode.SOURCE_UNAVAILABLE.value,
                f"Source '{source_id}' could not be searched: {why}",
                source_id=source_id,
                severity="error",
            )
        )


def no_tokens(f: Matches, text: str) -> Diagnostic | None:
    """docs/spec.md §12.1: a BM25F query with no token to score, in any
    source, says so (and why) instead of ``NoMatches``."""
    queries = [e.terms for e in f.searched if e.stats is not None]
    # Under fusion the weighted count's list may have found what the stale
    # filter, min_score or limit then took: that is NoMatches (§12.10).
    if f.found_any or not queries or any(isinstance(x, QueryTerms) or x.tokens for x in queries):
        return None
    stopped = [w for x in queries if not isinstance(x, QueryTerms) for w in x.stopped]
    why = (
        f"every word is a stop word ({', '.join(dict.fromkeys(stopped))})"
        if stopped
        else "no word holds a letter or a digit"
    )
    return Diagnostic(
        DiagnosticCode.NO_QUERY_TOKENS.value,
        f"Query '{text}' has no tokens to score: {why}.",
        severity="warning",
    )


def concat(f: Matches) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int32], Scores]:
    if not f.pos:
        return np.zeros(0, np.uint32), np.zeros(0, np.int32), np.zeros(0, np.uint32)
    score: Scores = np.concatenate(f.score)  # type: ignore[assignment]
    return np.concatenate(f.src), np.concatenate(f.pos), score
