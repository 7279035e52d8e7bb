"""The MCP server through the SDK's own in-memory client (``mcp.client.Client(server)``):
its tools, their results against the library's, bad arguments, memory scopes,
resources, and a server that outlives a vanished bundle or a damaged cache."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import okfast
import pytest
from integration_extras import copy_examples, copy_examples_naming_settings, require
from okfast import Catalog, ContextAssembler, FileMemoryStore, Query, Resolver, Scope, Strategy
from okfast.integrations.records import PassageRecord

mcp_client = require("mcp.client", "mcp")
mcp_exceptions = require("mcp.shared.exceptions", "mcp")
okfast_mcp = require("okfast.integrations.mcp", "mcp")
Client = mcp_client.Client
MCPError = mcp_exceptions.MCPError

KNOWLEDGE_TOOLS = ["resolve", "get_concept", "list_sources", "assemble_context"]
ALICE = Scope("acme", "alice")


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    return copy_examples(tmp_path)


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    # The text content is the same JSON, for clients that read only text.
    assert json.loads(result.content[0].text) == result.structured_content
    return dict(result.structured_content)


def error_text(result: Any) -> str:
    assert result.is_error
    text = " ".join(c.text for c in result.content)
    assert "Traceback" not in text
    return str(text)


async def test_tools_are_typed_described_and_annotated(catalog: Path) -> None:
    async with Client(okfast_mcp.build_server(catalog)) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
    assert list(tools) == KNOWLEDGE_TOOLS
    for t in tools.values():
        assert t.annotations.read_only_hint is True
        assert t.annotations.open_world_hint is False
        assert len(t.description) > 100
        assert t.output_schema["type"] == "object"
    resolve = tools["resolve"].input_schema
    assert resolve["required"] == ["query"]
    assert resolve["properties"]["limit"]["default"] == 10
    assert resolve["$defs"]["Strategy"]["enum"] == [s.value for s in Strategy]
    assert set(resolve["properties"]) == {"query", "limit", "strategy", "tag", "explain", "scorer"}
    assert resolve["$defs"]["Scorer"]["enum"] == ["weighted_count", "bm25f", "fusion"]
    assert set(tools["resolve"].output_schema["required"]) == {
        "strategy",
        "passages",
        "exclusions",
        "exclusions_total",
        "diagnostics",
        "digest",
    }
    assert tools["get_concept"].input_schema["required"] == ["source_id", "concept_id"]
    assert set(tools["assemble_context"].input_schema["properties"]) == {"query", "token_budget"}


async def test_output_schemas_name_every_field_without_refs(catalog: Path) -> None:
    async with Client(okfast_mcp.build_server(catalog, scope=ALICE, capture=True)) as c:
        tools = {t.name: t.output_schema for t in (await c.list_tools()).tools}
    passage = tools["resolve"]["properties"]["passages"]["items"]
    assert passage["required"] == list(PassageRecord.__annotations__)
    assert set(passage["properties"]) == set(PassageRecord.__annotations__)
    assert "score (integer or number)" in passage["description"]
    assert "title (string or null)" in passage["description"]
    assert tools["memory_read"]["properties"]["passages"]["items"] == passage
    assert tools["resolve"]["properties"]["exclusions_total"] == {"type": "integer"}
    assert tools["get_concept"]["properties"]["title"] == {"type": ["string", "null"]}
    assert tools["get_concept"]["properties"]["tags"] == {
        "type": "array",
        "items": {"type": "string"},
    }
    for schema in tools.values():
        # Clients check every result against it: nothing to look up or to try twice.
        assert "$ref" not in json.dumps(schema) and "anyOf" not in json.dumps(schema)


async def test_memory_tools_only_with_a_scope_and_capture_only_when_asked(catalog: Path) -> None:
    async with Client(okfast_mcp.build_server(catalog, scope=ALICE)) as c:
        names = [t.name for t in (await c.list_tools()).tools]
    assert names == [*KNOWLEDGE_TOOLS, "memory_read"]
    async with Client(okfast_mcp.build_server(catalog, scope=ALICE, capture=True)) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
    assert list(tools) == [*KNOWLEDGE_TOOLS, "memory_read", "memory_capture"]
    assert tools["memory_capture"].annotations.read_only_hint is False
    assert tools["memory_capture"].annotations.destructive_hint is False
    assert tools["memory_read"].annotations.read_only_hint is True
    # No tool takes a scope: it is the server's, fixed at start.
    for t in tools.values():
        assert not {"scope", "tenant", "user", "session"} & set(t.input_schema["properties"])


@pytest.mark.parametrize("strategy", [None, *Strategy])
async def test_resolve_returns_the_resolvers_passages_in_its_order(
    catalog: Path, strategy: Strategy | None
) -> None:
    args: dict[str, Any] = {"query": "sourdough starter flour", "limit": 7}
    if strategy is not None:
        args["strategy"] = strategy.value
    async with Client(okfast_mcp.build_server(catalog)) as c:
        got = structured(await c.call_tool("resolve", args))
    want = Resolver(Catalog.load(catalog)).search(
        Query("sourdough starter flour", limit=7, strategy=strategy)
    )
    assert len(want.passages) == 7
    assert [(p["source_id"], p["concept_id"], p["score"]) for p in got["passages"]] == [
        (p.source_id, p.concept_id, p.score) for p in want.passages
    ]
    assert [p["fused_score"] for p in got["passages"]] == [p.fused_score for p in want.passages]
    assert got["digest"] == want.digest
    assert got["strategy"] == (strategy or Strategy.GROUPED).value
    assert [(d["code"], d["source_id"]) for d in got["diagnostics"]] == [
        (d.code, d.source_id) for d in want.diagnostics
    ]
    first, p0 = got["passages"][0], want.passages[0]
    assert first["title"] == p0.title and first["excerpt"] == p0.excerpt
    assert first["tags"] == list(p0.tags) and first["authority"] == p0.authority
    assert set(first) >= {
        "source_id", "concept_id", "score", "title", "excerpt", "path", "type", "tags",
        "trust_tier", "status", "authority", "is_stale",
    }  # fmt: skip


async def test_resolve_lists_limit_exclusions_only_with_explain(catalog: Path) -> None:
    async with Client(okfast_mcp.build_server(catalog)) as c:
        plain = structured(await c.call_tool("resolve", {"query": "sourdough", "limit": 1}))
        explained = structured(
            await c.call_tool("resolve", {"query": "sourdough", "limit": 1, "explain": True})
        )
    want = Resolver(Catalog.load(catalog)).search(Query("sourdough", limit=1))
    beyond = [e for e in want.exclusions if e.reason == "not-relevant"]
    assert beyond, "the example needs more matches than the limit"
    assert plain["exclusions_total"] == explained["exclusions_total"] == len(want.exclusions)
    assert all(e["reason"] != "not-relevant" for e in plain["exclusions"])
    assert [(e["source_id"], e["concept_id"], e["reason"]) for e in explained["exclusions"]] == [
        (e.source_id, e.concept_id, e.reason) for e in want.exclusions
    ]
    assert plain["passages"][0]["explanation"] is None
    x = explained["passages"][0]["explanation"]
    assert x["rank"] == 1 and x["strategy"] == "grouped"
    assert [m["term"] for m in x["matches"]] == ["sourdough"]
    # The digest does not depend on explain (docs/spec.md §5.9).
    assert plain["digest"] == explained["digest"]


async def test_a_bm25f_explanation_carries_each_tokens_part_of_the_score(catalog: Path) -> None:
    """docs/spec.md §12.5: the server returns the parts the CLI's JSON does,
    only the tokens that add to the score, summing to it in query order."""
    args = {"query": "sourdough zebra starter", "explain": True, "scorer": "bm25f"}
    async with Client(okfast_mcp.build_server(catalog)) as c:
        got = structured(await c.call_tool("resolve", args))
    want = Resolver(Catalog.load(catalog)).search(
        Query("sourdough zebra starter", explain=True, scorer="bm25f")
    )
    assert len(got["passages"]) == len(want.passages) > 0
    for record, p in zip(got["passages"], want.passages, strict=True):
        x = record["explanation"]
        assert p.explanation is not None and x["matches"] == []
        assert [t["token"] for t in x["bm25f"]] == [t.token for t in p.explanation.bm25f]
        assert x["bm25f"] and "ZEBRA" not in [t["token"] for t in x["bm25f"]]
        total = 0.0
        for t, part in zip(x["bm25f"], p.explanation.bm25f, strict=True):
            assert (t["idf"], t["weighted_tf"], t["score"]) == (
                part.idf,
                part.weighted_tf,
                part.score,
            )
            assert [f["field"] for f in t["fields"]] == ["title", "tags", "description", "body"]
            assert [f["tf"] for f in t["fields"]] == [f.tf for f in part.fields]
            total += t["score"]
        assert total == record["score"]


async def test_get_concept_returns_every_field_body_and_frontmatter(catalog: Path) -> None:
    async with Client(okfast_mcp.build_server(catalog)) as c:
        got = structured(
            await c.call_tool(
                "get_concept", {"source_id": "glossary", "concept_id": "definitions/sku"}
            )
        )
    want = okfast.Bundle.load(catalog.parent / "data-glossary").concept("definitions/sku")
    assert got["source_id"] == "glossary" and got["concept_id"] == "definitions/sku"
    assert got["body"] == want.body and got["body"].startswith("# SKU")
    assert got["frontmatter"] == want.frontmatter
    assert got["title"] == want.title and got["tags"] == list(want.tags)
    assert got["stale_after"] == want.stale_after.isoformat()
    # The source's default authority applies, as in resolve's passages.
    assert want.authority is None and got["authority"] == "canonical"
    assert set(got) >= {
        "type", "description", "resource", "status", "status_known", "is_stale", "generated",
        "verified", "trust_tier", "supersedes", "superseded_by", "conflicts_with", "path",
    }  # fmt: skip


async def test_an_empty_authority_is_the_effective_one_everywhere(catalog: Path) -> None:
    """docs/spec.md §5.2, §7: written as '', the authority is '' (unknown, as
    written), not the source's default: get_concept gave 'canonical' where
    resolve's passage gave ''."""
    page = "---\ntype: Term\ntitle: Quuxes\nauthority: ''\n---\nquux quux\n"
    (catalog.parent / "data-glossary" / "quux.md").write_text(page)
    async with Client(okfast_mcp.build_server(catalog)) as c:
        got = structured(
            await c.call_tool("get_concept", {"source_id": "glossary", "concept_id": "quux"})
        )
        found = structured(await c.call_tool("resolve", {"query": "quux"}))
    passage = Resolver(Catalog.load(catalog)).search("quux").passages[0]
    assert (passage.source_id, passage.authority) == ("glossary", "")
    assert got["authority"] == found["passages"][0]["authority"] == ""


