"""``OkfastRetriever``: a catalog as a LlamaIndex retriever (``okfast[llama-index]``).

Each result is one resolved passage, in the resolver's order::

    NodeWithScore(node=TextNode(id_="<source_id>:<concept_id>", text=<the concept's body>,
                                metadata=<the passage's fields, as
                                          okfast.integrations.records.PassageRecord>),
                  score=<the passage's score>)

Only ``title`` of the metadata goes into the text LlamaIndex shows a model or
embeds; the other fields stay for filtering and citing.
"""

from __future__ import annotations

import asyncio
import copy
import os
from typing import TYPE_CHECKING, Any, cast

try:
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType, TextNode
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "okfast.integrations.llama_index needs llama-index-core: pip install 'okfast[llama-index]'"
    ) from e

from okfast.arguments import flag_of
from okfast.errors import InvalidArgumentError, InvalidArgumentTypeError
from okfast.integrations.records import PassageRecord, passage_record
from okfast.integrations.searching import CatalogLike, make_query, open_resolver, ranked
from okfast.model import Passage
from okfast.query import Strategy
from okfast.resolver import Resolver
from okfast.scoring import Scorer, count_of, scorer_of
from okfast.settings import Settings

if TYPE_CHECKING:
    from okfast.distributed import RayResolver

_SHOWN = frozenset({"title"})
_HIDDEN = sorted(frozenset(PassageRecord.__annotations__) - _SHOWN)


def _node(p: Passage) -> NodeWithScore:
    metadata: dict[str, Any] = dict(passage_record(p))
    node = TextNode(
        id_=f"{p.source_id}:{p.concept_id}",
        text=p.body,
        metadata=metadata,
        excluded_llm_metadata_keys=list(_HIDDEN),
        excluded_embed_metadata_keys=list(_HIDDEN),
    )
    return NodeWithScore(node=node, score=float(p.score))


def _query_of(query: object) -> QueryType:
    """``query`` when it is what a retriever takes: LlamaIndex reads anything
    else as a ``QueryBundle`` (an ``AttributeError``) or refuses it in its
    instrumentation (pydantic's error), before okfast sees it; okfast's own
    type error instead (docs/spec.md §8, docs/integrations.md)."""
    if not isinstance(query, str | QueryBundle):
        raise InvalidArgumentTypeError(
            f"a query is text or a QueryBundle, got {type(query).__name__}"
        )
    return query


#: The options a retriever is made with, fixed from then on.
_OPTIONS = frozenset({"similarity_top_k", "strategy", "tag", "scorer"})


class OkfastRetriever(BaseRetriever):
    """Resolves a query over an okfast catalog.

    Build it from ``catalog=`` (a :class:`okfast.Catalog` or the path of a
    ``catalog.json``, loaded once) or from a ready ``resolver=``.
    ``similarity_top_k`` caps the nodes; ``strategy``, ``scorer`` and ``tag``
    are passed to every query; ``settings`` (with ``catalog``) are the
    resolver's (docs/spec.md §13). A bad option raises
    :class:`okfast.InvalidArgumentError` here, not at the first search; a bad
    catalog or settings file raises :class:`okfast.CatalogError` or
    :class:`okfast.errors.SettingsError`. Each is a ``ValueError``.
    """

    def __init__(
        self,
        catalog: CatalogLike | None = None,
        *,
        resolver: Resolver | RayResolver | None = None,
        similarity_top_k: int = 4,
        strategy: Strategy | str | None = None,
        tag: str | None = None,
        scorer: Scorer | str | None = None,
        settings: Settings | str | os.PathLike[str] | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **unknown: Any,
    ) -> None:
        if unknown:
            # As the LangChain retriever says it (docs/integrations.md), not
            # Python's bare TypeError for a misspelt keyword.
            raise InvalidArgumentError(
                f"OkfastRetriever got unknown option(s) {', '.join(sorted(unknown))}; it takes "
                "catalog, resolver, similarity_top_k, strategy, tag, scorer, settings "
                "(and LlamaIndex's callback_manager, verbose)"
            )
        similarity_top_k = count_of("similarity_top_k", similarity_top_k)
        # The options every query carries, checked by making such a query
        # (docs/spec.md §5.1) before anything is opened: a bad one fails here,
        # with the same error whether or not a ready resolver= is given (which
        # takes the strategy per query, never as its default).
        make_query("okfast", strategy=strategy, tag=tag, scorer=scorer)
        # A RayResolver has every read a retriever makes of a Resolver
        # (docs/integrations.md); open_resolver checks which was given.
        ready = cast("Resolver | None", resolver)
        self._resolver = open_resolver(catalog, ready, strategy=strategy, settings=settings)
        self.scorer = None if scorer is None else scorer_of(scorer)
        self.similarity_top_k = similarity_top_k
        self.strategy = strategy
        self.tag = tag
        # LlamaIndex takes both unchecked: a wrong one failed at retrieve().
        if callback_manager is not None and not isinstance(callback_manager, CallbackManager):
            raise InvalidArgumentTypeError(
                f"callback_manager must be a CallbackManager, got {type(callback_manager).__name__}"
            )
        super().__init__(callback_manager=callback_manager, verbose=flag_of("verbose", verbose))
        self._made = True

    def __deepcopy__(self, memo: dict[int, Any]) -> OkfastRetriever:
        # As the LangChain retriever's: the resolver is shared by the copy as
        # a connection is, the rest copied deeply (its lock cannot be).
        memo[id(self._resolver)] = self._resolver
        new = object.__new__(type(self))
        memo[id(self)] = new
        for name, value in vars(self).items():
            object.__setattr__(new, name, copy.deepcopy(value, memo))
        return new

    def __setattr__(self, name: str, value: Any) -> None:
        # As the LangChain retriever's (docs/integrations.md): the options are
        # checked when the retriever is made, and the resolver opened from
        # them; one assigned afterwards would skip that check (a bad one
        # failing at some later query) or disagree with the resolver.
        if name in _OPTIONS and getattr(self, "_made", False):
            raise InvalidArgumentError(
                f"OkfastRetriever.{name} is fixed when the retriever is made; make a new one"
            )
        super().__setattr__(name, value)

    def retrieve(self, str_or_query_bundle: QueryType) -> list[NodeWithScore]:
        return super().retrieve(_query_of(str_or_query_bundle))

    async def aretrieve(self, str_or_query_bundle: QueryType) -> list[NodeWithScore]:
        return await super().aretrieve(_query_of(str_or_query_bundle))

    def _nodes(self, text: str) -> list[NodeWithScore]:
        q = make_query(
            text,
            limit=self.similarity_top_k,
            strategy=self.strategy,
            tag=self.tag,
            scorer=self.scorer,
        )
        return [_node(p) for p in ranked(self._resolver, q)]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._nodes(query_bundle.query_str)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # The native search releases the GIL: a worker thread keeps the event
        # loop free while it runs.
        return await asyncio.to_thread(self._nodes, query_bundle.query_str)
