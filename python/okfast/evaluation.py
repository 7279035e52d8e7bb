"""Evaluating a resolver on judged queries (docs/spec.md §11.2–§11.4).

Each judged query becomes a :class:`~okfast.query.Query` (by default
``Query(text, limit=depth)``; ``query=`` supplies another maker, the one seam
a settings file or a scorer option is threaded through), is searched once and
timed, and its ranking is handed to ir-measures, whose ``pytrec_eval``
provider runs trec_eval's own code. The metric library is imported here, when
an evaluation runs, never by ``import okfast``: it is the ``okfast[eval]``
extra.
"""

from __future__ import annotations

import importlib
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from okfast.arguments import callable_of, of_type
from okfast.bundle import Bundle
from okfast.comparison import Comparison, compare
from okfast.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MissingDependencyError,
    OkfastError,
)
from okfast.model import Diagnostic, DiagnosticCode
from okfast.qrels import JudgedQuery, JudgedSet, encode_id
from okfast.query import Query
from okfast.scoring import whole_at_least
from okfast.terminal import one_line

if TYPE_CHECKING:
    from okfast.catalog import Source
    from okfast.resolver import Resolver

#: The metrics of an evaluation, in the order they are reported (§11.3).
METRICS: tuple[str, ...] = ("ndcg@10", "ndcg@100", "recall@10", "recall@100", "mrr@10", "p@10")
#: How deep each ranking goes unless told otherwise: what the @100 metrics need.
DEFAULT_DEPTH = 100
#: ``mrr@10`` is trec_eval's ``recip_rank`` over the first 10 results
#: (trec_eval ``-M 10``), since trec_eval's ``recip_rank`` has no cut-off.
_RR_DEPTH = 10
_EXTRA_HINT = "pip install 'okfast[eval]'"

QueryMaker = Callable[[JudgedQuery], Query]


