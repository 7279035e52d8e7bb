"""The ``okfast mcp`` server: a catalog's knowledge, and one scope's memory,
as MCP tools and resources, on the official ``mcp`` SDK 2.x (``MCPServer``).

Install with ``pip install 'okfast[mcp]'``. :mod:`okfast.integrations.mcp_schema`
holds what an agent sees of the tools (arguments, results, descriptions),
:mod:`okfast.integrations.mcp_transport` how the server talks, and
:mod:`okfast.integrations.mcp_cli` the command line.

What the server guarantees:

- **One scope.** The memory scope is fixed when the server is built (from the
  command line's ``--tenant/--user/--session``). No tool takes a scope, so no
  argument or message can choose or widen it; an extra argument is ignored.
  Without a scope there are no memory tools, and ``assemble_context`` uses
  knowledge only. ``memory_capture`` exists only with ``capture=True``.
- **Errors are tool errors.** A bad argument or a failed look-up comes back as
  a tool result with ``isError`` and a message saying what to change; nothing
  an agent sends can end the server.
- **Loaded once.** Bundles are loaded when the server starts and re-checked
  against the disk by the resolver (``max_staleness``), so an edited, removed
  or restored bundle is picked up while the server runs; a source whose
  directory vanished is reported as ``SourceUnavailable`` and the others are
  still searched (docs/spec.md §5.3). A cache file damaged before the start
  is rebuilt (a ``CacheWarning`` on stderr); one damaged under a running
  snapshot makes the server load its bundles once more and answer again. A
  settings file the server was opened with that now gives other settings
  (``okfast tune --apply``) is taken up by the next call, the loaded bundles
  kept (docs/spec.md §13.5).
- **Memory stays out of resources.** ``okf://{source_id}/{concept_id}`` and
  ``get_concept`` read knowledge sources only: memory is reached through the
  scoped memory tools alone.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, TypeVar

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import (
        ResourceError,
        ResourceNotFoundError,
        ToolError,
    )
    from mcp.server.mcpserver.tools import Tool
    from mcp.types import ToolAnnotations
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "okfast.integrations.mcp needs the MCP SDK 2.x: pip install 'okfast[mcp]'"
    ) from e

from okfast import _native
from okfast.bundle import Bundle
from okfast.catalog import Catalog, Source
from okfast.context import Assembly, ContextAssembler
from okfast.errors import InvalidArgumentError, InvalidArgumentTypeError, OkfastError
from okfast.integrations.mcp_schema import (
    APPEND,
    ASSEMBLE_DOC,
    GET_CONCEPT_DOC,
    INSTRUCTIONS,
    LIST_SOURCES_DOC,
    MAX_EXCLUSIONS,
    MAX_SOURCE_DIAGNOSTICS,
    MEMORY_CAPTURE_DOC,
    MEMORY_READ_DOC,
    READ_ONLY,
    RESOLVE_DOC,
    AssemblyResult,
    CapturedText,
    CaptureResult,
    ConceptId,
    ExplainArg,
    Limit,
    MemoryResult,
    QueryText,
    ResolveResult,
    ScorerArg,
    SourceId,
    SourceRecord,
    SourcesResult,
    StrategyArg,
    TagArg,
    TokenBudget,
    published_schema,
)
from okfast.integrations.mcp_watch import Watched, is_damage
from okfast.integrations.records import (
    ConceptRecord,
    DiagnosticRecord,
    concept_record,
    diagnostic_record,
    exclusion_record,
    passage_record,
)
from okfast.integrations.searching import (
    CatalogLike,
    make_query,
    open_resolver,
    server_arguments,
)
from okfast.integrations.settings_watch import SettingsWatch
from okfast.memory.capture import capture
from okfast.memory.scope import Scope, Tier
from okfast.memory.store import FileMemoryStore
from okfast.query import Strategy
from okfast.resolver import Resolver
from okfast.settings import Settings

_log = logging.getLogger(__name__)


def warm(resolver: Resolver) -> None:
    """Load every knowledge source now, so the first question is answered at once."""
    try:
        resolver.refresh()
    except (OSError, OkfastError) as e:
        # Loading is retried on each search; the first query reports the source.
        _log.warning("okfast mcp: a source could not be loaded yet: %s", e)


@contextlib.contextmanager
def _tool_errors() -> Iterator[None]:
    """okfast's own refusals become tool errors carrying their message, so the
    agent reads what to change; the SDK turns anything else into a generic
    tool error and keeps serving."""
    try:
        yield
    except (OkfastError, ValueError, OSError) as e:
        raise ToolError(str(e)) from e


def snapshot(resolver: Resolver, source: Source) -> Bundle:
    """The bundle ``resolver`` searches for ``source``, so ``get_concept``
    reads the very snapshot ``resolve`` ranked."""
    return resolver.snapshot(source)


T = TypeVar("T")


@dataclass
class _Service:
    """What the tools do, on one resolver and at most one memory scope.

    ``reopen`` makes a fresh resolver over the same catalog: when a snapshot
    turns out damaged (its cache file changed under it), the service loads
    every source once more and retries, instead of failing on that source
    until restarted. Without ``reopen`` (a resolver the caller owns) the
    damage is a tool error. With ``watch``, a call that finds the settings
    file changed and giving other settings first puts a resolver configured
    with them in place, sharing the loaded snapshots (docs/spec.md §13.5);
    ``strategy``, the server's own, still wins over theirs.
    """

    resolver: Resolver
    store: FileMemoryStore
    scope: Scope | None
    reopen: Callable[[], Resolver] | None = None
    watch: SettingsWatch | None = None
    strategy: Strategy | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def current(self) -> Resolver:
        """The resolver a call runs on: configured anew first when its
        settings file now gives other settings."""
        res = self.resolver
        if self.watch is None or not self.watch.changed():
            return res
        with self._lock:
            # Another call may have looked at the change already.
            if self.resolver is res and self.watch.changed():
                new = self.watch.reread(res)
                if new is not None:
                    _log.warning(
                        "okfast mcp: settings %s changed: reopening the catalog with them "
                        "(its loaded bundles kept)",
                        self.watch.path,
                    )
                    fresh = res.configured(new, default_strategy=self.strategy)
                    # A source's analyzer language may be new (§13.3).
                    warm(fresh)
                    self.resolver = fresh
            return self.resolver

    def with_reload(self, fn: Callable[[Resolver], T]) -> T:
        """``fn(resolver)``, run again on a reopened resolver each time it
        meets a damaged snapshot of another cache file."""
        used, met = self.current(), set[str]()
        while True:
            try:
                return fn(used)
            except OkfastError as e:
                # Once per damaged file: each reload rebuilds the one a read
                # met, and the next read may meet another; the same one
                # again means the reload did not help.
                if self.reopen is None or not is_damage(e) or str(e) in met:
                    raise
                if len(met) > len(used.catalog.sources):  # no more files to meet
                    raise
                met.add(str(e))
                self._reload(used, e)
                used = self.resolver

    def _reload(self, damaged: Resolver, why: BaseException) -> None:
        assert self.reopen is not None
        with self._lock:
            # Another call may have reopened it already.
            if self.resolver is damaged:
                _log.warning("okfast mcp: reloading the catalog's bundles: %s", why)
                fresh = self.reopen()
                warm(fresh)
                self.resolver = fresh

    def _knowledge_source(self, resolver: Resolver, source_id: str) -> Source:
        s = resolver.catalog.source(source_id)
        if s is None or s.role != "knowledge" or not s.enabled:
            known = ", ".join(
                x.id for x in resolver.catalog.sources if x.role == "knowledge" and x.enabled
            )
            raise LookupError(f"no knowledge source {source_id!r} (sources: {known})")
        return s

    def _concept(self, source_id: str, concept_id: str) -> ConceptRecord:
        def read(resolver: Resolver) -> ConceptRecord:
            source = self._knowledge_source(resolver, source_id)
            bundle = snapshot(resolver, source)
            if concept_id not in bundle:
                raise LookupError(f"no concept {concept_id!r} in source {source_id!r}")
            return concept_record(
                source.id,
                bundle.concept(concept_id),
                default_authority=source.authority,
                now=datetime.now(timezone.utc),
            )

        return self.with_reload(read)

    # -- tools --------------------------------------------------------------------

    def resolve(
        self,
        query: QueryText,
        limit: Limit = 10,
        strategy: StrategyArg = None,
        tag: TagArg = None,
        explain: ExplainArg = False,
        scorer: ScorerArg = None,
    ) -> ResolveResult:
        with _tool_errors():
            q = make_query(
                query,
                limit=limit,
                strategy=strategy or self.strategy,
                tag=tag,
                explain=explain,
                scorer=scorer,
            )

            def run(resolver: Resolver) -> ResolveResult:
                ctx = resolver.search(q)
                # Without explain, the "beyond limit" exclusions (one per
                # further match, possibly thousands) are counted, not listed.
                shown = [e for e in ctx.exclusions if explain or e.reason != "not-relevant"]
                return {
                    "strategy": str(q.strategy or resolver.default_strategy),
                    "passages": [passage_record(p) for p in ctx.passages],
                    "exclusions": [exclusion_record(e) for e in shown[:MAX_EXCLUSIONS]],
                    "exclusions_total": len(ctx.exclusions),
                    "diagnostics": [diagnostic_record(d) for d in ctx.diagnostics],
                    "digest": ctx.digest,
                }

            return self.with_reload(run)

    def get_concept(self, source_id: SourceId, concept_id: ConceptId) -> ConceptRecord:
        with _tool_errors():
            try:
                return self._concept(source_id, concept_id)
            except LookupError as e:
                raise ToolError(str(e)) from e

    def list_sources(self) -> SourcesResult:
        resolver = self.current()
        out: list[SourceRecord] = []
        for s in resolver.catalog.sources:
            count: int | None = None
            diags: list[DiagnosticRecord] = []
            available = s.enabled and s.directory is not None and s.directory.is_dir()
            if s.role == "knowledge" and available:
                try:
                    bundle = snapshot(resolver, s)
                    count = len(bundle)
                    diags = [
                        diagnostic_record(replace(d, source_id=s.id)) for d in bundle.diagnostics
                    ]
                except (OSError, OkfastError) as e:
                    available = False
                    diags = [
                        {
                            "code": "SourceUnavailable",
                            "severity": "error",
                            "message": f"Source '{s.id}' could not be loaded: {e}",
                            "source_id": s.id,
                            "path": None,
                        }
                    ]
            out.append(
                {
                    "id": s.id,
                    "role": s.role,
                    "tier": s.tier,
                    "priority": s.priority,
                    "enabled": s.enabled,
                    "authority": s.authority,
                    "available": available,
                    "concept_count": count,
                    "diagnostics": diags[:MAX_SOURCE_DIAGNOSTICS],
                    "diagnostics_total": len(diags),
                }
            )
        return {"sources": out}

    def assemble_context(
        self, query: QueryText, token_budget: TokenBudget = 2000
    ) -> AssemblyResult:
        with _tool_errors():

            def run(resolver: Resolver, *, strict: bool = True) -> Assembly:
                watched = Watched(resolver, self.strategy)
                assembler = ContextAssembler(watched, self.store, token_budget=token_budget)
                # The store is empty without a scope (see build_server), so
                # the local scope here reads no memory at all.
                a = assembler.assemble(self.scope or Scope.local(), query)
                if strict and watched.damaged:
                    raise OkfastError("a snapshot could not read its texts back")
                return a

            try:
                a = self.with_reload(run)
            except OkfastError as e:
                if not is_damage(e):
                    raise
                # Not reopened (or damaged again): the assembly without the
                # unreadable passages, each named in its diagnostics.
                a = run(self.resolver, strict=False)
            return {
                "text": a.text,
                "tokens": a.tokens,
                "token_budget": token_budget,
                "blocks": [
                    {
                        "surface": b.surface,
                        "source_id": b.source_id,
                        "concept_id": b.concept_id,
                        "tokens": b.tokens,
                        "truncated": b.truncated,
                    }
                    for b in a.blocks
                ],
                "omitted": [
                    {"surface": surface, "source_id": sid, "concept_id": cid}
                    for surface, sid, cid in a.omitted
                ],
                "diagnostics": [diagnostic_record(d) for d in a.diagnostics],
            }

    def memory_read(self, query: QueryText, limit: Limit = 10) -> MemoryResult:
        scope = self._fixed_scope()
        with _tool_errors():
            if not query.strip():
                raise ValueError("query must be non-blank text")
            # Memory is scored as the server scores knowledge (docs/spec.md §6).
            res = self.current()
            r = self.store.read(
                scope, query, limit=limit, scorer=res.default_scorer, bm25f=res.default_bm25f
            )
            return {
                "scope": str(scope),
                "passages": [passage_record(p) for p in r.passages],
                "diagnostics": [diagnostic_record(d) for d in r.diagnostics],
            }

    def memory_capture(self, user_text: CapturedText, agent_text: CapturedText) -> CaptureResult:
        scope = self._fixed_scope()
        # A user's exchanges go to their user memory (the default of capture,
        # docs/spec.md §6.4), shared by their sessions; a tenant-wide server
        # has no user, so its exchanges go to the tenant's memory.
        tier = Tier.USER if scope.user is not None else Tier.TENANT
        with _tool_errors():
            r = capture(self.store, scope, user_text, agent_text, tier=tier)
        if not r.written:
            raise ToolError(f"not written: {r.error}")
        return {
            "scope": str(scope),
            "tier": tier.value,
            "written": True,
            "concept_id": r.concept_id,
        }

    def _fixed_scope(self) -> Scope:
        # The memory tools are registered only with a scope; this guards a
        # direct call on a scope-less service.
        if self.scope is None:
            raise ToolError("this server has no memory scope")
        return self.scope

    # -- resources ------------------------------------------------------------------

    def read_concept(self, source_id: str, concept_id: str) -> str:
        try:
            return self._concept(source_id, concept_id)["body"]
        except LookupError as e:
            raise ResourceNotFoundError(str(e)) from e
        except (OkfastError, ValueError, OSError) as e:
            raise ResourceError(str(e)) from e


def _on_the_loop(fn: Callable[..., T]) -> Callable[..., Any]:
    """``fn`` as a coroutine function with its signature, so the SDK calls it
    on the event loop instead of handing it to a worker thread."""

    @functools.wraps(fn)
    async def tool(**arguments: Any) -> T:
        return fn(**arguments)

    return tool


def _tool(
    fn: Callable[..., Any], description: str, annotations: ToolAnnotations, *, threads: bool
) -> Tool:
    """One tool: its arguments and result types from ``fn``'s signature, each
    result checked against them by the SDK, and the output schema a client
    checks results against made cheap to check (see :func:`published_schema`)."""
    tool = Tool.from_function(
        fn if threads else _on_the_loop(fn),
        name=fn.__name__,
        description=description,
        annotations=annotations,
        structured_output=True,
    )
    derived = tool.fn_metadata.output_schema
    assert derived is not None  # every tool returns a TypedDict
    tool.fn_metadata.output_schema = published_schema(derived)
    return tool


def build_server(
    catalog: CatalogLike | None = None,
    *,
    resolver: Resolver | None = None,
    scope: Scope | None = None,
    capture: bool = False,
    strategy: Strategy | str | None = None,
    settings: Settings | str | os.PathLike[str] | None = None,
    name: str = "okfast",
    threads: bool = True,
) -> MCPServer[Any]:
    """An ``MCPServer`` over ``catalog`` (a :class:`okfast.Catalog` or a path)
    or a ready ``resolver``, with the memory tools of ``scope`` when one is
    given (``capture`` adds ``memory_capture``). Every knowledge source is
    loaded before this returns, so the first question is answered at once.
    Over a catalog, ``settings`` given as a path (or, without it, the file
    the catalog names) is watched: once it gives other settings, the next
    call takes them up (docs/spec.md §13.5).

    With ``threads`` (the default) each tool call runs on a worker thread, so
    a slow call does not hold up the other clients of an HTTP server; without,
    it runs on the server's event loop, two thread switches fewer per call,
    which is what ``okfast mcp`` does over stdio (one client).

    ``ValueError`` when ``capture`` is set without a ``scope``, or a scope is
    given and the catalog has no enabled memory source; ``CatalogError`` (a
    ``ValueError``) for a bad catalog; ``InvalidArgumentTypeError`` for a
    ``resolver`` that is not an :class:`okfast.Resolver`.
    """
    strategy = server_arguments(scope, capture, strategy, settings, name, threads)
    reopen: Callable[[], Resolver] | None = None
    watch: SettingsWatch | None = None
    if resolver is None:
        if catalog is None:
            raise InvalidArgumentError("give either catalog= (a catalog.json path) or resolver=")
        cat = catalog if isinstance(catalog, Catalog) else Catalog.load(catalog)
        if not isinstance(settings, Settings):
            # Stamped before the resolver reads it (docs/spec.md §13.5).
            watch = SettingsWatch(cat, settings)

        def reopen() -> Resolver:
            return open_resolver(cat, strategy=strategy, settings=settings)

        res = reopen()
    else:
        res = open_resolver(catalog, resolver, strategy=strategy, settings=settings)
        # The tools read concepts from the resolver's own snapshots
        # (get_concept, list_sources, warm): a resolver that only searches,
        # as a RayResolver does, cannot serve them (docs/integrations.md).
        if not isinstance(res, Resolver):
            raise InvalidArgumentTypeError(
                f"the MCP server's resolver= must be an okfast.Resolver (it reads "
                f"concepts from its snapshots), got {type(res).__name__}"
            )
    store = FileMemoryStore.from_catalog(res.catalog) if scope is not None else FileMemoryStore({})
    if scope is not None and not store.roots:
        raise InvalidArgumentError(
            "a memory scope was given; the catalog has no enabled memory source"
        )
    warm(res)
    svc = _Service(res, store, scope, reopen, watch, strategy)

    tools: list[tuple[Callable[..., Any], str, ToolAnnotations]] = [
        (svc.resolve, RESOLVE_DOC, READ_ONLY),
        (svc.get_concept, GET_CONCEPT_DOC, READ_ONLY),
        (svc.list_sources, LIST_SOURCES_DOC, READ_ONLY),
        (svc.assemble_context, ASSEMBLE_DOC, READ_ONLY),
    ]
    if scope is not None:
        tools.append((svc.memory_read, MEMORY_READ_DOC, READ_ONLY))
        if capture:
            tools.append((svc.memory_capture, MEMORY_CAPTURE_DOC, APPEND))
    server: MCPServer[Any] = MCPServer(
        name,
        instructions=INSTRUCTIONS,
        version=_native.__version__,
        log_level="WARNING",
        tools=[_tool(fn, doc, hints, threads=threads) for fn, doc, hints in tools],
    )

    @server.resource(
        "okf://{source_id}/{+concept_id}",
        name="concept",
        description="The markdown body of a knowledge concept, by source id and concept id.",
        mime_type="text/markdown",
    )
    def concept(source_id: str, concept_id: str) -> str:
        return svc.read_concept(source_id, concept_id)

    return server
