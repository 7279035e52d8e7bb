"""``RayResolver`` on a local Ray cluster (docs/spec.md §15): the context of
every search equals the local resolver's — passages, exclusions,
diagnostics, digest — under every strategy and both scorers, with a source
split over actors, after a refresh, and with a shard killed or too slow.

One cluster for the module (2 CPUs, no dashboard); skipped without Ray
unless under CI, where the ``ray`` extra must be installed."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from collections.abc import Iterator
from dataclasses import fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPORA, link_swapped_in_at_load, make_catalog, requires_corpora
from integration_extras import require
from okfast import (
    BM25FParams,
    Catalog,
    InvalidArgumentTypeError,
    OkfastError,
    Query,
    Resolver,
    Scorer,
    StalePolicy,
    Strategy,
)
from okfast.passages import Context
from okfast.settings import Settings

ray = require("ray", "ray")

from okfast.distributed import RayResolver  # noqa: E402
from okfast.distributed.shard import Unit  # noqa: E402  (after the skip)

STRATEGIES = [s.value for s in Strategy]
SCORERS = ["weighted_count", "bm25f", "fusion"]
NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    # Recent Ray enables token authentication for a local cluster; this
    # private test cluster needs none (the variable is read by ray.init).
    before = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
    if before is None:
        del os.environ["RAY_AUTH_MODE"]
    else:
        os.environ["RAY_AUTH_MODE"] = before


def view(ctx: Context) -> dict[str, Any]:
    """Everything a context says, passages built (fields and explanations)."""
    return {
        "digest": ctx.digest,
        "passages": [
            {f.name: getattr(p, f.name) for f in fields(p) if f.name != "_body"} | {"body": p.body}
            for p in ctx.passages
        ],
        "diagnostics": ctx.diagnostics,
        "exclusions": ctx.exclusions,
    }


def same(local: Resolver, remote: RayResolver, q: Query) -> Context:
    want, got = local.search(q), remote.search(q)
    assert got.digest == want.digest, q
    assert got.passages.keys() == want.passages.keys()
    assert got.diagnostics == want.diagnostics
    assert got.exclusions == want.exclusions
    return got


# -- the shared corpora: every strategy, both scorers ---------------------------------

SOURCES = [
    *({"id": s, "path": f"./gcp-samples/{s}"} for s in ("acme_retail", "ga4", "stackoverflow")),
    {"id": "react", "path": "./saschb2b/react", "priority": 2},
    {"id": "rezepte", "path": "./saschb2b/rezepte", "language": "german"},
    {"id": "databricks", "path": "./databricks", "priority": 1},
]


def corpora_catalog() -> Catalog:
    return Catalog.parse(
        json.dumps({"version": 1, "sources": SOURCES}), base_dir=CORPORA, root=CORPORA
    )


def judged_queries(n: int) -> list[str]:
    out = []
    for name in ("gcp-samples", "react", "databricks"):
        lines = (CORPORA.parent / "qrels" / f"{name}.jsonl").read_text().splitlines()
        out += [json.loads(line)["query"] for line in lines[:n]]
    return out + ["Rezept mit Kartoffeln", "the"]


@requires_corpora
def test_every_strategy_and_scorer_equal_the_local_resolver_on_the_corpora() -> None:
    cat = corpora_catalog()
    bm25f = BM25FParams(language="english", stop_words=True)
    local = Resolver(cat, default_bm25f=bm25f, clock=lambda: NOW)
    remote = RayResolver(
        cat, shards=3, split={"databricks": 2}, default_bm25f=bm25f, clock=lambda: NOW
    )
    seen = 0
    for text in judged_queries(3):
        for strategy in STRATEGIES:
            for scorer in SCORERS:
                got = same(local, remote, Query(text, strategy=strategy, scorer=scorer))
                seen += len(got.passages)
    # The knobs, on one query each way.
    text = "delta lake vacuum retention"
    for scorer in SCORERS:
        for kw in (
            {"limit": 5},
            {"min_score": {"weighted_count": 3, "bm25f": 4.5, "fusion": 0.03}[scorer]},
            {"fairness_quota": 2},
            {"pin_exact_title": True},
            {"permitted_source_ids": ["react", "databricks"]},
        ):
            for strategy in STRATEGIES:
                same(local, remote, Query(text, strategy=strategy, scorer=scorer, **kw))
        q = Query(text, strategy="reciprocal_rank", scorer=scorer, explain=True, limit=20)
        assert view(remote.search(q)) == view(local.search(q))
    assert seen > 1000  # the queries found something to compare
    q = Query(text, strategy="merged", limit=5)
    assert remote.search(q, exclusions=False).digest == local.search(q, exclusions=False).digest
    batch = [Query(t, strategy="merged", scorer="bm25f") for t in judged_queries(1)]
    got = [c.digest for c in remote.search_many(batch)]
    assert got == [c.digest for c in local.search_many(batch)] and len(set(got)) == len(got)


@requires_corpora
def test_settings_reach_the_shards_as_they_reach_one_process() -> None:
    """docs/spec.md §13: the scorer, strategy, rrf_k, BM25F parameters and a
    per-source analyzer language of a Settings apply on the shards too."""
    cat = corpora_catalog()
    st = Settings(
        scorer=Scorer.FUSION,
        strategy=Strategy.RECIPROCAL_RANK,
        rrf_k=20,
        bm25f=BM25FParams(k1=1.2, language="english"),
        languages={"react": "none"},
    )
    local = Resolver(cat, settings=st, clock=lambda: NOW)
    remote = RayResolver(cat, settings=st, shards=2, clock=lambda: NOW)
    for text in judged_queries(2):
        got = same(local, remote, Query(text, limit=10))
        assert got.passages[0].fused_score is not None


# -- governance, staleness, a split source: a catalog written here ----------------------


def concept(title: str, body: str, **front: str) -> str:
    head = "".join(f"{k}: {v}\n" for k, v in front.items())
    return f"---\ntype: note\ntitle: {title}\n{head}---\n{body}\n"


BUNDLES = {
    "a": {
        "old-cache.md": concept("Cache", "cache rules old", superseded_by="new-cache"),
        "new-cache.md": concept("Cache", "cache rules new cache"),
        "draft.md": concept("Cache draft", "cache draft", authority="draft"),
        "guess.md": concept("Cache guess", "cache guess", authority="rumour"),
        "x.md": concept("Cache x", "cache x", conflicts_with="y", authority="canonical"),
        "y.md": concept("Cache y", "cache y cache", authority="reference"),
        "stale.md": concept("Cache stale", "cache stale", stale_after="2026-01-01"),
        "broken.md": concept("Cache broken", "cache", supersedes="ghost"),
        # Declarations across the parts of the split source (ids at both ends).
        "aa-rule.md": concept("Cache rule", "cache rule", conflicts_with="x"),
        "zz-new.md": concept("Cache zz", "cache final", supersedes="draft"),
        "zz-odd.md": concept("Cache odd", "cache odd", conflicts_with="aa-ghost"),
        **{f"n{i:02d}.md": concept(f"Note {i}", "cache " * (i % 4 + 1)) for i in range(40)},
    },
    "b": {f"m{i:02d}.md": concept(f"Memo {i}", "cache memo " * (i % 3 + 1)) for i in range(30)},
}


@pytest.fixture(scope="module")
def governed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Resolver, RayResolver]:
    tmp = tmp_path_factory.mktemp("governed")
    cat = make_catalog(
        tmp,
        BUNDLES,
        [
            {"id": "a", "path": "a", "priority": 1},
            {"id": "b", "path": "b"},
            {"id": "b-again", "path": "b"},
        ],
    )
    local = Resolver(cat, clock=lambda: NOW)
    return local, RayResolver(cat, shards=2, split={"a": 2}, clock=lambda: NOW)


@pytest.mark.parametrize("scorer", SCORERS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_governance_staleness_and_a_split_source_equal_the_local_resolver(
    governed: tuple[Resolver, RayResolver], strategy: str, scorer: str
) -> None:
    local, remote = governed
    for kw in (
        {},
        {"include_historical": True},
        {"min_authority": "reference"},
        {"stale_policy": StalePolicy.strict()},
        {"stale_policy": StalePolicy.tolerate(200)},
        {"pin_exact_title": True, "limit": 7},
        {"explain": True, "fairness_quota": 2},
        {"limit": 0},  # every match excluded: NoMatches says so on both (§5.6)
        {"min_score": 1e9},
    ):
        q = Query("cache", strategy=strategy, scorer=scorer, **kw)
        got = same(local, remote, q)
        if q.explain or q.pin_exact_title:
            assert view(got) == view(local.search(q))
    reasons = {e.reason for e in remote.search(Query("cache", strategy=strategy)).exclusions}
    assert {"superseded", "conflict"} <= reasons  # governance did run on the shards' arrays
    if strategy != "grouped":
        assert "duplicate-directory" in reasons


def test_a_split_source_is_one_bundle(governed: tuple[Resolver, RayResolver]) -> None:
    local, remote = governed
    parts = {sh for sh in remote._place.values() for sh in sh}
    assert len(remote._place[next(iter(remote._place))]) == 2 and parts == {0, 1}
    q = Query("cache", strategy="reciprocal_rank", permitted_source_ids=["a"], scorer="bm25f")
    got = same(local, remote, q)
    # The reciprocal ranks run over the source's whole list, not each
    # actor's: no two passages share one, and both actors' concepts are there.
    fused = [p.fused_score for p in got.passages]
    assert len(set(fused)) == len(fused) > 10
    owners = {int(o) for e in got.passages._searched for o in e.bundle._owner}
    assert owners == {0, 1}
    # Each actor holds its part only (docs/spec.md §15.5): the parts' sizes
    # add up to the bundle, and each is about half of it.
    key = next(k for k, v in remote._place.items() if len(v) == 2)
    source_a = local.catalog.source("a")
    assert source_a is not None
    sizes = [
        part_size(remote, sh, Unit(source_a, None, k, 2, *remote._ranges[key][k]))
        for k, sh in enumerate(remote._place[key])
    ]
    assert sum(sizes) == len(local.snapshot("a")) and max(sizes) - min(sizes) <= 1
    # Governance declared across the parts: supersession, conflict, broken names.
    ctx = same(local, remote, Query("cache", permitted_source_ids=["a"]))
    why = {(e.concept_id, e.reason) for e in ctx.exclusions}
    assert {("draft", "superseded"), ("old-cache", "superseded")} <= why
    assert ("aa-rule", "conflict") in why or ("x", "conflict") in why
    broken = {d.path for d in ctx.diagnostics if d.code in ("BrokenSupersession", "BrokenConflict")}
    assert broken >= {"broken.md", "zz-odd.md"}


def part_size(remote: RayResolver, shard: int, u: Unit) -> int:
    """How many concepts a shard holds of a unit: ``N`` of its own statistics."""
    n = remote._pool.number(shard, u)
    reply = remote._pool.call({shard: ("stats", ([n], []))})[shard]
    version_and_stats = reply[0]
    assert not isinstance(version_and_stats, str), version_and_stats
    return int(version_and_stats[1].n)


def test_a_split_source_refreshes_part_by_part(tmp_path: Path) -> None:
    files = {f"n{i:02d}.md": concept(f"Note {i}", "memo " * (i % 5 + 1)) for i in range(30)}
    cat = make_catalog(tmp_path, {"a": files}, [{"id": "a", "path": "a"}])
    local = Resolver(cat, max_staleness=0, clock=lambda: NOW)
    remote = RayResolver(cat, shards=3, split={"a": 3}, max_staleness=0, clock=lambda: NOW)
    qs = [Query("memo", strategy=st, scorer=sc) for st in STRATEGIES for sc in SCORERS]
    for q in qs:
        same(local, remote, q)
    # An edit in the first part, a file added to the second, one removed from the last.
    (tmp_path / "a" / "n01.md").write_text(concept("Note 1", "memo memo memo memo memo memo"))
    (tmp_path / "a" / "n15b.md").write_text(concept("Note 15b", "memo " * 9))
    (tmp_path / "a" / "n29.md").unlink()
    for q in qs:
        got = same(local, remote, q)
        assert "n15b" in [p.concept_id for p in got.passages] and "n29" not in [
            p.concept_id for p in got.passages
        ]


# -- refresh and faults --------------------------------------------------------------


def test_a_refreshed_shard_keeps_the_catalog_statistics_exact(tmp_path: Path) -> None:
    cat = make_catalog(
        tmp_path,
        {"a": BUNDLES["b"], "c": {"one.md": concept("One", "memo cache")}},
        [{"id": "a", "path": "a"}, {"id": "c", "path": "c"}],
    )
    local = Resolver(cat, max_staleness=0, clock=lambda: NOW)
    remote = RayResolver(cat, max_staleness=0, clock=lambda: NOW)
    q = Query("memo cache", strategy="merged", scorer="bm25f")
    before = same(local, remote, q)
    (tmp_path / "c" / "two.md").write_text(concept("Two", "memo memo memo"))
    (tmp_path / "c" / "three.md").write_text(concept("Three", "cache"))
    after = same(local, remote, q)
    assert after.digest != before.digest
    assert len(after.passages) == len(before.passages) + 2
    # A source whose directory went away is left out of the sums too.
    shutil.rmtree(tmp_path / "c")
    gone = same(local, remote, q)
    assert ("SourceUnavailable", "c") in [(d.code, d.source_id) for d in gone.diagnostics]
    assert {p.source_id for p in gone.passages} == {"a"}


def test_a_passage_of_a_snapshot_replaced_twice_raises_okfasts_own_error(
    tmp_path: Path,
) -> None:
    """docs/spec.md §15.3: the error is okfast's (its message okfast's), not
    Ray's wrapper of it, whose message was the shard's remote traceback."""
    cat = make_catalog(
        tmp_path,
        {"a": {f"n{i}.md": concept(f"Note {i}", "memo v0") for i in range(3)}},
        [{"id": "a", "path": "a"}],
    )
    remote = RayResolver(cat, max_staleness=0, clock=lambda: NOW)
    ctx = remote.search("memo")
    for v in (1, 2):
        for i in range(3):
            (tmp_path / "a" / f"n{i}.md").write_text(concept(f"Note {i}", f"memo v{v} {i}"))
        remote.search("memo")
    with pytest.raises(OkfastError) as e:
        _ = ctx.passages[0].body
    assert type(e.value).__module__.startswith("okfast")
    assert str(e.value) == "source 'a': its snapshot was replaced twice since this search"


def test_a_shard_error_raised_leaves_no_other_shards_error_unread(tmp_path: Path) -> None:
    """docs/spec.md §15.3: when both shards of a split source raise, the
    caller gets one error and Ray logs no "Unhandled error" traceback for
    the other shard's, which was never read (20 such lines before)."""
    import gc
    import logging

    files = {f"n{i:02d}.md": concept(f"Note {i}", "memo v0") for i in range(40)}
    cat = make_catalog(tmp_path, {"a": files}, [{"id": "a", "path": "a"}])
    remote = RayResolver(cat, shards=2, split={"a": 2}, max_staleness=0, clock=lambda: NOW)
    ctx = remote.search("memo")
    for v in (1, 2):
        for name in files:
            (tmp_path / "a" / name).write_text(concept(name, f"memo v{v}"))
        remote.search("memo")
    logged: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: logged.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("ray").addHandler(handler)
    try:
        for k in range(len(ctx.passages)):
            with pytest.raises(OkfastError, match="replaced twice"):
                _ = ctx.passages[k].title
        gc.collect()
        time.sleep(2)  # Ray reports an unread error from a background thread
    finally:
        logging.getLogger("ray").removeHandler(handler)
    assert [m for m in logged if "Unhandled error" in m] == []


