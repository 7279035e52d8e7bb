"""The resolver as the MCP server's ``assemble_context`` hands it to
:class:`okfast.ContextAssembler`: the server's strategy applied per query,
and a note of whether reading a passage met a damaged snapshot, which the
assembler turns into a diagnostic and the server into a reopen
(docs/integrations.md, docs/spec.md §9.6)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from okfast.errors import OkfastError
from okfast.model import Diagnostic, Passage
from okfast.query import Query, Strategy
from okfast.resolver import Resolver


def is_damage(e: BaseException) -> bool:
    """Whether ``e`` says a loaded snapshot cannot read its own texts back
    (its cache file was changed in place; okfast removes the file, so the next
    load rebuilds it). That is every ``OkfastError`` other than an argument
    (``ValueError``), look-up (``LookupError``) or missing-bundle
    (``FileNotFoundError``) error (docs/spec.md §8)."""
    return isinstance(e, OkfastError) and not isinstance(
        e, ValueError | LookupError | FileNotFoundError
    )


class Watched:
    """The resolver as :class:`ContextAssembler` sees it, noting whether reading
    a passage met a damaged snapshot. The assembler turns such a failure into
    a diagnostic and goes on, so without this note :meth:`_Service.with_reload`
    would never see the damage."""

    def __init__(self, resolver: Resolver, strategy: Strategy | None = None) -> None:
        self.resolver = resolver
        #: The server's strategy, applied per query to a ready resolver.
        self.strategy = strategy
        self.damaged = False
        self.default_scorer = resolver.default_scorer
        self.default_bm25f = resolver.default_bm25f

    def _note(self, e: BaseException) -> None:
        if is_damage(e):
            self.damaged = True

    def _passages(self, passages: Iterable[Passage]) -> Iterator[Passage]:
        try:
            for p in passages:
                yield replace(p, _body=self._guarded(p))
        except Exception as e:
            self._note(e)
            raise

    def _guarded(self, p: Passage) -> Callable[[], str]:
        def body() -> str:
            try:
                return p.body
            except Exception as e:
                self._note(e)
                raise

        return body

    def search(self, query: Query, /) -> Found:
        if self.strategy is not None and query.strategy is None:
            query = replace(query, strategy=self.strategy)
        ctx = self.resolver.search(query)
        return Found(Named(self._passages(ctx.passages), ctx.passages.keys), ctx.diagnostics)


@dataclass
class Named:
    """Passages read one by one through the watch, and named all at once
    without being built (what the assembler lists as omitted, §6.5)."""

    each: Iterator[Passage]
    keys: Callable[[], list[tuple[str, str, int | float]]]

    def __iter__(self) -> Iterator[Passage]:
        return self.each


@dataclass
class Found:
    passages: Iterable[Passage]
    diagnostics: Sequence[Diagnostic]