async def test_list_sources(catalog: Path) -> None:
    async with Client(okfast_mcp.build_server(catalog)) as c:
        got = structured(await c.call_tool("list_sources", {}))["sources"]
    assert [(s["id"], s["role"], s["priority"]) for s in got] == [
        ("glossary", "knowledge", 10),
        ("runbooks", "knowledge", 5),
        ("bakery", "knowledge", 1),
        ("user-memory", "memory", 0),
    ]
    root = catalog.parent
    for s, d in zip(got, ["data-glossary", "platform-runbooks", "bakery-ops"], strict=False):
        bundle = okfast.Bundle.load(root / d)
        assert s["concept_count"] == len(bundle) and s["available"] is True
        assert [x["code"] for x in s["diagnostics"]] == [x.code for x in bundle.diagnostics]
        assert all(x["source_id"] == s["id"] for x in s["diagnostics"])
    # Memory belongs to many scopes: no count is given for it.
    assert got[3]["tier"] == "user" and got[3]["concept_count"] is None


async def test_assemble_context_is_the_assemblers_knowledge(catalog: Path) -> None:
    async with Client(okfast_mcp.build_server(catalog)) as c:
        got = structured(
            await c.call_tool("assemble_context", {"query": "sourdough", "token_budget": 100})
        )
    want = ContextAssembler(
        Resolver(Catalog.load(catalog)), FileMemoryStore({}), token_budget=100
    ).assemble(Scope.local(), "sourdough")
    assert got["text"] == want.text and got["tokens"] == want.tokens <= 100
    assert [
        (b["surface"], b["source_id"], b["concept_id"], b["truncated"]) for b in got["blocks"]
    ] == [(b.surface, b.source_id, b.concept_id, b.truncated) for b in want.blocks]
    assert got["blocks"] and all(b["surface"] == "knowledge" for b in got["blocks"])
    # What the budget left out is named, so an agent can ask for it (§6.5).
    omitted = [(o["surface"], o["source_id"], o["concept_id"]) for o in got["omitted"]]
    assert want.omitted and omitted == list(want.omitted)


