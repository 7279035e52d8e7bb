"""``okfast.integrations.llama_index.OkfastRetriever``: exactly the resolver's
passages as scored text nodes, sync and async."""

from __future__ import annotations

import copy
import shutil
from typing import Any

import pytest
from integration_extras import EXAMPLES, copy_examples, require
from okfast import (
    Catalog,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    Query,
    Resolver,
    Strategy,
)
from okfast.integrations.records import passage_record

schema = require("llama_index.core.schema", "llama-index")
base_retriever = require("llama_index.core.retrievers", "llama-index")
OkfastRetriever = require("okfast.integrations.llama_index", "llama-index").OkfastRetriever

CATALOG = EXAMPLES / "catalog.json"
QUESTION = "sourdough starter flour"


def keys(nodes: list[Any]) -> list[tuple[str, float | None]]:
    return [(n.node.node_id, n.score) for n in nodes]


@pytest.mark.parametrize("strategy", [None, *Strategy])
async def test_the_resolvers_passages_in_its_order(strategy: Strategy | None) -> None:
    r = OkfastRetriever(CATALOG, similarity_top_k=6, strategy=strategy)
    assert isinstance(r, base_retriever.BaseRetriever)
    passages = (
        Resolver(Catalog.load(CATALOG)).search(Query(QUESTION, limit=6, strategy=strategy)).passages
    )
    want = [(f"{p.source_id}:{p.concept_id}", float(p.score)) for p in passages]
    assert len(want) == 6
    assert keys(r.retrieve(QUESTION)) == want
    assert keys(await r.aretrieve(QUESTION)) == want
    assert keys(r.retrieve(schema.QueryBundle(QUESTION))) == want


def test_nodes_carry_the_body_and_the_passage() -> None:
    resolver = Resolver(Catalog.load(CATALOG))
    nodes = OkfastRetriever(resolver=resolver, similarity_top_k=3).retrieve(QUESTION)
    passages = resolver.search(Query(QUESTION, limit=3)).passages
    for n, p in zip(nodes, passages, strict=True):
        assert isinstance(n.node, schema.TextNode)
        assert n.node.text == p.body and n.node.text
        assert n.node.metadata == passage_record(p)
        # What a model or an embedding sees: the title, then the body.
        shown = n.node.get_content(metadata_mode=schema.MetadataMode.LLM)
        assert shown == f"title: {p.title}\n\n{p.body}"
        assert n.node.get_content(metadata_mode=schema.MetadataMode.EMBED) == shown


def test_tag_narrows_every_query() -> None:
    nodes = OkfastRetriever(CATALOG, tag="sourdough", similarity_top_k=10).retrieve(QUESTION)
    assert nodes and all("sourdough" in n.node.metadata["tags"] for n in nodes)


@pytest.mark.parametrize("top_k", [0, -2, True, 2.5])
def test_bad_top_k_is_an_invalid_argument_error(top_k: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="similarity_top_k"):
        OkfastRetriever(CATALOG, similarity_top_k=top_k)


@pytest.mark.parametrize(
    "bad",
    [{"strategy": "sideways"}, {"scorer": "bm26"}, {"tag": 3}, {"tag": "\ud800"}],
    ids=["strategy", "scorer", "tag-type", "tag-surrogate"],
)
@pytest.mark.parametrize("given", ["catalog", "resolver"])
def test_a_bad_option_is_refused_when_the_retriever_is_made(
    bad: dict[str, Any], given: str
) -> None:
    """The mistake is raised where it is made, the same error with a ready
    resolver as with a catalog, never deferred to the first retrieve."""
    source: dict[str, Any] = (
        {"catalog": CATALOG}
        if given == "catalog"
        else {"resolver": Resolver(Catalog.load(CATALOG))}
    )
    with pytest.raises(InvalidArgumentError):
        OkfastRetriever(**source, **bad)


def test_options_are_fixed_once_made() -> None:
    """As the LangChain retriever's: an option assigned afterwards would
    skip the checks it was made with (similarity_top_k = 0 failing only at
    the next query), so it is refused and the retriever is unchanged."""
    r = OkfastRetriever(CATALOG, similarity_top_k=2, strategy="merged")
    for name, value in (
        ("similarity_top_k", 0),
        ("similarity_top_k", 5),
        ("strategy", "sideways"),
        ("tag", "sourdough"),
        ("scorer", "bm25f"),
    ):
        with pytest.raises(InvalidArgumentError, match="fixed when the retriever is made"):
            setattr(r, name, value)
    assert (r.similarity_top_k, r.strategy, r.tag, r.scorer) == (2, "merged", None, None)
    assert len(r.retrieve(QUESTION)) == 2