def test_an_unavailable_sources_error_comes_in_source_order(tmp_path: Path) -> None:
    # The first source reports a bad file, the second is missing: the local
    # resolver lists them in source order (docs/spec.md §5.6), and so must
    # the cluster, or the digest differs.
    cat = make_catalog(
        tmp_path,
        {
            "a": {"one.md": concept("One", "memo cache"), "bad.md": "---\ntitle: [\n---\nx\n"},
            "b": {"one.md": concept("One", "memo")},
        },
        [{"id": "a", "path": "a"}, {"id": "b", "path": "b"}],
    )
    local = Resolver(cat, max_staleness=0, clock=lambda: NOW)
    remote = RayResolver(cat, max_staleness=0, clock=lambda: NOW)
    shutil.rmtree(tmp_path / "b")
    for scorer in SCORERS:
        got = same(local, remote, Query("memo", strategy="merged", scorer=scorer))
        assert [d.source_id for d in got.diagnostics] == ["a", "b"]


def test_a_link_put_on_a_source_path_later_is_refused_as_locally(tmp_path: Path) -> None:
    # docs/spec.md §5.10: the driver checks the path for links before it asks
    # the shards, so the cluster refuses what the local resolver refuses.
    cat = make_catalog(
        tmp_path,
        {"kb/docs": {"one.md": concept("One", "memo")}, "b": {"one.md": concept("One", "memo")}},
        [{"id": "docs", "path": "kb/docs"}, {"id": "b", "path": "b"}],
    )
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    (outside / "docs").mkdir(parents=True)
    (outside / "docs" / "secret.md").write_text(concept("Secret", "memo"))
    local = Resolver(cat, max_staleness=0, clock=lambda: NOW)
    remote = RayResolver(cat, max_staleness=0, clock=lambda: NOW)
    remote.search(Query("memo", strategy="merged"))
    # Every unit a shard was sent names the root it checks from on its node.
    sent = [u for given in remote._pool._given for u in given.values()]
    assert sent and {u.root for u in sent} == {cat.resolved_root}
    (tmp_path / "kb").rename(tmp_path / "kb-was")
    (tmp_path / "kb").symlink_to(outside)
    got = same(local, remote, Query("memo", strategy="merged"))
    assert [(p.source_id, p.concept_id) for p in got.passages] == [("b", "one")]
    [d] = got.diagnostics
    assert d.code == "SourceUnavailable" and "is a symbolic link" in d.message