def require(module: str, what: str) -> ModuleType:
    """Import a module of the ``okfast[eval]`` extra, or say how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(
            f"{what} needs {module}, from the eval extra: {_EXTRA_HINT} ({e})"
        ) from None


@dataclass(frozen=True, slots=True)
class Latency:
    """The 50th and 95th percentiles of the searches' wall-clock times, in
    milliseconds (numpy's linear interpolation between ranks)."""

    p50: float
    p95: float


@dataclass(frozen=True, slots=True)
class QueryEval:
    """One judged query's outcome: its metrics, the doc ids it retrieved in rank
    order (as the run file writes them, §11.4), and how long its search took."""

    qid: str
    text: str
    metrics: Mapping[str, float]
    ranking: tuple[str, ...]
    latency_ms: float


@dataclass(frozen=True)
class EvalReport:
    """What :func:`evaluate` measured (docs/spec.md §11.3). ``metrics`` is the
    mean of each metric over ``per_query`` (every evaluated query counts, one
    that retrieved nothing with 0s: trec_eval ``-c``)."""

    metrics: Mapping[str, float]
    per_query: tuple[QueryEval, ...]
    latency_ms: Latency
    diagnostics: tuple[Diagnostic, ...]
    depth: int
    comparison: Comparison | None = None

    def query(self, qid: str) -> QueryEval:
        """The outcome of one query (``InvalidArgumentError`` for an unknown qid)."""
        for q in self.per_query:
            if q.qid == qid:
                return q
        raise InvalidArgumentError(f"no evaluated query {qid!r}")

    def trec_run(self, tag: str = "okfast") -> str:
        """The rankings as a TREC run file: ``qid Q0 docid rank score tag`` a
        line, rank from 1, score = (length of the ranking) + 1 - rank, so scores
        strictly decrease down a ranking and no tool re-orders ties (§11.4)."""
        if not isinstance(tag, str):
            raise InvalidArgumentTypeError(f"a run tag is text, got {type(tag).__name__}")
        if not tag or encode_id(tag) != tag:
            raise InvalidArgumentError(
                f"a run tag must be non-empty, without white space or '%': {tag!r}"
            )
        lines = []
        for q in self.per_query:
            n = len(q.ranking)
            qid = encode_id(q.qid)
            for rank, doc in enumerate(q.ranking, 1):
                lines.append(f"{qid} Q0 {encode_id(doc)} {rank} {n + 1 - rank} {tag}\n")
        return "".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The JSON object ``okfast eval --json`` prints (§11.5)."""
        return {
            "queries": len(self.per_query),
            "depth": self.depth,
            "metrics": dict(self.metrics),
            "per_query": [{"qid": q.qid, "metrics": dict(q.metrics)} for q in self.per_query],
            "latency_ms": {"p50": self.latency_ms.p50, "p95": self.latency_ms.p95},
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "comparison": None if self.comparison is None else self.comparison.to_json(),
        }


def evaluate(
    resolver: Resolver,
    qrels: JudgedSet | str | os.PathLike[str],
    *,
    query: QueryMaker | None = None,
    depth: int = DEFAULT_DEPTH,
    baseline: EvalReport | None = None,
    workers: int | None = None,
    refresh: bool = True,
) -> EvalReport:
    """Search every judged query with ``resolver`` and measure the rankings
    (docs/spec.md §11.2–§11.3).

    ``qrels`` is a :class:`JudgedSet` or the path of a JSON Lines file.
    ``query`` makes the :class:`Query` of each judged query (default
    ``Query(q.text, limit=depth)``, so the resolver's defaults apply); every
    ranking is cut at ``depth`` (a whole number >= 1). With ``baseline`` (the
    report of another configuration on the same judged set) the report carries
    a :class:`~okfast.comparison.Comparison`. ``workers`` threads search the
    queries (default one per core; ``okfast tune``, which runs configurations
    side by side, uses one). ``refresh=False`` searches the snapshots the
    resolver holds as they are: a caller measuring several configurations on
    one corpus refreshes once, before the first.
    """
    # What a resolver is to it (a Resolver, a RayResolver): checked here, not
    # met as an AttributeError halfway (docs/spec.md §8, §11.2).
    if not all(callable(getattr(resolver, m, None)) for m in ("search", "snapshot", "refresh")):
        raise InvalidArgumentTypeError(
            f"resolver must be a Resolver, got {type(resolver).__name__}"
        )
    callable_of("query", query)
    if baseline is not None:
        of_type("baseline", baseline, EvalReport)
    depth = whole_at_least("depth", depth, 1)
    if workers is not None:
        workers = whole_at_least("workers", workers, 1)
    judged = qrels if isinstance(qrels, JudgedSet) else JudgedSet.load(qrels)
    if not judged.queries:
        first = next((f" ({d.path}: {d.message})" for d in judged.diagnostics), "")
        raise InvalidArgumentError("no judged query to evaluate" + first)
    # What would fail after the searches fails before them.
    if baseline is not None and [q.qid for q in judged] != [q.qid for q in baseline.per_query]:
        raise InvalidArgumentError("the baseline was evaluated on other judged queries")
    irm = require("ir_measures", "evaluate")
    if not irm.pytrec_eval.is_available():
        raise MissingDependencyError(
            f"evaluate needs pytrec_eval, from the eval extra: {_EXTRA_HINT}"
        )
    if baseline is not None:
        require("scipy.stats", "a comparison with a baseline")
    ids = _DocIds(resolver)
    diagnostics = list(judged.diagnostics)
    qrels_by_qid = ids.judgements(judged, diagnostics)

    make: QueryMaker = query or (lambda q: Query(q.text, limit=depth))
    if not isinstance(refresh, bool):
        raise InvalidArgumentTypeError(f"refresh must be True or False, got {refresh!r}")
    if refresh:
        resolver.refresh()  # every source loaded before the clock starts
    rankings, latencies, found = _search_all(
        resolver, [make(q) for q in judged.queries], depth, workers or os.cpu_count() or 1
    )
    runs = {q.qid: ids.run_ids(r) for q, r in zip(judged.queries, rankings, strict=True)}
    per_qid = _measure(irm, qrels_by_qid, runs)

    p50, p95 = (float(x) for x in np.percentile(latencies, [50, 95]))
    per_query = tuple(
        QueryEval(q.qid, q.text, per_qid[q.qid], runs[q.qid], ms)
        for q, ms in zip(judged.queries, latencies, strict=True)
    )
    metrics = {m: math.fsum(q.metrics[m] for q in per_query) / len(per_query) for m in METRICS}
    report = EvalReport(
        metrics, per_query, Latency(p50, p95), tuple(diagnostics + found), depth, None
    )
    return report if baseline is None else replace(report, comparison=compare(report, baseline))


def diagnostic_line(d: Diagnostic) -> str:
    """A diagnostic in a report's table (docs/spec.md §11.5, §14.5), on one
    line whatever its path or message holds (§10.1)."""
    where = ":".join(x for x in (d.source_id, d.path) if x)
    parts = (f"{d.severity:<7}", f"{d.code:<20}", where, d.message)
    return one_line(" ".join(x for x in parts if x))


def _search_all(
    resolver: Resolver, queries: Sequence[Query], depth: int, workers: int
) -> tuple[list[list[tuple[str, str, int | float]]], list[float], list[Diagnostic]]:
    """Each query's ``(source_id, concept_id, score)`` ranking cut at ``depth``, its
    search time in ms, and the distinct error diagnostics of the searches (a
    source that could not be searched, a file skipped), in first-seen order.
    One place runs the searches, so a batch search can replace the loop."""

    def one(q: Query) -> tuple[list[tuple[str, str, int | float]], float, tuple[Diagnostic, ...]]:
        start = time.perf_counter_ns()
        ctx = resolver.search(q, exclusions=False)  # the ranking is all it reads
        keys = ctx.passages.keys()[:depth]
        ms = (time.perf_counter_ns() - start) / 1e6
        return keys, ms, ctx.diagnostics

    # A thread per core: the native searches release the GIL (docs/spec.md
    # §11.3). Each latency is its own query's; the results keep the order.
    workers = min(len(queries), workers)
    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(one, queries))
    else:
        done = [one(q) for q in queries]
    rankings = [r for r, _, _ in done]
    latencies = [ms for _, ms, _ in done]
    seen: dict[tuple[str, str | None, str | None, str], Diagnostic] = {}
    for _, _, diagnostics in done:
        for d in diagnostics:
            if d.severity == "error":
                seen.setdefault((d.code, d.source_id, d.path, d.message), d)
    return rankings, latencies, list(seen.values())


def _measure(
    irm: Any, qrels: Mapping[str, Mapping[str, int]], runs: Mapping[str, Sequence[str]]
) -> dict[str, dict[str, float]]:
    """Per query, every metric of :data:`METRICS`, computed by trec_eval (through
    ir-measures' pytrec_eval provider) on scores that strictly decrease by rank."""
    measures = {
        irm.nDCG @ 10: "ndcg@10",
        irm.nDCG @ 100: "ndcg@100",
        irm.R @ 10: "recall@10",
        irm.R @ 100: "recall@100",
        irm.P @ 10: "p@10",
    }
    provider = irm.pytrec_eval
    out: dict[str, dict[str, float]] = {qid: {} for qid in qrels}
    # An empty ranking is left out: the evaluator gives such a query 0s.
    run = {qid: _scored(docs) for qid, docs in runs.items() if docs}
    # The provider hands back the measure objects it was given; hashing one
    # formats its name, so they are told apart by identity first.
    same = {id(k): v for k, v in measures.items()}
    for m in provider.evaluator(list(measures), qrels).iter_calc(run):
        out[m.query_id][same.get(id(m.measure)) or measures[m.measure]] = float(m.value)
    top = {qid: _scored(docs[:_RR_DEPTH]) for qid, docs in runs.items() if docs}
    for m in provider.evaluator([irm.RR], qrels).iter_calc(top):
        out[m.query_id]["mrr@10"] = float(m.value)
    return {qid: {name: values[name] for name in METRICS} for qid, values in out.items()}


def _scored(docs: Sequence[str]) -> dict[str, float]:
    """Scores for the metric library: n, n-1, …, 1 down a ranking of n (§11.4)."""
    n = len(docs)
    return {doc: float(n - i) for i, doc in enumerate(docs)}


class _DocIds:
    """Which concept of which source a judged doc id names (docs/spec.md §11.2),
    and the ids rankings are written with: bare concept ids when every judged
    id was read as one, else ``source_id:concept_id``; so a run file matches
    the judged set it was made from."""

    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver
        self.sources = {
            s.id: s for s in resolver.catalog.sources if s.enabled and s.role == "knowledge"
        }
        self.single = next(iter(self.sources)) if len(self.sources) == 1 else None
        self._bundles: dict[str, Bundle | None] = {}
        self.bare = False

    def _bundle(self, source: Source) -> Bundle | None:
        if source.id not in self._bundles:
            try:
                # The very snapshot the searches read (no second load).
                self._bundles[source.id] = self.resolver.snapshot(source)
            except (OkfastError, OSError):
                # Nothing is known of its concepts; the searches report the
                # source as unavailable (§5.3).
                self._bundles[source.id] = None
        return self._bundles[source.id]

    def _read(self, doc: str) -> tuple[str | None, str, bool, str]:
        """``(source_id, concept_id, bare, problem)``: ``source_id`` is ``None``
        when the id names no concept, and ``problem`` says why."""
        head, colon, tail = doc.partition(":")
        if colon and head in self.sources:
            source_id, concept_id, bare = head, tail, False
        elif self.single is not None:
            source_id, concept_id, bare = self.single, doc, True
        elif colon:
            return None, doc, False, f"'{head}' is not an enabled knowledge source"
        else:
            why = "a bare concept id needs a catalog with exactly one enabled knowledge source"
            return None, doc, True, why
        bundle = self._bundle(self.sources[source_id])
        if bundle is not None and concept_id not in bundle:
            return None, doc, bare, f"source '{source_id}' has no such concept"
        return source_id, concept_id, bare, ""

    def judgements(
        self, judged: JudgedSet, diagnostics: list[Diagnostic]
    ) -> dict[str, dict[str, int]]:
        """Each query's grades keyed by the ids rankings use. An unknown doc id
        is kept as written: relevant, and never retrieved (as in trec_eval)."""
        read = {q.qid: [(d, g, self._read(d)) for d, g in q.judgements.items()] for q in judged}
        self.bare = self.single is not None and all(
            bare for docs in read.values() for _, _, (_, _, bare, _) in docs
        )
        out: dict[str, dict[str, int]] = {}
        for qid, docs in read.items():
            grades = out[qid] = {}
            for doc, grade, (source_id, concept_id, _, problem) in docs:
                where = judged.locations.get((qid, doc))
                if source_id is None:
                    key = doc
                    diagnostics.append(
                        _warning(
                            DiagnosticCode.UNKNOWN_DOC_ID,
                            f"Judged document '{doc}' of query '{qid}' is not in the catalog "
                            f"({problem}); "
                            + (
                                "it counts as relevant and never retrieved."
                                if grade > 0
                                else "it is judged not relevant and never retrieved."
                            ),
                            where,
                        )
                    )
                else:
                    key = self.run_id(source_id, concept_id)
                if key in grades:
                    diagnostics.append(
                        _warning(
                            DiagnosticCode.DUPLICATE_JUDGEMENT,
                            f"Document '{doc}' names a document already judged for query "
                            f"'{qid}'; the first grade ({grades[key]}) is kept.",
                            where,
                        )
                    )
                else:
                    grades[key] = grade
        return out

    def run_id(self, source_id: str, concept_id: str) -> str:
        return concept_id if self.bare else f"{source_id}:{concept_id}"

    def run_ids(self, ranking: Sequence[tuple[str, str, int | float]]) -> tuple[str, ...]:
        """:meth:`run_id` of each ``(source_id, concept_id, score)``."""
        if self.bare:
            return tuple(c for _, c, _ in ranking)
        return tuple(f"{s}:{c}" for s, c, _ in ranking)


def _warning(code: DiagnosticCode, message: str, where: str | None) -> Diagnostic:
    return Diagnostic(code.value, message, where, None, "warning")