BAD_CALLS = [
    ("resolve", {}, "query"),
    ("resolve", {"query": "   "}, "non-blank"),
    ("resolve", {"query": "x", "limit": 0}, "greater than or equal to 1"),
    ("resolve", {"query": "x", "limit": "ten"}, "valid integer"),
    ("resolve", {"query": "x", "strategy": "best"}, "'grouped', 'merged'"),
    ("resolve", {"query": "x", "explain": "very"}, "valid boolean"),
    ("get_concept", {"source_id": "nope", "concept_id": "a"}, "no knowledge source 'nope'"),
    ("get_concept", {"source_id": "bakery", "concept_id": "nope"}, "no concept 'nope'"),
    ("get_concept", {"source_id": "user-memory", "concept_id": "a"}, "no knowledge source"),
    ("get_concept", {"source_id": "bakery"}, "concept_id"),
    ("assemble_context", {"query": "x", "token_budget": -1}, "greater than or equal to 0"),
    # The schema's types, strictly: not what a lax reading makes of them.
    ("assemble_context", {"query": "x", "token_budget": True}, "valid integer"),
    ("resolve", {"query": "x", "limit": "3"}, "valid integer"),
    ("resolve", {"query": "x", "explain": "yes"}, "valid boolean"),
    ("resolve", {"query": "x", "explain": 1}, "valid boolean"),
    ("memory_read", {"query": "x"}, "Unknown tool"),
    ("drop_tables", {}, "Unknown tool"),
]


