"""``okfast.integrations.langchain.OkfastRetriever``: langchain-tests' standard
retriever tests, and exactly the resolver's passages, sync and async."""

from __future__ import annotations

import asyncio
import copy
import gc
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from integration_extras import EXAMPLES, copy_examples, copy_examples_naming_settings, require
from okfast import (
    Catalog,
    CatalogError,
    FileMemoryStore,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    Query,
    Resolver,
    Scope,
    Scorer,
    Strategy,
    Tier,
    capture,
)
from okfast.errors import SettingsError
from okfast.integrations.records import passage_record
from okfast.memory import memory_path

require("langchain_core", "langchain")
standard = require("langchain_tests.integration_tests", "test-langchain")
OkfastRetriever = require("okfast.integrations.langchain", "langchain").OkfastRetriever

CATALOG = EXAMPLES / "catalog.json"
QUESTION = "sourdough starter flour"


class TestStandardRetrieverTests(standard.RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[Any]:
        return OkfastRetriever  # type: ignore[no-any-return]

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"catalog": str(CATALOG)}

    @property
    def retriever_query_example(self) -> str:
        return QUESTION


def keys(docs: list[Any]) -> list[tuple[str, float]]:
    return [(d.id, d.metadata["score"]) for d in docs]


def want(resolver: Resolver, k: int, strategy: Strategy | None = None) -> list[tuple[str, float]]:
    passages = resolver.search(Query(QUESTION, limit=k, strategy=strategy)).passages
    assert len(passages) == k, "the example needs at least k matches"
    return [(f"{p.source_id}:{p.concept_id}", p.score) for p in passages]


@pytest.mark.parametrize("strategy", [None, *Strategy])
async def test_the_resolvers_passages_in_its_order(strategy: Strategy | None) -> None:
    resolver = Resolver(Catalog.load(CATALOG))
    r = OkfastRetriever(catalog=CATALOG, k=6, strategy=strategy)
    assert keys(r.invoke(QUESTION)) == want(resolver, 6, strategy)
    assert keys(await r.ainvoke(QUESTION)) == want(resolver, 6, strategy)
    assert keys(r.invoke(QUESTION, k=2)) == want(resolver, 2, strategy)
    assert keys(await r.ainvoke(QUESTION, k=5)) == want(resolver, 5, strategy)


def test_documents_carry_the_body_and_the_passage() -> None:
    resolver = Resolver(Catalog.load(CATALOG))
    docs = OkfastRetriever(resolver=resolver, k=3).invoke(QUESTION)
    passages = resolver.search(Query(QUESTION, limit=3)).passages
    for d, p in zip(docs, passages, strict=True):
        assert d.page_content == p.body and d.page_content
        assert d.metadata == {**passage_record(p), "surface": "knowledge"}


def test_built_from_a_catalog_object_path_or_resolver() -> None:
    resolver = Resolver(Catalog.load(CATALOG))
    shared = OkfastRetriever(resolver=resolver)
    assert shared.resolver is resolver
    by_catalog = OkfastRetriever(catalog=Catalog.load(CATALOG))
    by_path = OkfastRetriever(catalog=str(CATALOG))
    assert keys(shared.invoke(QUESTION)) == keys(by_catalog.invoke(QUESTION))
    assert keys(by_path.invoke(QUESTION)) == keys(shared.invoke(QUESTION))


def test_tag_is_passed_to_every_query() -> None:
    docs = OkfastRetriever(catalog=CATALOG, tag="sourdough", k=10).invoke(QUESTION)
    assert docs and all("sourdough" in d.metadata["tags"] for d in docs)