def test_needs_exactly_one_of_catalog_and_resolver() -> None:
    with pytest.raises(InvalidArgumentError, match="either catalog"):
        OkfastRetriever()
    with pytest.raises(InvalidArgumentError, match="either catalog"):
        OkfastRetriever(CATALOG, resolver=Resolver(Catalog.load(CATALOG)))


def test_a_resolver_of_the_wrong_type_is_refused_when_made() -> None:
    """docs/integrations.md: checked when the retriever is made, not an
    AttributeError at the first query."""
    import re

    from okfast import Bundle, Resolver

    # Anything with a search() is not a resolver: a bundle, the class itself.
    examples = EXAMPLES / "bakery-ops"
    for bad in (CATALOG, 3, Bundle.load(examples), Resolver, re.compile("x")):
        with pytest.raises(InvalidArgumentTypeError, match="resolver= must be a Resolver"):
            OkfastRetriever(resolver=bad)


def test_a_blank_query_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="non-blank"):
        OkfastRetriever(CATALOG).retrieve("  ")


@pytest.mark.parametrize("bad", [5, None, b"sourdough", ["sourdough"]])
async def test_a_query_of_the_wrong_type_is_okfasts_type_error(bad: Any) -> None:
    """Not pydantic's ValidationError from LlamaIndex's instrumentation (5,
    None) nor an AttributeError (b"...": no query_str): okfast's own
    InvalidArgumentTypeError, sync and async (docs/integrations.md)."""
    r = OkfastRetriever(CATALOG)
    with pytest.raises(InvalidArgumentTypeError, match="text or a QueryBundle"):
        r.retrieve(bad)
    with pytest.raises(InvalidArgumentTypeError, match="text or a QueryBundle"):
        await r.aretrieve(bad)


@pytest.mark.parametrize("scorer", ["bm25f", "fusion"])
def test_scorer_and_settings_reach_the_resolver(scorer: str, tmp_path: Any) -> None:
    """docs/spec.md §13: the nodes are the resolver's passages under the scorer."""
    passages = (
        Resolver(Catalog.load(CATALOG))
        .search(Query(QUESTION, limit=5, scorer=scorer, strategy="merged"))
        .passages
    )
    want = [(f"{p.source_id}:{p.concept_id}", float(p.score)) for p in passages]
    assert len(want) == 5
    r = OkfastRetriever(CATALOG, similarity_top_k=5, scorer=scorer, strategy="merged")
    assert keys(r.retrieve(QUESTION)) == want
    settings = tmp_path / "s.json"
    settings.write_text(f'{{"version": 1, "scorer": "{scorer}", "strategy": "merged"}}')
    assert (
        keys(OkfastRetriever(CATALOG, similarity_top_k=5, settings=settings).retrieve(QUESTION))
        == want
    )
    with pytest.raises(ValueError, match="scorer"):
        OkfastRetriever(CATALOG, scorer="bm26")


def test_a_source_that_went_is_logged_not_silent(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    catalog = copy_examples(tmp_path)
    r = OkfastRetriever(catalog, similarity_top_k=4)
    assert r.retrieve(QUESTION)
    shutil.rmtree(catalog.parent / "bakery-ops")
    with caplog.at_level("WARNING", logger="okfast"):
        nodes = r.retrieve(QUESTION)
    assert all(n.node.metadata["source_id"] != "bakery" for n in nodes)
    assert any("[SourceUnavailable]" in rec.getMessage() for rec in caplog.records)


def test_a_deep_copy_shares_the_resolver_and_copies_the_rest() -> None:
    """copy.deepcopy failed on the resolver's lock: the copy now shares the
    resolver, as a connection is shared, answers as the original does and
    keeps its options fixed (docs/integrations.md)."""
    r = OkfastRetriever(CATALOG, similarity_top_k=2, tag=None)
    c = copy.deepcopy(r)
    assert c._resolver is r._resolver and c.callback_manager is not r.callback_manager
    assert keys(c.retrieve(QUESTION)) == keys(r.retrieve(QUESTION))
    with pytest.raises(InvalidArgumentError, match="fixed"):
        c.similarity_top_k = 3


def test_llama_indexs_own_options_and_a_misspelt_one_are_checked_when_made() -> None:
    """docs/integrations.md: as the LangChain retriever's, okfast's errors
    when the retriever is made; a wrong callback_manager failed at retrieve()
    and verbose="x" was taken."""
    with pytest.raises(InvalidArgumentError, match="unknown option.s. scorrer"):
        OkfastRetriever(CATALOG, scorrer="bm25f")  # type: ignore[call-arg]
    with pytest.raises(InvalidArgumentTypeError, match="callback_manager must be a"):
        OkfastRetriever(CATALOG, callback_manager=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentTypeError, match="verbose must be True or False"):
        OkfastRetriever(CATALOG, verbose="x")  # type: ignore[arg-type]