def _wait_dead(actor: Any) -> None:
    for _ in range(200):
        try:
            ray.get(actor.ready.remote(), timeout=5)
        except ray.exceptions.RayError:
            return
        time.sleep(0.05)
    raise AssertionError("the killed shard still answers")


def test_a_killed_shard_makes_its_sources_unavailable_then_comes_back(
    governed: tuple[Resolver, RayResolver],
) -> None:
    local, remote = governed
    q = Query("cache memo", strategy="merged", scorer="bm25f")
    want = local.search(q)
    earlier = remote.search(q)
    a, b = sorted(remote._place)  # bundle "a" on two shards, "b" on one of them
    (victim,) = set(remote._place[a]) - set(remote._place[b])
    ray.kill(remote.shards[victim], no_restart=True)
    _wait_dead(remote.shards[victim])
    hurt = remote.search(q)
    codes = [(d.code, d.source_id) for d in hurt.diagnostics]
    assert ("SourceUnavailable", "a") in codes
    assert {p.source_id for p in hurt.passages} == {"b"}
    # The other source's passages are scored without the lost one's statistics.
    alone = local.search(
        Query(
            "cache memo", strategy="merged", scorer="bm25f", permitted_source_ids=["b", "b-again"]
        )
    )
    assert hurt.passages.keys() == alone.passages.keys()
    assert remote.search(q).digest == want.digest  # the shard was replaced
    # A body the killed shard would have read says so (§15.3), not that its
    # snapshot was replaced twice.
    lost = []
    for k in range(len(earlier.passages)):
        try:
            _ = earlier.passages[k].body
        except OkfastError as e:
            lost.append(str(e))
    assert lost and set(lost) == {
        "source 'a': the shard that served this search is gone (it was restarted since), "
        "and its snapshot with it"
    }