@pytest.mark.parametrize("threads", [True, False])
async def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(
    catalog: Path, threads: bool
) -> None:
    async with Client(okfast_mcp.build_server(catalog, threads=threads)) as c:
        for tool, args, expected in BAD_CALLS:
            assert expected in error_text(await c.call_tool(tool, args)), (tool, args)
        assert structured(await c.call_tool("resolve", {"query": "sourdough"}))["passages"]


@pytest.mark.parametrize("threads", [True, False])
async def test_an_unexpected_failure_is_a_generic_tool_error(
    catalog: Path, monkeypatch: pytest.MonkeyPatch, threads: bool
) -> None:
    server = okfast_mcp.build_server(catalog, threads=threads)

    def broken(self: Resolver, query: Any) -> Any:
        raise RuntimeError("secret internal detail")

    async with Client(server) as c:
        with monkeypatch.context() as m:
            m.setattr(Resolver, "search", broken)
            text = error_text(await c.call_tool("resolve", {"query": "sourdough"}))
        assert text == "Error executing tool resolve" and "secret" not in text
        assert structured(await c.call_tool("resolve", {"query": "sourdough"}))["passages"]


async def test_concepts_are_resources_of_knowledge_sources_only(catalog: Path) -> None:
    store = FileMemoryStore.from_catalog(Catalog.load(catalog))
    assert okfast.capture(store, ALICE, "my dog is Rex", "noted").written
    async with Client(okfast_mcp.build_server(catalog, scope=ALICE)) as c:
        templates = (await c.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["okf://{source_id}/{+concept_id}"]
        got = (await c.read_resource("okf://bakery/recipes/house-sourdough")).contents[0]
        want = okfast.Bundle.load(catalog.parent / "bakery-ops").concept("recipes/house-sourdough")
        assert got.text == want.body and got.mime_type == "text/markdown"
        for uri in ("okf://bakery/recipes/nope", "okf://nope/a", "okf://user-memory/a"):
            with pytest.raises(MCPError, match="no (concept|knowledge source)"):
                await c.read_resource(uri)
        # Memory is reached only through memory_read, even by its concept id.
        listing = store.enumerate(ALICE)
        assert len(listing) == 1
        with pytest.raises(MCPError):
            await c.read_resource(f"okf://user-memory/{listing[0].concept_id}")
        assert structured(await c.call_tool("resolve", {"query": "sourdough"}))["passages"]


async def test_two_scopes_never_see_each_others_memory(catalog: Path) -> None:
    alice = okfast_mcp.build_server(catalog, scope=ALICE, capture=True)
    bob = okfast_mcp.build_server(catalog, scope=Scope("acme", "bob"), capture=True)
    other_tenant = okfast_mcp.build_server(catalog, scope=Scope("globex", "alice"))
    async with Client(alice) as a, Client(bob) as b, Client(other_tenant) as g:
        wrote = structured(
            await a.call_tool(
                "memory_capture", {"user_text": "my dog is Rex", "agent_text": "Rex, noted"}
            )
        )
        assert wrote["written"] and wrote["scope"] == "acme/alice" and wrote["tier"] == "user"
        mine = structured(await a.call_tool("memory_read", {"query": "Rex"}))
        assert mine["scope"] == "acme/alice"
        assert [p["concept_id"] for p in mine["passages"]] == [wrote["concept_id"]]
        assert (
            "> my dog is Rex"
            in structured(await a.call_tool("assemble_context", {"query": "Rex dog"}))["text"]
        )
        for client, scope in ((b, "acme/bob"), (g, "globex/alice")):
            # Asking for alice by argument changes nothing: the scope is the server's.
            for args in (
                {"query": "Rex"},
                {"query": "Rex", "tenant": "acme", "user": "alice"},
                {"query": "Rex", "scope": {"tenant": "acme", "user": "alice"}},
            ):
                got = structured(await client.call_tool("memory_read", args))
                assert got == {"scope": scope, "passages": [], "diagnostics": []}
            assembled = structured(await client.call_tool("assemble_context", {"query": "Rex dog"}))
            assert "Rex" not in assembled["text"]
            assert all(blk["surface"] == "knowledge" for blk in assembled["blocks"])
        # bob's capture lands in bob's memory, which alice does not see either.
        structured(
            await b.call_tool("memory_capture", {"user_text": "I am Bob", "agent_text": "hi"})
        )
        assert structured(await a.call_tool("memory_read", {"query": "Bob"}))["passages"] == []
        assert structured(await b.call_tool("memory_read", {"query": "Bob"}))["passages"]


async def test_a_server_without_scope_reads_no_memory_at_all(catalog: Path) -> None:
    store = FileMemoryStore.from_catalog(Catalog.load(catalog))
    # The local scope's memory is exactly what a scope-less store read would see.
    assert okfast.capture(store, Scope.local(), "the zqxvault code is kestrel", "ok").written
    assert store.read(Scope.local(), "zqxvault").passages
    async with Client(okfast_mcp.build_server(catalog)) as c:
        got = structured(await c.call_tool("assemble_context", {"query": "zqxvault sourdough"}))
        assert "zqxvault" not in got["text"]
        assert got["blocks"] and all(b["surface"] == "knowledge" for b in got["blocks"])
        text = error_text(await c.call_tool("memory_read", {"query": "zqxvault"}))
        assert "Unknown tool" in text


def test_build_server_refusals(catalog: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="capture needs a memory scope"):
        okfast_mcp.build_server(catalog, capture=True)
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb.json").write_text(
        json.dumps({"version": 1, "sources": [{"id": "kb", "path": "kb"}]})
    )
    with pytest.raises(ValueError, match="no enabled memory source"):
        okfast_mcp.build_server(tmp_path / "kb.json", scope=ALICE)
    with pytest.raises(ValueError, match="either catalog"):
        okfast_mcp.build_server()
    # Checked before anything is loaded, as okfast's errors (docs/spec.md §8).
    bad: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"capture": True}, okfast.InvalidArgumentError, "capture needs a memory scope"),
        ({"scope": Scope(), "capture": True}, okfast.InvalidArgumentError, "a tenant at least"),
        ({"scope": ALICE, "capture": "no"}, okfast.InvalidArgumentTypeError, "capture must be"),
        ({"threads": "no"}, okfast.InvalidArgumentTypeError, "threads must be True or False"),
        ({"scope": "acme"}, okfast.InvalidArgumentTypeError, "scope must be a Scope"),
        ({"strategy": "best"}, okfast.InvalidArgumentError, "unknown strategy 'best'"),
        ({"settings": 5}, okfast.InvalidArgumentTypeError, "settings must be a Settings"),
        ({"name": 5}, okfast.InvalidArgumentTypeError, "name must be text"),
    ]
    for kwargs, error, words in bad:
        with pytest.raises(error, match=words):
            okfast_mcp.build_server(catalog, **kwargs)


