"""How every integration opens a catalog and asks it a question.

The MCP server and both retrievers go through these two functions, so an
option that reaches the resolver or the query (the coming ``settings`` file
and ``scorer`` choice) is added here once and then passed through by each
integration in one line.
"""

from __future__ import annotations

import os

from okfast.catalog import Catalog
from okfast.memory.scope import Scope
from okfast.query import Query, Strategy
from okfast.resolver import Resolver

CatalogLike = Catalog | str | os.PathLike[str]


def open_resolver(
    catalog: CatalogLike | None = None,
    resolver: Resolver | None = None,
    *,
    strategy: Strategy | str | None = None,
) -> Resolver:
    """The given ``resolver``, or one over ``catalog`` (a :class:`Catalog` or
    the path of a ``catalog.json``). Exactly one of the two must be given.

    ``strategy`` becomes the resolver's default; with a ready ``resolver`` it
    is applied per query instead (see :func:`make_query`), so a shared
    resolver is never changed behind its owner's back.

    Raises :class:`okfast.CatalogError` (a ``ValueError``) for a bad catalog
    and ``ValueError`` for a bad argument.
    """
    # Seam: `settings` (a settings file) will be loaded here and passed to
    # `Resolver(...)` below.
    if (catalog is None) == (resolver is None):
        raise ValueError("give either catalog= (a Catalog or a catalog.json path) or resolver=")
    if resolver is not None:
        return resolver
    assert catalog is not None
    cat = catalog if isinstance(catalog, Catalog) else Catalog.load(catalog)
    if strategy is None:
        return Resolver(cat)
    return Resolver(cat, default_strategy=strategy)


def make_query(
    text: str,
    *,
    limit: int | None = None,
    strategy: Strategy | str | None = None,
    tag: str | None = None,
    explain: bool = False,
    scope: Scope | None = None,
) -> Query:
    """The knowledge query every integration sends. ``ValueError`` for a blank
    text, an unknown strategy or a negative limit (docs/spec.md §5.1)."""
    # Seam: `scorer` will be one more keyword here, passed on to `Query`.
    return Query(
        text,
        limit=limit,
        strategy=strategy,
        tag=tag,
        explain=explain,
        scope=scope if scope is not None else Scope.local(),
    )