def test_a_unit_named_after_the_start_reaches_a_replaced_shard_too(
    governed: tuple[Resolver, RayResolver],
) -> None:
    """docs/spec.md §15.2: the shards are started with their units, and a
    unit named later (here each source analysed for another language) is
    sent with the calls that need it — to a fresh actor again, when one
    replaced a failed shard."""
    local, remote = governed
    german = BM25FParams(language="german")
    q = Query("cache memo", strategy="merged", scorer="bm25f", bm25f=german, explain=True)
    assert view(remote.search(q)) == view(local.search(q))
    ray.kill(remote.shards[0], no_restart=True)
    _wait_dead(remote.shards[0])
    hurt = remote.search(q)
    assert "SourceUnavailable" in {d.code for d in hurt.diagnostics}
    for scorer in SCORERS:
        q = Query("cache memo", strategy="merged", scorer=scorer, bm25f=german, limit=9)
        assert view(remote.search(q)) == view(local.search(q))


def _holding(remote: RayResolver, shard: int) -> list[str]:
    """The directories shard ``shard`` holds a snapshot of (their keys' last names)."""
    import pickle

    reply = ray.get(remote.shards[shard].call.remote(pickle.dumps(({}, [], "holding", ()))))
    return [Path(k).name for k in pickle.loads(reply)]