async def test_a_ready_resolvers_server_applies_its_strategy_per_query(catalog: Path) -> None:
    """docs/integrations.md: as the retrievers do, the server's strategy wins
    over a ready resolver's default, which is left as it was."""
    resolver = Resolver(Catalog.load(catalog))
    server = okfast_mcp.build_server(resolver=resolver, strategy="merged")
    async with Client(server) as c:
        got = structured(await c.call_tool("resolve", {"query": "sourdough"}))
        assembled = structured(await c.call_tool("assemble_context", {"query": "sourdough"}))
    merged = resolver.search(Query("sourdough", strategy="merged", limit=10))
    assert got["strategy"] == "merged" and resolver.default_strategy is Strategy.GROUPED
    assert [(p["source_id"], p["concept_id"]) for p in got["passages"]] == [
        (p.source_id, p.concept_id) for p in merged.passages
    ]
    want = ContextAssembler(
        Resolver(Catalog.load(catalog), default_strategy="merged"), FileMemoryStore({})
    ).assemble(Scope.local(), "sourdough")
    assert assembled["text"] == want.text


def test_a_resolver_that_is_not_a_local_one_is_refused_when_built(catalog: Path) -> None:
    """The server reads concepts from the resolver's own snapshots
    (get_concept, list_sources, its start-up load): a resolver with only
    search -- an okfast.distributed.RayResolver, say -- was accepted and
    then failed with an AttributeError (no refresh) instead of okfast's
    type error (docs/integrations.md)."""

    loaded = Catalog.load(catalog)

    class SearchOnly:
        catalog = loaded

        def search(self, query: Query, *, exclusions: bool = True) -> Any:
            return Resolver(self.catalog).search(query, exclusions=exclusions)

    # Not a resolver at all: refused as every integration refuses it.
    with pytest.raises(okfast.InvalidArgumentTypeError, match="resolver= must be a Resolver"):
        okfast_mcp.build_server(resolver=SearchOnly())
    with pytest.raises(okfast.InvalidArgumentTypeError, match="resolver= must be"):
        okfast_mcp.build_server(resolver=str(catalog))