def test_a_resolver_of_the_wrong_type_is_refused_when_made() -> None:
    """docs/integrations.md: okfast's own type error, as the LlamaIndex
    retriever's, not an AttributeError at the first query."""
    import re

    from okfast import Bundle, Resolver

    # Anything with a search() is not a resolver: a bundle, the class itself.
    examples = EXAMPLES / "bakery-ops"
    for bad in (CATALOG, 3, Bundle.load(examples), Resolver, re.compile("x")):
        with pytest.raises(InvalidArgumentTypeError, match="resolver= must be a Resolver"):
            OkfastRetriever(resolver=bad)


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"catalog": CATALOG, "resolver": Resolver(Catalog.load(CATALOG))}, {"catalog": {}}],
)
def test_bad_construction_is_a_value_error(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        OkfastRetriever(**kwargs)


def test_a_bad_catalog_or_settings_file_raises_okfasts_own_error(tmp_path: Path) -> None:
    """Not pydantic's ValidationError around it: a caller catches the okfast
    class and reads its diagnostics (docs/spec.md §8)."""
    bad = tmp_path / "catalog.json"
    bad.write_text('{"version": 1, "sources": [{"id": "x", "path": "./x", "role": "bogus"}]}')
    with pytest.raises(CatalogError) as caught:
        OkfastRetriever(catalog=bad)
    assert type(caught.value) is CatalogError
    assert "IllegalRole" in {d.code for d in caught.value.diagnostics}
    with pytest.raises(SettingsError) as unread:
        OkfastRetriever(catalog=CATALOG, settings=tmp_path / "missing.json")
    assert type(unread.value) is SettingsError


@pytest.mark.parametrize(
    "bad",
    [
        {"k": 0},
        {"k": -1},
        {"k": "3"},
        {"strategy": "sideways"},
        {"scorer": "bm26"},
        {"tag": 3},
        {"tag": "\ud800"},
    ],
    ids=["k-0", "k-negative", "k-text", "strategy", "scorer", "tag-type", "tag-surrogate"],
)
def test_a_bad_option_is_an_invalid_argument_error(bad: dict[str, Any]) -> None:
    """Raised where the mistake is made, not at the first search."""
    with pytest.raises(InvalidArgumentError):
        OkfastRetriever(catalog=CATALOG, **bad)


def test_model_validate_makes_the_retriever_as_its_constructor_does(tmp_path: Path) -> None:
    """pydantic's model_validate skipped the constructor: okfast's errors came
    wrapped in ValidationError, a CatalogError's diagnostics lost
    (docs/integrations.md)."""
    bad = tmp_path / "catalog.json"
    bad.write_text('{"version": 1, "sources": [{"id": "x", "path": "./x", "role": "bogus"}]}')
    with pytest.raises(CatalogError) as caught:
        OkfastRetriever.model_validate({"catalog": bad})
    assert "IllegalRole" in {d.code for d in caught.value.diagnostics}
    with pytest.raises(InvalidArgumentTypeError):
        OkfastRetriever.model_validate({"catalog": 5})
    with pytest.raises(InvalidArgumentError):
        OkfastRetriever.model_validate({"catalog": CATALOG, "k": 0})
    with pytest.raises(InvalidArgumentTypeError):
        OkfastRetriever.model_validate([("catalog", CATALOG)])
    made = OkfastRetriever.model_validate({"catalog": str(CATALOG), "k": 2})
    assert keys(made.invoke(QUESTION)) == keys(
        OkfastRetriever(catalog=CATALOG, k=2).invoke(QUESTION)
    )
    assert OkfastRetriever.model_validate(made) is made


def test_options_are_fixed_once_made() -> None:
    """An option changed after the resolver was opened from them would be
    unused (catalog) or unchecked (k = 0 returned nothing); it is refused."""
    r = OkfastRetriever(catalog=CATALOG, k=2)
    for name, value in (("k", 0), ("catalog", CATALOG), ("strategy", "merged")):
        with pytest.raises(InvalidArgumentError, match="fixed when the retriever is made"):
            setattr(r, name, value)
    assert r.k == 2 and len(r.invoke(QUESTION)) == 2
    r.name = "mine"  # LangChain's own fields stay LangChain's
    assert r.name == "mine"


def test_a_copy_with_other_options_is_made_as_the_constructor_makes_one(tmp_path: Path) -> None:
    """pydantic's model_copy(update=...) set the values unchecked and kept the
    resolver and memory store opened from the old options: k=0 returned
    nothing, another catalog or a scope was silently not used
    (docs/integrations.md)."""
    r = OkfastRetriever(catalog=CATALOG, k=2)
    with pytest.raises(InvalidArgumentError, match="k must be"):
        r.model_copy(update={"k": 0})
    with pytest.raises(InvalidArgumentError, match="unknown strategy"):
        r.model_copy(update={"strategy": "sideways"})
    with pytest.raises(InvalidArgumentError, match="unknown option"):
        r.model_copy(update={"limit": 3})
    three = r.model_copy(update={"k": 3})
    assert keys(three.invoke(QUESTION)) == want(Resolver(Catalog.load(CATALOG)), 3)
    # pydantic's deprecated copy takes the same path; a non-mapping is refused.
    with pytest.warns(DeprecationWarning), pytest.raises(InvalidArgumentError, match="k must be"):
        r.copy(update={"k": 0})
    with pytest.warns(DeprecationWarning):
        assert keys(r.copy(update={"k": 3}).invoke(QUESTION)) == keys(three.invoke(QUESTION))
    with pytest.raises(InvalidArgumentTypeError, match="update must be a mapping"):
        r.model_copy(update=5)  # type: ignore[arg-type]
    other = copy_examples(tmp_path)
    spec = json.loads(other.read_text())
    spec["sources"] = [s for s in spec["sources"] if s["id"] != "bakery"]
    other.write_text(json.dumps(spec))
    moved = r.model_copy(update={"catalog": other})
    assert moved.invoke(QUESTION) and all(
        d.metadata["source_id"] != "bakery" for d in moved.invoke(QUESTION)
    )
    alice = Scope("acme", "alice")
    assert capture(
        FileMemoryStore.from_catalog(Catalog.load(other)), alice, "starter", "ok"
    ).written
    scoped = moved.model_copy(update={"scope": alice})
    assert [d.metadata["surface"] for d in scoped.invoke(QUESTION)][-1] == "memory"
    # LangChain's own fields are copied as pydantic copies them.
    named = r.model_copy(update={"name": "mine"})
    assert named.name == "mine" and keys(named.invoke(QUESTION)) == keys(r.invoke(QUESTION))


def test_retrievers_of_one_unchanged_catalog_share_its_resolver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LangChain's configurable_fields makes a retriever per call from the
    first one's options: they share the resolver opened for it rather than
    load the catalog on every call (docs/integrations.md), and a catalog file
    changed since, other settings or another strategy open their own."""
    import okfast.integrations.langchain as lc
    from langchain_core.runnables import ConfigurableField

    opened: list[object] = []
    real = lc.open_resolver

    def counting(*args: Any, **kwargs: Any) -> Any:
        opened.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(lc, "open_resolver", counting)
    catalog = copy_examples(tmp_path)
    first = OkfastRetriever(catalog=catalog, k=3)
    per_call = first.configurable_fields(k=ConfigurableField(id="k"))
    for k in (1, 2, 1):
        docs = per_call.invoke(QUESTION, config={"configurable": {"k": k}})
        assert keys(docs) == keys(first.invoke(QUESTION))[:k]
    assert len(opened) == 1
    OkfastRetriever(catalog=catalog, k=1, strategy="merged")
    assert len(opened) == 2
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"version": 1, "scorer": "bm25f"}))
    OkfastRetriever(catalog=catalog, settings=settings)
    assert len(opened) == 3
    spec = json.loads(catalog.read_text())
    spec["sources"] = [s for s in spec["sources"] if s["id"] != "bakery"]
    catalog.write_text(json.dumps(spec, indent=2))
    changed = OkfastRetriever(catalog=catalog, k=3)
    assert len(opened) == 4
    assert all(d.metadata["source_id"] != "bakery" for d in changed.invoke(QUESTION))
    # A Catalog object is shared as the same object, not by its file, while
    # a retriever holding its resolver is alive.
    loaded = Catalog.load(catalog)
    alive = OkfastRetriever(catalog=loaded)
    OkfastRetriever(catalog=loaded, k=2)
    assert len(opened) == 5
    del alive
    gc.collect()
    OkfastRetriever(catalog=loaded, k=2)
    assert len(opened) == 6


def test_a_catalog_rewritten_within_its_time_stamp_opens_its_own_resolver(
    tmp_path: Path,
) -> None:
    """A catalog file rewritten with as many bytes within one tick of the
    file system's clock (here its time set back, as such a write leaves it)
    keeps its size and time: a retriever made from it then reads the new
    catalog, not the resolver of the one before (docs/integrations.md)."""
    import os

    catalog = copy_examples(tmp_path)
    first = OkfastRetriever(catalog=catalog, k=6)
    assert any(d.metadata["source_id"] == "bakery" for d in first.invoke(QUESTION))
    before = catalog.stat()
    text = catalog.read_text()
    catalog.write_text(text.replace('"bakery"', '"bakerx"'))
    os.utime(catalog, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert catalog.stat().st_size == before.st_size
    second = OkfastRetriever(catalog=catalog, k=6)
    sources = {d.metadata["source_id"] for d in second.invoke(QUESTION)}
    assert "bakerx" in sources and "bakery" not in sources


def test_settings_the_catalog_names_rewritten_open_a_new_resolver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`okfast tune --apply` rewrites the settings file the catalog names
    while a retriever is alive: a retriever made after it ranks by the new
    settings, not by the live one's resolver; one made under another cache
    directory opens its own (docs/integrations.md)."""
    catalog, named = copy_examples_naming_settings(
        tmp_path, {"version": 1, "scorer": "weighted_count"}
    )
    first = OkfastRetriever(catalog=catalog, k=4)
    assert OkfastRetriever(catalog=catalog, k=2)._resolver is first._resolver
    named.write_text(json.dumps({"version": 1, "scorer": "bm25f"}))
    second = OkfastRetriever(catalog=catalog, k=4)
    assert second._resolver is not first._resolver
    assert second._resolver.settings.scorer is Scorer.BM25F
    bm25f = Resolver(Catalog.load(catalog))
    assert keys(second.invoke(QUESTION)) == want(bm25f, 4)
    assert keys(second.invoke(QUESTION)) != keys(first.invoke(QUESTION))
    assert OkfastRetriever(catalog=catalog, k=1)._resolver is second._resolver
    monkeypatch.setenv("OKFAST_CACHE_DIR", str(tmp_path / "elsewhere"))
    assert OkfastRetriever(catalog=catalog, k=1)._resolver is not second._resolver


def test_a_deep_copy_shares_the_resolver_and_copies_the_rest() -> None:
    """copy.deepcopy and model_copy(deep=True) failed on the resolver's
    lock: a deep copy now shares the resolver, as a connection is shared,
    and copies LangChain's own values deeply (docs/integrations.md)."""
    r = OkfastRetriever(catalog=CATALOG, k=2, tags=["a"], metadata={"x": [1]})
    for c in (copy.deepcopy(r), r.model_copy(deep=True)):
        assert c._resolver is r._resolver
        assert (c.k, c.tags, c.metadata) == (2, ["a"], {"x": [1]})
        assert c.tags is not r.tags and c.metadata["x"] is not r.metadata["x"]
        assert keys(c.invoke(QUESTION)) == keys(r.invoke(QUESTION))
        with pytest.raises(InvalidArgumentError, match="fixed"):
            c.k = 3


def test_model_construct_makes_the_retriever_as_its_constructor_does() -> None:
    """pydantic's model_construct skipped the constructor: the retriever had
    no resolver (an AttributeError at the first query) and no check ran."""
    made = OkfastRetriever.model_construct(catalog=CATALOG, k=2)
    assert keys(made.invoke(QUESTION)) == want(Resolver(Catalog.load(CATALOG)), 2)
    with pytest.raises(InvalidArgumentError, match="k must be"):
        OkfastRetriever.model_construct(catalog=CATALOG, k=0)


def test_bad_k_and_query_are_value_errors() -> None:
    with pytest.raises(ValueError):
        OkfastRetriever(catalog=CATALOG, k=0)
    r = OkfastRetriever(catalog=CATALOG)
    for bad in (0, -1, True, "3"):
        with pytest.raises(InvalidArgumentError, match="k must be"):
            r.invoke(QUESTION, k=bad)
    with pytest.raises(ValueError, match="non-blank"):
        r.invoke("   ")


def test_scope_adds_that_scopes_memory_after_the_knowledge(tmp_path: Path) -> None:
    catalog = copy_examples(tmp_path)
    store = FileMemoryStore.from_catalog(Catalog.load(catalog))
    assert capture(
        store, Scope("acme", "alice"), "my sourdough starter is called Bubbles", "ok"
    ).written
    alice = OkfastRetriever(catalog=catalog, k=3, scope=Scope("acme", "alice")).invoke(QUESTION)
    assert [d.metadata["surface"] for d in alice] == ["knowledge"] * 3 + ["memory"]
    assert "Bubbles" in alice[-1].page_content
    assert alice[-1].metadata["source_id"] == "memory:user"
    # Another user, or no scope: the same knowledge, none of alice's memory.
    for scope in (Scope("acme", "bob"), None):
        docs = OkfastRetriever(catalog=catalog, k=3, scope=scope).invoke(QUESTION)
        assert keys(docs) == keys(alice[:3])


@pytest.mark.parametrize("scorer", ["bm25f", "fusion"])
async def test_scorer_and_settings_reach_the_resolver(scorer: str, tmp_path: Path) -> None:
    """docs/spec.md §13: ``scorer`` goes to every query, ``settings`` to the
    resolver; either way the documents are the resolver's passages."""
    resolver = Resolver(Catalog.load(CATALOG))
    passages = resolver.search(Query(QUESTION, limit=5, scorer=scorer, strategy="merged")).passages
    want = [(f"{p.source_id}:{p.concept_id}", p.score) for p in passages]
    assert len(want) == 5 and all(isinstance(s, float) for _, s in want)
    r = OkfastRetriever(catalog=CATALOG, k=5, scorer=scorer, strategy="merged")
    assert keys(r.invoke(QUESTION)) == want
    settings = tmp_path / "s.json"
    settings.write_text(f'{{"version": 1, "scorer": "{scorer}", "strategy": "merged"}}')
    assert (
        keys(await OkfastRetriever(catalog=CATALOG, k=5, settings=settings).ainvoke(QUESTION))
        == want
    )
    with pytest.raises(ValueError, match="settings"):
        OkfastRetriever(resolver=resolver, settings=settings)


def test_a_source_that_went_is_logged_not_silent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    catalog = copy_examples(tmp_path)
    r = OkfastRetriever(catalog=catalog, k=4)
    assert r.invoke(QUESTION)
    shutil.rmtree(catalog.parent / "bakery-ops")
    with caplog.at_level("WARNING", logger="okfast"):
        docs = r.invoke(QUESTION)
    assert all(d.metadata["source_id"] != "bakery" for d in docs)
    assert any(
        "[SourceUnavailable]" in rec.getMessage() and "bakery" in rec.getMessage()
        for rec in caplog.records
    )


@pytest.mark.parametrize(
    "bad",
    [{"settings": 5}, {"catalog": 5}, {"catalog": {"version": 1}}, {"scope": "acme"}],
    ids=["settings", "catalog-number", "catalog-dict", "scope-text"],
)
def test_an_option_of_the_wrong_type_is_okfasts_type_error(bad: dict[str, Any]) -> None:
    """docs/integrations.md: okfast's own error, as the LlamaIndex retriever
    raises, never pydantic's ValidationError (not an OkfastError)."""
    with pytest.raises(InvalidArgumentTypeError):
        OkfastRetriever(**({"catalog": CATALOG} | bad))


def test_an_unknown_option_is_refused_not_ignored() -> None:
    """A misspelt option (``scorrer``) or another retriever's (``limit``)
    would otherwise be dropped and the search run without it."""
    for bad in ({"scorrer": "bm25f"}, {"limit": 2}):
        with pytest.raises(InvalidArgumentError, match="unknown option"):
            OkfastRetriever(catalog=CATALOG, **bad)
    # LangChain's own options stay accepted.
    r = OkfastRetriever(catalog=CATALOG, k=2, name="kb", tags=["okfast"], metadata={"a": 1})
    assert (r.name, r.tags, len(r.invoke(QUESTION))) == ("kb", ["okfast"], 2)


def test_an_unknown_keyword_on_a_call_is_okfasts_type_error() -> None:
    """``invoke`` and ``ainvoke`` pass their keywords on to the retriever: one
    it does not take (a misspelt ``kk``) is okfast's error, which is still
    the TypeError Python raises for it; ``k`` stays accepted."""
    r = OkfastRetriever(catalog=CATALOG, k=3)
    for call in (lambda: r.invoke(QUESTION, kk=1), lambda: asyncio.run(r.ainvoke(QUESTION, kk=1))):
        with pytest.raises(InvalidArgumentTypeError, match="'kk'") as e:
            call()
        assert isinstance(e.value, TypeError)
    assert len(r.invoke(QUESTION, k=1)) == 1


def test_memory_is_filtered_by_the_tag_and_its_errors_are_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With a scope, ``tag`` applies to the memory documents as to the
    knowledge (docs/spec.md §3.6, §6.3), and a memory file skipped is logged
    as a source's error is."""
    catalog = copy_examples(tmp_path)
    store = FileMemoryStore.from_catalog(Catalog.load(catalog))
    alice = Scope("acme", "alice")
    assert capture(store, alice, "my sourdough starter is called Bubbles", "ok").written
    untagged = OkfastRetriever(catalog=catalog, k=3, scope=alice).invoke(QUESTION)
    assert [d.metadata["surface"] for d in untagged][-1] == "memory"
    tagged = OkfastRetriever(catalog=catalog, k=3, scope=alice, tag="sourdough").invoke(QUESTION)
    assert tagged and all("sourdough" in d.metadata["tags"] for d in tagged)
    assert all(d.metadata["surface"] == "knowledge" for d in tagged)
    directory = Path(store.roots[Tier.USER]) / memory_path(Tier.USER, alice)
    (directory / "broken.md").write_bytes(b"---\ntype: Note\ntitle: \xff\n---\nstarter\n")
    with caplog.at_level("WARNING", logger="okfast"):
        OkfastRetriever(catalog=catalog, k=3, scope=alice).invoke(QUESTION)
    assert any(
        "[InvalidUtf8]" in rec.getMessage() and "memory:user" in rec.getMessage()
        for rec in caplog.records
    )


def test_options_read_from_json_are_checked_as_the_constructors_are() -> None:
    """docs/integrations.md: okfast's own error, never wrapped in pydantic's
    ValidationError, and the resolver opened (pydantic's JSON path skipped
    __init__)."""
    spec = {"catalog": str(CATALOG), "k": 2}
    made = OkfastRetriever.model_validate_json(json.dumps(spec))
    assert keys(made.invoke(QUESTION)) == keys(OkfastRetriever(**spec).invoke(QUESTION))
    with pytest.raises(InvalidArgumentError, match="k must be"):
        OkfastRetriever.model_validate_json(json.dumps({**spec, "k": 0}))
    with pytest.raises(InvalidArgumentError, match="model_validate_json"):
        OkfastRetriever.model_validate_json("{not json")
    with pytest.raises(InvalidArgumentTypeError, match="takes a mapping of options"):
        OkfastRetriever.model_validate_json("[1]")


def test_a_batch_is_a_sequence_of_queries() -> None:
    """docs/spec.md §5.2: Runnable.batch searched a string a letter at a time
    and failed deep in LangChain on a generator; now refused as every okfast
    batch refuses them, and a list is what one-by-one calls give."""
    import asyncio

    r = OkfastRetriever(catalog=CATALOG, k=2)
    with pytest.raises(InvalidArgumentError, match="inputs must be a sequence of queries, not"):
        r.batch(QUESTION)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentTypeError, match="inputs must be a sequence of queries"):
        r.batch(q for q in [QUESTION])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="inputs must be a sequence of queries, not"):
        asyncio.run(r.abatch(QUESTION))  # type: ignore[arg-type]
    got = [keys(docs) for docs in r.batch([QUESTION, "oven"])]
    assert got == [keys(r.invoke(QUESTION)), keys(r.invoke("oven"))]
    assert [keys(d) for d in asyncio.run(r.abatch([QUESTION]))] == [keys(r.invoke(QUESTION))]