def test_a_source_a_reload_removed_is_let_go_by_its_shard_and_never_reloaded(
    tmp_path: Path,
) -> None:
    """docs/spec.md §15.4, §5.10: after a ``catalog.reload()`` that removed a
    source, its shard lets go of its snapshot (its mapped cache file, its
    change watch), a replacement of that shard does not load it again, and
    a body of it from an earlier context says why it cannot be read."""
    cat = make_catalog(
        tmp_path,
        {
            "a": {"one.md": concept("One", "memo one")},
            "b": {"two.md": concept("Two", "memo two")},
            "c": {"three.md": concept("Three", "memo three")},
        },
        [{"id": "a", "path": "a"}, {"id": "b", "path": "b"}, {"id": "c", "path": "c"}],
    )
    remote = RayResolver(cat, shards=1, clock=lambda: NOW)
    earlier = remote.search("memo")
    assert {p.source_id for p in earlier.passages} == {"a", "b", "c"}
    assert _holding(remote, 0) == ["a", "b", "c"]
    sources = [{"id": "a", "path": "a"}, {"id": "c", "path": "c", "enabled": False}]
    (tmp_path / "catalog.json").write_text(json.dumps({"version": 1, "sources": sources}))
    assert cat.reload().ok
    local = Resolver(cat, clock=lambda: NOW)
    for scorer in SCORERS:
        q = Query("memo", scorer=scorer, strategy="merged")
        assert view(remote.search(q)) == view(local.search(q))
    assert _holding(remote, 0) == ["a"]
    (two,) = [p for p in earlier.passages if p.source_id == "b"]
    with pytest.raises(OkfastError) as e:
        _ = two.body
    assert str(e.value) == (
        "source 'b': no enabled source of the catalog names its directory now; "
        "its snapshot was let go"
    )
    (one,) = [p for p in earlier.passages if p.source_id == "a"]
    assert one.body == "memo one"
    ray.kill(remote.shards[0], no_restart=True)
    _wait_dead(remote.shards[0])
    remote.search("memo")  # the shard is found dead and replaced
    assert view(remote.search("memo")) == view(local.search("memo"))
    assert _holding(remote, 0) == ["a"]
    # A source the catalog names again is loaded again.
    sources[1]["enabled"] = True
    (tmp_path / "catalog.json").write_text(json.dumps({"version": 1, "sources": sources}))
    assert cat.reload().ok
    assert view(remote.search("memo")) == view(local.search("memo"))
    assert _holding(remote, 0) == ["a", "c"]


def test_a_source_a_reload_removed_during_a_search_is_let_go_after_it(
    tmp_path: Path,
) -> None:
    """docs/spec.md §15.4: a search that read the catalog just before a
    reload still searches the source the reload removed (as one process
    does), and its shard lets go of it after that search, not at the next
    reload."""
    cat = make_catalog(
        tmp_path,
        {"a": {"one.md": concept("One", "memo one")}, "b": {"two.md": concept("Two", "memo two")}},
        [{"id": "a", "path": "a"}, {"id": "b", "path": "b"}],
    )
    reload_now: list[bool] = []

    def visible(scope: Any, source: Any) -> bool:
        # Asked after the search read the catalog, before it fans out.
        if reload_now:
            reload_now.clear()
            sources = [{"id": "a", "path": "a"}]
            (tmp_path / "catalog.json").write_text(json.dumps({"version": 1, "sources": sources}))
            assert cat.reload().ok
        return True

    remote = RayResolver(cat, shards=1, clock=lambda: NOW, default_visibility=visible)
    remote.search("memo")
    assert _holding(remote, 0) == ["a", "b"]
    reload_now.append(True)
    during = remote.search("memo")
    assert {p.source_id for p in during.passages} == {"a", "b"}
    assert _holding(remote, 0) == ["a"]


def test_a_unit_a_late_shard_was_loading_is_let_go_too(tmp_path: Path) -> None:
    """docs/spec.md §15.4: a shard late because it loads a source a reload
    added goes on loading it; when a later reload removes that source, the
    shard is told to let go of it although it never answered the call that
    gave it (and no search has asked it anything since)."""
    cat = make_catalog(
        tmp_path,
        {"a": {"one.md": concept("One", "memo one")}, "b": {"two.md": concept("Two", "memo two")}},
        [{"id": "a", "path": "a"}],
    )
    remote = RayResolver(cat, shards=2, clock=lambda: NOW)
    remote.search("memo")

    def catalog(*ids: str) -> None:
        sources = [{"id": i, "path": i} for i in ids]
        (tmp_path / "catalog.json").write_text(json.dumps({"version": 1, "sources": sources}))
        assert cat.reload().ok

    catalog("a", "b")  # b goes to the next shard, 1
    remote.timeout = 1e-9  # no reply comes in time: shard 1 is late, loading b
    late = remote.search("memo")
    assert {d.code for d in late.diagnostics} == {"SourceUnavailable"}
    remote.timeout = 30.0
    deadline = time.monotonic() + 30
    while _holding(remote, 1) != ["b"]:  # the shard went on loading b
        assert time.monotonic() < deadline
        time.sleep(0.05)
    catalog("a")
    local = Resolver(cat, clock=lambda: NOW)
    assert view(remote.search("memo")) == view(local.search("memo"))  # asks shard 0 only
    assert _holding(remote, 1) == []


def test_a_shard_that_does_not_answer_in_time_never_hangs_the_search(
    governed: tuple[Resolver, RayResolver],
) -> None:
    local, remote = governed
    q = Query("cache", strategy="priority_weighted")
    # Every shard stopped (not dead): its calls are taken and never answered.
    pids = [ray.get(s.__ray_call__.remote(lambda self: os.getpid())) for s in remote.shards]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    remote.timeout = 0.5
    try:
        late = remote.search(q)
    finally:
        remote.timeout = 30.0
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    assert {e.reason for e in late.exclusions} >= {"source-unavailable"}
    assert len(late.passages) == 0
    assert any("did not answer within" in d.message for d in late.diagnostics)
    assert same(local, remote, q).digest == local.search(q).digest


