"""How every integration opens a catalog and asks it a question.

The MCP server and both retrievers go through these two functions, so an
option that reaches the resolver or the query (a settings file, the scorer)
is added here once and then passed through by each integration in one line.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

from okfast.arguments import flag_of, text_of
from okfast.catalog import Catalog
from okfast.errors import InvalidArgumentError, InvalidArgumentTypeError
from okfast.memory.scope import Scope
from okfast.model import Diagnostic
from okfast.passages import PassageList
from okfast.query import Query, Strategy, strategy_of
from okfast.resolver import Resolver
from okfast.scoring import Scorer
from okfast.settings import Settings

CatalogLike = Catalog | str | os.PathLike[str]

_log = logging.getLogger("okfast")


def open_resolver(
    catalog: CatalogLike | None = None,
    resolver: Resolver | None = None,
    *,
    strategy: Strategy | str | None = None,
    settings: Settings | str | os.PathLike[str] | None = None,
) -> Resolver:
    """The given ``resolver``, or one over ``catalog`` (a :class:`Catalog` or
    the path of a ``catalog.json``). Exactly one of the two must be given.

    ``strategy`` becomes the resolver's default and ``settings`` (a
    :class:`Settings` or a settings file's path; default: the file the
    catalog names) its settings (docs/spec.md §13); a ready ``resolver``
    keeps its own, and ``strategy`` is applied per query instead (see
    :func:`make_query`), so a shared resolver is never changed behind its
    owner's back.

    Raises :class:`okfast.CatalogError` (a ``ValueError``) for a bad catalog,
    :class:`okfast.errors.SettingsError` for an unreadable settings file and
    :class:`okfast.InvalidArgumentError` (a ``ValueError``) for a bad argument.
    """
    if (catalog is None) == (resolver is None):
        raise InvalidArgumentError(
            "give either catalog= (a Catalog or a catalog.json path) or resolver="
        )
    if resolver is not None:
        # A Resolver or a RayResolver: checked here, not at the first query,
        # where anything else (a Bundle, the class itself) failed inside.
        from okfast.distributed import RayResolver  # Ray itself is not imported

        if not isinstance(resolver, Resolver | RayResolver):
            hint = (
                " (a catalog path is catalog=)" if isinstance(resolver, str | os.PathLike) else ""
            )
            raise InvalidArgumentTypeError(
                f"resolver= must be a Resolver, got {type(resolver).__name__}{hint}"
            )
        if settings is not None:
            raise InvalidArgumentError(
                "settings= applies to a catalog=; a ready resolver has its own"
            )
        return resolver
    assert catalog is not None
    cat = catalog if isinstance(catalog, Catalog) else Catalog.load(catalog)
    return Resolver(cat, settings=settings, default_strategy=strategy)


def server_arguments(
    scope: object,
    capture: object,
    strategy: object,
    settings: object,
    name: object,
    threads: object,
) -> Strategy | None:
    """``build_server``'s arguments, checked before anything is loaded
    (docs/integrations.md, docs/spec.md §8): the strategy, as a
    :class:`Strategy`; a scope that is a :class:`Scope`, and one naming a
    tenant at least when ``capture`` writes memory; switches that are bools
    (``capture="no"`` would switch the writing tool on); a text ``name``."""
    if scope is not None and not isinstance(scope, Scope):
        raise InvalidArgumentTypeError(f"scope must be a Scope or None, got {type(scope).__name__}")
    if flag_of("capture", capture) and (scope is None or scope.tenant is None):
        raise InvalidArgumentError("capture needs a memory scope (a tenant at least)")
    flag_of("threads", threads)
    text_of("name", name)
    if settings is not None and not isinstance(settings, Settings | str | os.PathLike):
        raise InvalidArgumentTypeError(
            f"settings must be a Settings or a settings file's path, got {type(settings).__name__}"
        )
    return None if strategy is None else strategy_of(strategy)


def make_query(
    text: str,
    *,
    limit: int | None = None,
    strategy: Strategy | str | None = None,
    tag: str | None = None,
    explain: bool = False,
    scope: Scope | None = None,
    scorer: Scorer | str | None = None,
) -> Query:
    """The knowledge query every integration sends (``scorer=None``: the
    resolver's default). ``ValueError`` for a blank text, an unknown strategy
    or scorer or a negative limit (docs/spec.md §5.1)."""
    return Query(
        text,
        limit=limit,
        strategy=strategy,
        tag=tag,
        explain=explain,
        scope=scope if scope is not None else Scope.local(),
        scorer=scorer,
    )


def ranked(resolver: Resolver, q: Query) -> PassageList:
    """``q``'s passages, for a retriever, which has no place for diagnostics:
    each error (a source that could not be searched, a file skipped) is
    logged as a warning on the ``okfast`` logger, so an empty answer from a
    source that has gone is not silent. Only the passages are made: no
    exclusion list (docs/spec.md §5.2)."""
    ctx = resolver.search(q, exclusions=False)
    log_errors(ctx.diagnostics)
    return ctx.passages


def log_errors(diagnostics: Iterable[Diagnostic]) -> None:
    """Each error of ``diagnostics`` as a warning on the ``okfast`` logger,
    naming the source and file it is about when it has them."""
    for d in diagnostics:
        if d.severity == "error":
            where = ", ".join(x for x in (d.source_id, d.path) if x)
            _log.warning("okfast: [%s] %s%s", d.code, d.message, f" ({where})" if where else "")