async def test_serves_on_when_a_bundle_vanishes_and_comes_back(catalog: Path) -> None:
    # max_staleness=0: the resolver re-checks the disk before every search, so
    # the test needs no waiting.
    resolver = Resolver(Catalog.load(catalog), max_staleness=0)
    bakery = catalog.parent / "bakery-ops"
    saved = catalog.parent.parent / "bakery-saved"
    async with Client(okfast_mcp.build_server(resolver=resolver)) as c:
        before = structured(await c.call_tool("resolve", {"query": "sourdough levain"}))
        assert {p["source_id"] for p in before["passages"]} == {"bakery"}
        shutil.move(bakery, saved)
        gone = structured(await c.call_tool("resolve", {"query": "sourdough levain"}))
        assert gone["passages"] == []
        assert "SourceUnavailable" in [d["code"] for d in gone["diagnostics"]]
        assert ("bakery", "source-unavailable") in [
            (e["source_id"], e["reason"]) for e in gone["exclusions"]
        ]
        text = error_text(
            await c.call_tool(
                "get_concept", {"source_id": "bakery", "concept_id": "recipes/house-sourdough"}
            )
        )
        assert "not a directory" in text
        sources = structured(await c.call_tool("list_sources", {}))["sources"]
        assert [s["available"] for s in sources] == [True, True, False, True]
        with pytest.raises(MCPError):
            await c.read_resource("okf://bakery/recipes/house-sourdough")
        shutil.move(saved, bakery)
        again = structured(await c.call_tool("resolve", {"query": "sourdough levain"}))
        assert again["passages"] == before["passages"]


@pytest.fixture
def damaged_cache(catalog: Path) -> Iterator[Path]:
    """The bakery bundle's cache file, written by a first load and then overwritten with junk."""
    bundle = okfast.Bundle.load(catalog.parent / "bakery-ops")
    assert bundle.cache_file is not None and bundle.cache_file.is_file()
    bundle.cache_file.write_bytes(b"\0junk" * 1000)
    yield bundle.cache_file


def damage_a_text(cache_file: Path) -> None:
    """Flip a byte of the sourdough recipe's stored body in place. The file
    keeps its length: one truncated in place under a snapshot that maps it
    faults, as any memory-mapped database does (docs/cache-format.md)."""
    at = cache_file.read_bytes().index(b"Our best seller.")
    with cache_file.open("r+b") as f:
        f.seek(at)
        f.write(b"0")