def test_arguments_are_checked(governed: tuple[Resolver, RayResolver]) -> None:
    from okfast import InvalidArgumentError

    cat = governed[0].catalog
    for kw in (
        {"split": {"nope": 2}},
        {"split": {"a": 0}},
        {"split": {"a": 3}, "shards": 2},
        {"timeout": 0},
        {"timeout": float("nan")},
        {"timeout": "5"},
        {"timeout": True},
        {"default_strategy": "sideways"},
    ):
        with pytest.raises(InvalidArgumentError):
            RayResolver(cat, **kw)  # type: ignore[arg-type]
    for bad in (-1, float("nan"), "5"):
        with pytest.raises(InvalidArgumentError):
            governed[1].timeout = bad  # type: ignore[assignment]


def test_a_split_of_a_memory_source_is_refused(tmp_path: Path) -> None:
    """docs/spec.md §15.1: no shard holds memory (a resolver never searches
    it, §5.3), so such a split would be silently ignored."""
    from okfast import InvalidArgumentError

    cat = make_catalog(
        tmp_path,
        {"a": BUNDLES["b"], "mem": {}},
        [{"id": "a", "path": "a"}, {"id": "mem", "path": "mem", "role": "memory", "tier": "user"}],
    )
    with pytest.raises(InvalidArgumentError, match="memory source"):
        RayResolver(cat, shards=2, split={"mem": 2})


def test_a_query_of_the_wrong_type_is_a_type_error(
    governed: tuple[Resolver, RayResolver],
) -> None:
    """docs/spec.md §5.2 and §15.2: as Resolver.search says it."""
    from okfast import InvalidArgumentTypeError

    _, remote = governed
    for bad in (123, None, b"cache"):
        with pytest.raises(InvalidArgumentTypeError, match="a query must be a Query or a str"):
            remote.search(bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentTypeError, match="a query must be a Query or a str"):
            remote.search_many(["cache", bad])  # type: ignore[list-item]
    for bad in (5, None, iter(["cache"])):
        with pytest.raises(InvalidArgumentTypeError, match="queries must be a sequence"):
            remote.search_many(bad)  # type: ignore[arg-type]
    for flag in ("no", 0):
        with pytest.raises(InvalidArgumentTypeError, match="exclusions must be True or False"):
            remote.search("cache", exclusions=flag)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentTypeError, match="exclusions must be True or False"):
            remote.search_many(["cache"], exclusions=flag)  # type: ignore[arg-type]


def test_bad_arguments_are_okfasts_errors(tmp_path: Path) -> None:
    """docs/spec.md §15.1: checked before the cluster is reached, each an
    okfast error (a ValueError or TypeError as the built-in would be)."""
    import numpy as np
    from okfast import InvalidArgumentError, InvalidArgumentTypeError

    cat = make_catalog(tmp_path, {"a": BUNDLES["b"]}, [{"id": "a", "path": "a"}])
    for shards in (1.5, "2", 0, True):
        with pytest.raises(InvalidArgumentError, match="shards must be a whole number"):
            RayResolver(cat, shards=shards)  # type: ignore[arg-type]
    for count in (1.5, "2", 0, True):
        with pytest.raises(InvalidArgumentError, match="a source id and a count"):
            RayResolver(cat, split={"a": count})  # type: ignore[dict-item]
    for count in (2**40, 2**64):
        with pytest.raises(InvalidArgumentError, match="a count from 1 to 65536"):
            RayResolver(cat, split={"a": count})
    with pytest.raises(InvalidArgumentError, match="may not set max_restarts"):
        RayResolver(cat, actor_options={"max_restarts": 2})
    with pytest.raises(InvalidArgumentError, match="actor_options: Ray refused them"):
        RayResolver(cat, actor_options={"no_such_option": 1})
    huge = RayResolver(cat, timeout=10**400)
    assert huge.timeout == float("inf")
    for name in ("split", "actor_options"):
        for bad in ("alpha", [1]):
            with pytest.raises(InvalidArgumentTypeError, match=f"{name} must be a mapping"):
                RayResolver(cat, **{name: bad})  # type: ignore[arg-type]
    # A numpy integer is a whole number (docs/spec.md §5.1).
    local = Resolver(cat, clock=lambda: NOW)
    remote = RayResolver(cat, shards=np.int64(2), split={"a": np.int64(2)}, clock=lambda: NOW)
    same(local, remote, Query("cache", strategy="merged"))


_BEFORE_RAY = """
import sys, ray
from okfast import Catalog, InvalidArgumentError
from okfast.distributed import RayResolver
cat = Catalog.load(sys.argv[1])
for kw in ({"shards": 1, "split": {"a": 2}}, {"actor_options": {"num_cpus": -1}}, {"address": 5}):
    try:
        RayResolver(cat, **kw)
    except InvalidArgumentError:
        print(ray.is_initialized())
"""