async def test_serves_on_a_damaged_cache_file(catalog: Path, damaged_cache: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        server = okfast_mcp.build_server(catalog)
    assert any(issubclass(w.category, okfast.CacheWarning) for w in caught)
    fresh = okfast.Bundle.load(catalog.parent / "bakery-ops", cache=False)
    sourdough = {"source_id": "bakery", "concept_id": "recipes/house-sourdough"}
    async with Client(server) as c:
        got = structured(await c.call_tool("resolve", {"query": "sourdough", "limit": 5}))
        assert [(p["concept_id"], p["score"]) for p in got["passages"]] == [
            (h.concept_id, h.score) for h in fresh.search("sourdough", limit=5)
        ]
        assembled = structured(await c.call_tool("assemble_context", {"query": "sourdough"}))
        # Damaged again while serving (the snapshot reads its texts from the
        # file): each tool reloads the bundles once and answers as before.
        damage_a_text(damaged_cache)
        assert (
            structured(await c.call_tool("assemble_context", {"query": "sourdough"})) == assembled
        )
        damage_a_text(damaged_cache)
        assert structured(await c.call_tool("resolve", {"query": "sourdough", "limit": 5})) == got
        damage_a_text(damaged_cache)
        body = structured(await c.call_tool("get_concept", sourdough))["body"]
        assert body == fresh.concept("recipes/house-sourdough").body
        damage_a_text(damaged_cache)
        got_resource = await c.read_resource("okf://bakery/recipes/house-sourdough")
        assert got_resource.contents[0].text == body


async def test_two_damaged_cache_files_are_each_reloaded_in_one_call(catalog: Path) -> None:
    # Each reload finds the next damaged file: the call answers as before
    # once every damaged file it reads was rebuilt (docs/integrations.md).
    server = okfast_mcp.build_server(catalog)
    args = {"query": "policy", "strategy": "merged", "limit": 6}
    async with Client(server) as c:
        got = structured(await c.call_tool("resolve", args))
        assert {p["source_id"] for p in got["passages"]} == {"glossary", "runbooks"}
        for directory, marker in (
            ("data-glossary", b"# Refund policy"),
            ("platform-runbooks", b"# Escalation policy"),
        ):
            cache_file = okfast.Bundle.load(catalog.parent / directory).cache_file
            assert cache_file is not None
            at = cache_file.read_bytes().index(marker)
            with cache_file.open("r+b") as f:
                f.seek(at + 2)
                f.write(b"0")
        assert structured(await c.call_tool("resolve", args)) == got


async def test_a_damaged_snapshot_of_a_callers_resolver_is_a_tool_error(
    catalog: Path, damaged_cache: Path
) -> None:
    # A resolver the caller owns is never replaced behind their back.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", okfast.CacheWarning)
        resolver = Resolver(Catalog.load(catalog))
        server = okfast_mcp.build_server(resolver=resolver)
    async with Client(server) as c:
        damage_a_text(damaged_cache)
        text = error_text(await c.call_tool("resolve", {"query": "sourdough"}))
        assert "cache file" in text
        # The assembly degrades instead: the unreadable passages are left out
        # and named in its diagnostics.
        got = structured(await c.call_tool("assemble_context", {"query": "sourdough"}))
        assert "bakery" not in {b["source_id"] for b in got["blocks"]}
        assert {d["code"] for d in got["diagnostics"]} & {"UnreadableFile", "SourceUnavailable"}
        assert structured(await c.call_tool("list_sources", {}))["sources"]


@pytest.mark.parametrize("scorer", ["bm25f", "fusion"])
async def test_resolve_takes_a_scorer_and_the_server_settings(
    catalog: Path, tmp_path: Path, scorer: str
) -> None:
    """docs/spec.md §13: the ``scorer`` argument, or the server's settings,
    rank as the resolver does; memory is scored as knowledge is."""
    q = "sourdough starter flour"
    want = Resolver(Catalog.load(catalog)).search(Query(q, limit=5, scorer=scorer))
    async with Client(okfast_mcp.build_server(catalog)) as c:
        got = structured(await c.call_tool("resolve", {"query": q, "limit": 5, "scorer": scorer}))
        bad = await c.call_tool("resolve", {"query": q, "scorer": "bm26"})
    assert got["digest"] == want.digest
    assert [p["score"] for p in got["passages"]] == [p.score for p in want.passages]
    assert bad.is_error
    settings = tmp_path / "s.json"
    settings.write_text(f'{{"version": 1, "scorer": "{scorer}"}}')
    async with Client(okfast_mcp.build_server(catalog, settings=settings, scope=ALICE)) as c:
        got = structured(await c.call_tool("resolve", {"query": q, "limit": 5}))
        memory = structured(await c.call_tool("memory_read", {"query": q}))
    assert got["digest"] == want.digest
    store = FileMemoryStore.from_catalog(Catalog.load(catalog))
    mine = store.read(ALICE, q, limit=10, scorer=scorer)
    assert [p["score"] for p in memory["passages"]] == [p.score for p in mine.passages]


async def test_the_settings_file_the_catalog_names_rewritten_reopens_the_catalog(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/spec.md §13.5: `okfast tune --apply` rewrites the settings file
    the catalog names while the server runs; the next call ranks by the new
    settings, a rewrite to the same settings reopens nothing, a file that
    cannot be read keeps them, and a removed file leaves the built-in
    defaults."""
    catalog, named = copy_examples_naming_settings(
        tmp_path, {"version": 1, "scorer": "weighted_count"}
    )
    q = "sourdough starter flour"
    by = {
        s: Resolver(Catalog.load(catalog)).search(Query(q, limit=5, scorer=s)).digest
        for s in ("weighted_count", "bm25f")
    }
    assert by["weighted_count"] != by["bm25f"]

    def replace_with(doc: dict[str, Any]) -> None:
        # As tune --apply writes it: a new file renamed over the old one.
        fresh = named.with_suffix(".tmp")
        fresh.write_text(json.dumps(doc))
        fresh.replace(named)

    loads: list[str] = []
    real_load = okfast.Bundle.load

    def counted(path: Any, *args: Any, **kwargs: Any) -> okfast.Bundle:
        loads.append(str(path))
        return real_load(path, *args, **kwargs)

    server = okfast_mcp.build_server(catalog, scope=ALICE)
    async with Client(server) as c:

        async def digest() -> str:
            got = structured(await c.call_tool("resolve", {"query": q, "limit": 5}))
            return str(got["digest"])

        assert await digest() == by["weighted_count"]
        replace_with({"version": 1, "scorer": "bm25f", "surplus": 1})
        with caplog.at_level("WARNING"), pytest.MonkeyPatch.context() as mp:
            mp.setattr(okfast.Bundle, "load", counted)
            assert await digest() == by["bm25f"]
        # The loaded bundles are kept: none is loaded again.
        assert loads == []
        assert "okfast-settings.json: [UnknownProperty]" in caplog.text
        # Memory is scored by the new scorer too.
        memory = structured(await c.call_tool("memory_read", {"query": q}))
        store = FileMemoryStore.from_catalog(Catalog.load(catalog))
        mine = store.read(ALICE, q, limit=10, scorer="bm25f")
        assert [p["score"] for p in memory["passages"]] == [p.score for p in mine.passages]
        caplog.clear()
        replace_with({"version": 1, "scorer": "bm25f", "surplus": 1})
        with caplog.at_level("WARNING"):
            assert await digest() == by["bm25f"]
        assert "reopening" not in caplog.text
        # Half written: kept as it was, not the defaults.
        named.write_text('{"version": 1, "scorer": "weighted')
        with caplog.at_level("WARNING"):
            assert await digest() == by["bm25f"]
        assert "kept as they were" in caplog.text
        named.unlink()
        assert await digest() == by["weighted_count"]


async def test_a_settings_file_given_that_turns_unreadable_keeps_the_settings(
    catalog: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/spec.md §13.5: a settings file the caller named, rewritten as
    something that cannot be read, leaves the server on the settings it had,
    with a warning, until it is readable again; settings given as an object
    are never read again."""
    q = "sourdough starter flour"
    bm25f = Resolver(Catalog.load(catalog)).search(Query(q, limit=5, scorer="bm25f")).digest
    weighted = Resolver(Catalog.load(catalog)).search(Query(q, limit=5)).digest
    given = tmp_path / "s.json"
    given.write_text(json.dumps({"version": 1, "scorer": "bm25f"}))
    async with Client(okfast_mcp.build_server(catalog, settings=given)) as c:

        async def digest() -> str:
            got = structured(await c.call_tool("resolve", {"query": q, "limit": 5}))
            return str(got["digest"])

        assert await digest() == bm25f
        given.write_text("{not json")
        with caplog.at_level("WARNING"):
            assert await digest() == bm25f
        assert "kept as they were" in caplog.text
        # A FIFO is not opened: reading it would wait for a writer.
        given.unlink()
        os.mkfifo(given)
        assert await digest() == bm25f
        given.unlink()
        given.write_text(json.dumps({"version": 1, "scorer": "weighted_count"}))
        assert await digest() == weighted
    obj = okfast.settings.Settings.load(given)
    given.write_text(json.dumps({"version": 1, "scorer": "bm25f"}))
    async with Client(okfast_mcp.build_server(catalog, settings=obj)) as c:
        got = structured(await c.call_tool("resolve", {"query": q, "limit": 5}))
    assert got["digest"] == weighted