def test_arguments_ray_refuses_are_refused_before_ray_starts(tmp_path: Path) -> None:
    """docs/spec.md §15.1: fewer shards than the widest split and
    actor_options Ray's .options() refuses are checked before Ray is
    started (a local cluster was left running). In a child: this suite's
    cluster is already up."""
    import subprocess
    import sys

    make_catalog(tmp_path, {"a": BUNDLES["b"]}, [{"id": "a", "path": "a"}])
    done = subprocess.run(
        [sys.executable, "-c", _BEFORE_RAY, str(tmp_path / "catalog.json")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.stdout.split() == ["False", "False", "False"], done.stderr


def test_a_split_of_a_disabled_source_is_refused(tmp_path: Path) -> None:
    """docs/spec.md §15.1: no shard serves a disabled source, so its split
    would be silently ignored."""
    from okfast import InvalidArgumentError

    cat = make_catalog(
        tmp_path,
        {"a": BUNDLES["b"], "off": BUNDLES["b"]},
        [{"id": "a", "path": "a"}, {"id": "off", "path": "off", "enabled": False}],
    )
    with pytest.raises(InvalidArgumentError, match="disabled"):
        RayResolver(cat, shards=2, split={"off": 2})


def test_an_infinite_timeout_waits_as_long_as_it_takes(
    governed: tuple[Resolver, RayResolver],
) -> None:
    local, remote = governed
    q = Query("cache memo", strategy="merged", scorer="fusion")
    remote.timeout = float("inf")
    try:
        assert remote.search(q).digest == local.search(q).digest
    finally:
        remote.timeout = 30.0


def test_a_restarted_shard_is_not_replaced_again_while_it_loads(
    governed: tuple[Resolver, RayResolver],
) -> None:
    """docs/spec.md §15.4: a timeout shorter than an actor's start must not
    kill each fresh actor before it has loaded; under steady searches the
    resolver is whole again once the replacement has loaded."""
    local, remote = governed
    q = Query("cache memo", strategy="merged", scorer="bm25f")
    want = local.search(q).digest
    victim = 0
    ray.kill(remote.shards[victim], no_restart=True)
    _wait_dead(remote.shards[victim])
    # Far above a search (milliseconds), below an actor's start (about 1 s).
    remote.timeout = 0.3
    try:
        first = remote.search(q)  # replaces the dead shard, which starts loading
        assert any(d.code == "SourceUnavailable" for d in first.diagnostics)
        fresh = remote.shards[victim]
        # Steady traffic, each search late for the loading actor: never replaced.
        for _ in range(300):
            if remote.search(q).digest == want:
                break
            time.sleep(0.1)
        assert remote.shards[victim] is fresh
    finally:
        remote.timeout = 30.0
    assert remote.search(q).digest == want


def test_a_split_source_the_driver_cannot_list_is_refused(tmp_path: Path) -> None:
    """docs/spec.md §15.5: the parts are cut when the resolver is made."""
    from okfast import BundleNotFoundError

    cat = make_catalog(tmp_path, {"a": BUNDLES["b"]}, [{"id": "a", "path": "a"}])
    shutil.rmtree(tmp_path / "a")
    with pytest.raises(BundleNotFoundError):
        RayResolver(cat, shards=2, split={"a": 2})


def test_a_shard_failing_while_declarations_are_gathered_leaves_its_source_unavailable(
    tmp_path: Path,
) -> None:
    """docs/spec.md §15.4, §15.5: the declarations round trips of a split
    source fail as a search does, never raising."""
    from okfast.distributed.parts import declarations
    from okfast.distributed.pool import Failed
    from okfast.distributed.shard import Found

    class Pool:
        def number(self, shard: int, u: Unit) -> int:
            return shard

        def call(self, calls: dict[int, Any]) -> dict[int, Any]:
            return {sh: Failed(f"shard {sh} failed (test)") for sh in calls}

    doc = json.dumps({"version": 1, "sources": [{"id": "a", "path": "a"}]})
    (tmp_path / "a").mkdir()
    source = Catalog.parse(doc, base_dir=tmp_path).sources[0]
    units = [Unit(source, None, k, 2, *r) for k, r in enumerate([(None, "m"), ("m", None)])]
    part = Found.__new__(Found)
    object.__setattr__(part, "version", "v")
    failed: dict[str, str] = {}
    got = declarations(
        Pool(),  # type: ignore[arg-type]
        {},
        {"a": [part, part]},
        {"a": [(0, units[0]), (1, units[1])]},
        failed,
    )
    assert got == {} and failed == {"a": "shard 0 failed (test)"}


def test_both_retrievers_take_a_ray_resolver(governed: tuple[Resolver, RayResolver]) -> None:
    """docs/integrations.md: a ready RayResolver serves a retriever as a
    Resolver does, with the same documents."""
    require("langchain_core", "langchain")
    require("llama_index.core", "llama-index")
    from okfast.integrations import langchain, llama_index

    local, remote = governed
    for scorer in SCORERS:
        want = langchain.OkfastRetriever(resolver=local, k=5, scorer=scorer).invoke("cache rules")
        got = langchain.OkfastRetriever(resolver=remote, k=5, scorer=scorer).invoke("cache rules")
        assert want and [(d.id, d.metadata) for d in got] == [(d.id, d.metadata) for d in want]
        nodes = [
            llama_index.OkfastRetriever(resolver=r, similarity_top_k=5, scorer=scorer).retrieve(
                "cache rules"
            )
            for r in (local, remote)
        ]
        assert [(n.node.id_, n.score) for n in nodes[1]] == [
            (n.node.id_, n.score) for n in nodes[0]
        ]


def test_the_mcp_server_refuses_a_ray_resolver_when_built(
    governed: tuple[Resolver, RayResolver],
) -> None:
    """docs/integrations.md: the MCP server reads concepts from a local
    resolver's snapshots; a RayResolver has none, and was accepted, then
    failed with an AttributeError (its missing refresh) while being built."""
    require("mcp", "mcp")
    from okfast.integrations import mcp

    with pytest.raises(InvalidArgumentTypeError, match="must be an okfast.Resolver"):
        mcp.build_server(resolver=governed[1])


@requires_corpora
def test_a_shard_loading_a_unit_a_search_first_needs_is_not_replaced() -> None:
    """docs/spec.md §15.4: a search in a language no shard has loaded makes
    the shard load the bundle again (its own analysis); late for that load,
    it is not hung, and was replaced on every such search, never whole."""
    sources = [{"id": "databricks", "path": "./databricks"}]
    cat = Catalog.parse(
        json.dumps({"version": 1, "sources": sources}), base_dir=CORPORA, root=CORPORA
    )
    local = Resolver(cat, clock=lambda: NOW)
    remote = RayResolver(cat, shards=1, clock=lambda: NOW)
    shard = remote.shards[0]
    # Far above a search, below a cold load of 5,120 concepts (about 0.3 s).
    remote.timeout = 0.05
    q = Query(
        "delta lake vacuum retention",
        strategy="merged",
        scorer="bm25f",
        # A language no other test loads: the shard's first load of it is cold.
        bm25f=BM25FParams(language="swedish"),
    )
    try:
        first = remote.search(q)
        assert any(d.code == "SourceUnavailable" for d in first.diagnostics)
        want = local.search(q).digest
        for _ in range(300):
            if remote.search(q).digest == want:
                break
            time.sleep(0.1)
        assert remote.shards[0] is shard
    finally:
        remote.timeout = 30.0
    same(local, remote, q)


def test_a_source_that_cannot_be_loaded_when_a_shard_starts_leaves_the_shard_alive(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """docs/spec.md §15.4, §5.3: an unreadable bundle at a shard's start
    killed the actor, and every other source it served with it."""
    from okfast.distributed.shard import Shard
    from okfast.snapshots import Snapshots

    cat = make_catalog(tmp_path, {"a": BUNDLES["b"]}, [{"id": "a", "path": "a"}])

    def unreadable(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Snapshots, "get", unreadable)
    unit = Unit(cat.sources[0], None, 0, 1, None, None)
    shard = Shard({0: unit}, 1.0)  # made in this process: it must not raise
    assert shard.ready()
    # The failure is the search's to report, for that source alone.
    with pytest.raises(PermissionError):
        shard._current(unit)


def test_a_shard_searches_one_snapshot_of_a_directory_two_sources_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """docs/spec.md §5.10: grouped asks for both sources of one directory in
    one request; a writer adding a concept between their loads (max
    staleness 0) must not give them two snapshots of it."""
    from okfast.distributed.shard import Request, Shard
    from okfast.query import StalePolicy
    from okfast.snapshots import Snapshots

    cat = make_catalog(
        tmp_path,
        {"a": {"one.md": concept("One", "memo")}},
        [{"id": "a", "path": "a"}, {"id": "b", "path": "./a"}],
    )
    units = {k: Unit(s, None, 0, 1, None, None) for k, s in enumerate(cat.sources)}
    shard = Shard(units, 0.0)
    load, writes = Snapshots.get, []

    def then_write(self: Snapshots, *args: Any, **kwargs: Any) -> Any:
        snap = load(self, *args, **kwargs)
        writes.append(1)
        (tmp_path / "a" / f"new{len(writes)}.md").write_text(concept("New", "memo"))
        return snap

    monkeypatch.setattr(Snapshots, "get", then_write)
    request = Request(
        "memo",
        None,
        None,
        (None, None),
        StalePolicy.parse("use"),
        0,
        None,
        (),
        (0, 1),
        (None, None),
    )
    found = shard.search(request)
    assert len(writes) == 1
    assert [f.ids for f in found] == ["one", "one"]  # type: ignore[union-attr]
    assert found[0].version == found[1].version  # type: ignore[union-attr]


def test_a_shard_checks_the_source_path_for_links_on_its_own_node(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """docs/spec.md §5.10 where the shard loads: a directory swapped in
    between the shard's link check and its load (here, just as the load
    starts) is not kept, and the link is refused from then on."""
    from okfast import BundleNotFoundError
    from okfast.distributed.shard import Shard

    cat = make_catalog(
        tmp_path,
        {"kb/docs": {"one.md": concept("One", "memo")}},
        [{"id": "docs", "path": "kb/docs"}],
    )
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    (outside / "docs").mkdir(parents=True)
    (outside / "docs" / "secret.md").write_text(concept("Secret", "memo"))
    link_swapped_in_at_load(monkeypatch, tmp_path / "kb" / "docs", tmp_path / "kb", outside)
    unit = Unit(cat.sources[0], None, 0, 1, None, None, cat.resolved_root)
    shard = Shard({}, 0.0)
    with pytest.raises(BundleNotFoundError, match="changed while it was opened"):
        shard._current(unit)
    with pytest.raises(BundleNotFoundError, match="symbolic link"):
        shard._current(unit)
    assert shard._held == {}


def test_ray_shut_down_is_source_unavailable_not_a_bare_exception(tmp_path: Path) -> None:
    """docs/spec.md §15.4: never a bare exception, and no cluster started again.
    Kept last in the module: the module's resolvers die with the cluster."""
    cat = make_catalog(tmp_path, {"a": BUNDLES["b"]}, [{"id": "a", "path": "a"}])
    remote = RayResolver(cat, shards=1, clock=lambda: NOW)
    before = os.environ.get("RAY_AUTH_MODE")
    ray.shutdown()
    try:
        got = remote.search(Query("cache", strategy="merged"))
        assert not ray.is_initialized()
        assert [(d.code, d.source_id) for d in got.diagnostics] == [("SourceUnavailable", "a")]
        assert "the Ray cluster is gone" in got.diagnostics[0].message
    finally:
        if before is not None:
            os.environ["RAY_AUTH_MODE"] = before
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
