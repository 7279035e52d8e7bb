"""Resolution across sources (SPEC §5): strategies, dedup, visibility, stale policy, diagnostics."""

from __future__ import annotations

import dataclasses
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import REPO, link_swapped_in_at_load, make_catalog, write_bundle
from hypothesis import given, settings
from hypothesis import strategies as st
from okfast import Bundle, _native
from okfast.catalog import Catalog
from okfast.errors import BundleNotFoundError, InvalidArgumentError, InvalidArgumentTypeError
from okfast.query import Query, StalePolicy, Strategy
from okfast.resolver import Resolver
from okfast.snapshots import Snapshots

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


def concept(title: str, body: str = "", stale: str | None = None) -> str:
    extra = f"stale_after: {stale}\n" if stale else ""
    return f"---\ntype: T\ntitle: {title}\n{extra}---\n{body}\n"


make = make_catalog


def ids(ctx: Any) -> list[tuple[str, str]]:
    return [(p.source_id, p.concept_id) for p in ctx.passages]


@pytest.fixture
def two(tmp_path: Path) -> Catalog:
    return make(
        tmp_path,
        {
            "a": {
                "x.md": "---\ntype: T\ntitle: order\ndescription: order\n---\norder\n",  # 6
                "y.md": concept("other", "order"),
                "z.md": concept("nothing"),
            },
            "b": {
                "x.md": concept("order"),
                "w.md": concept("orders", "order order"),
            },
        },
        [
            {"id": "alpha", "path": "a", "priority": 1},
            {"id": "beta", "path": "b", "priority": 5},
            {"id": "off", "path": "a", "enabled": False},
        ],
    )


def test_grouped_is_bundle_search_per_source_in_priority_order(
    two: Catalog, tmp_path: Path
) -> None:
    ctx = Resolver(two, clock=lambda: NOW).search(Query("order"))
    want = [("beta", h.concept_id) for h in Bundle.load(tmp_path / "b").search("order")]
    want += [("alpha", h.concept_id) for h in Bundle.load(tmp_path / "a").search("order")]
    assert ids(ctx) == want
    assert [p.score for p in ctx.passages] == [
        h.score for d in ("b", "a") for h in Bundle.load(tmp_path / d).search("order")
    ]
    # With neither a query nor a default strategy, the behaviour is grouped.
    assert ids(Resolver(two).search("order")) == want


def test_merged_interleaves_scores_and_priority_breaks_ties(two: Catalog) -> None:
    ctx = Resolver(two).search(Query("order", strategy="merged"))
    got = [(p.source_id, p.concept_id, p.score) for p in ctx.passages]
    assert [s for *_, s in got] == sorted((s for *_, s in got), reverse=True)
    assert got[0][2] > got[-1][2] and {s for s, _, _ in got[:2]} == {"alpha", "beta"}
    # Equal scores: the higher priority source first.
    for (s1, _, sc1), (s2, _, sc2) in zip(got, got[1:], strict=False):
        if sc1 == sc2 and s1 != s2:
            assert (s1, s2) == ("beta", "alpha")


def test_priority_weighted_never_puts_lower_priority_first(two: Catalog) -> None:
    merged = ids(Resolver(two).search(Query("order", strategy=Strategy.MERGED)))
    pw = Resolver(two).search(Query("order", strategy="priority_weighted"))
    prios = [p.priority for p in pw.passages]
    assert prios == sorted(prios, reverse=True)
    assert sorted(merged) == sorted(ids(pw))
    # On this catalog merged does put a lower-priority passage first.
    assert merged[0][0] == "alpha"


def test_reciprocal_rank_fuses_by_rank(two: Catalog) -> None:
    ctx = Resolver(two).search(Query("order", strategy="reciprocal_rank", rrf_k=10))
    fused = [p.fused_score for p in ctx.passages]
    assert fused[:2] == [1 / 11, 1 / 11] and fused == sorted(fused, reverse=True)  # type: ignore[type-var]
    assert [p.source_id for p in ctx.passages[:2]] == ["beta", "alpha"]
    assert all(p.fused_score is None for p in Resolver(two).search("order").passages)


def test_same_directory_twice_is_searched_once(tmp_path: Path) -> None:
    cat = make(
        tmp_path,
        {"shared": {"c.md": concept("topic")}},
        [
            {"id": "s1", "path": "./shared", "priority": 1},
            {"id": "s2", "path": "./shared/../shared", "priority": 2},
        ],
    )
    for strategy in ["merged", "priority_weighted", "reciprocal_rank"]:
        ctx = Resolver(cat).search(Query("topic", strategy=strategy))
        assert ids(ctx) == [("s2", "c")]
        assert [(d.code, d.source_id) for d in ctx.diagnostics] == [("DuplicateDirectory", "s1")]
        assert "'s2'" in ctx.diagnostics[0].message
    # grouped does not deduplicate.
    assert ids(Resolver(cat).search("topic")) == [("s2", "c"), ("s1", "c")]


def test_case_distinct_directories_follow_the_platform(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat = make(
        tmp_path,
        {"Docs": {"c.md": concept("topic")}, "docs": {"c.md": concept("topic")}},
        [{"id": "upper", "path": "./Docs"}, {"id": "lower", "path": "./docs"}],
    )
    q = Query("topic", strategy="merged")
    assert len(Resolver(cat).search(q).passages) == 2  # Linux: two directories
    import okfast.paths as paths

    monkeypatch.setattr(paths.sys, "platform", "darwin")
    ctx = Resolver(cat).search(q)
    assert ids(ctx) == [("lower", "c")]
    assert [d.code for d in ctx.diagnostics] == ["DuplicateDirectory"]


def test_same_id_in_two_directories_gives_both(two: Catalog) -> None:
    got = ids(Resolver(two).search(Query("order", strategy="merged")))
    assert ("alpha", "x") in got and ("beta", "x") in got


def test_memory_and_disabled_sources_are_never_searched(tmp_path: Path) -> None:
    (tmp_path / "mem").mkdir()
    write_bundle(tmp_path / "mem", {"m.md": concept("topic")})
    cat = make(
        tmp_path,
        {"k": {"c.md": concept("topic")}},
        [
            {"id": "k", "path": "k"},
            {"id": "mem", "path": "mem", "role": "memory", "tier": "user"},
            {"id": "off", "path": "mem", "enabled": False},
        ],
    )
    for s in Strategy:
        assert {p.source_id for p in Resolver(cat).search(Query("topic", strategy=s)).passages} == {
            "k"
        }


def test_visibility_and_permitted_ids(two: Catalog) -> None:
    r = Resolver(two, default_visibility=lambda scope, s: s.id == "alpha")
    assert {p.source_id for p in r.search("order").passages} == {"alpha"}
    assert {
        p.source_id for p in r.search(Query("order", permitted_source_ids=["beta", "zzz"])).passages
    } == {"beta"}
    ctx = r.search(Query("order", visibility=lambda scope, s: False))
    assert [d.code for d in ctx.diagnostics] == ["NoEnabledSources"]
    assert "hidden by visibility" in ctx.diagnostics[0].message
    assert len(ctx.passages) == 0


def test_no_enabled_sources(tmp_path: Path) -> None:
    cat = make(
        tmp_path, {"a": {"c.md": concept("x")}}, [{"id": "a", "path": "a", "enabled": False}]
    )
    ctx = Resolver(cat).search("x")
    assert [d.code for d in ctx.diagnostics] == ["NoEnabledSources"]
    assert "no enabled knowledge source" in ctx.diagnostics[0].message


def test_source_unavailable_others_still_searched(two: Catalog, tmp_path: Path) -> None:
    shutil.rmtree(tmp_path / "b")
    ctx = Resolver(two).search(Query("order", strategy="merged"))
    assert {p.source_id for p in ctx.passages} == {"alpha"}
    assert [(d.code, d.source_id) for d in ctx.diagnostics] == [("SourceUnavailable", "beta")]


@pytest.mark.parametrize("strategy", ["grouped", "merged"])
def test_an_unavailable_sources_error_comes_in_source_order(tmp_path: Path, strategy: str) -> None:
    """docs/spec.md §5.6: each searched source's diagnostics, in source
    order, its ``SourceUnavailable`` in its place."""
    cat = make(
        tmp_path,
        {
            "a": {"notype.md": "---\ntitle: order\n---\norder\n", "x.md": concept("order")},
            "b": {"x.md": concept("order")},
            "c": {"notype.md": "---\ntitle: order\n---\norder\n"},
        },
        [
            {"id": "a", "path": "a", "priority": 10},
            {"id": "b", "path": "b", "priority": 5},
            {"id": "c", "path": "c", "priority": 1},
        ],
    )
    shutil.rmtree(tmp_path / "b")
    ctx = Resolver(cat).search(Query("order", strategy=strategy))
    assert [(d.code, d.source_id) for d in ctx.diagnostics] == [
        ("MissingType", "a"),
        ("SourceUnavailable", "b"),
        ("MissingType", "c"),
    ]


def test_no_matches_only_when_something_was_searched(two: Catalog, tmp_path: Path) -> None:
    ctx = Resolver(two).search("zebra")
    assert [d.code for d in ctx.diagnostics] == ["NoMatches"]
    assert ctx.diagnostics[0].message == "No passages matched query 'zebra'."
    shutil.rmtree(tmp_path / "a")
    shutil.rmtree(tmp_path / "b")
    assert [d.code for d in Resolver(two).search("zebra").diagnostics] == ["SourceUnavailable"] * 2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"text": "  "},
        {"text": "x", "fairness_quota": 0},
        {"text": "x", "strategy": "best"},
        {"text": "x", "permitted_source_ids": ["a"], "visibility": lambda s, c: True},
        {"text": "x", "limit": -1},
        {"text": "x", "rrf_k": 0},
    ],
)
def test_query_validation(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Query(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"stale_policy": None},
        {"stale_policy": 5},
        {"permitted_source_ids": "alpha"},
        {"permitted_source_ids": b"alpha"},
    ],
)
def test_query_arguments_of_the_wrong_type_are_type_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgumentTypeError):
        Query("x", **kwargs)


def test_a_stale_policy_may_be_spelled_as_on_the_command_line(two: Catalog) -> None:
    assert Query("x", stale_policy="strict").stale_policy == StalePolicy.strict()
    assert Query("x", stale_policy="tolerate:2").stale_policy == StalePolicy.tolerate(2)
    with pytest.raises(InvalidArgumentError, match="use, strict or tolerate:DAYS"):
        Query("x", stale_policy="strictly")
    r = Resolver(two)
    assert r.search(Query("order", stale_policy="strict")).digest == (
        r.search(Query("order", stale_policy=StalePolicy.strict())).digest
    )
    for days in (True, "2", None):
        with pytest.raises(InvalidArgumentTypeError):
            StalePolicy.tolerate(days)  # type: ignore[arg-type]


def test_a_clock_or_staleness_out_of_its_domain_is_refused(two: Catalog) -> None:
    for clock in (lambda: None, lambda: "2026-01-01"):
        with pytest.raises(InvalidArgumentTypeError, match="aware datetime"):
            Resolver(two, clock=clock).search("order")  # type: ignore[arg-type, return-value]
    with pytest.raises(InvalidArgumentError, match="max_staleness"):
        Resolver(two, max_staleness=float("nan"))


def test_query_defaults_fall_back_to_resolver(two: Catalog) -> None:
    r = Resolver(two, default_strategy="merged", default_fairness_quota=1)
    ctx = r.search(Query("order"))
    srcs = [p.source_id for p in ctx.passages]
    assert all(a != b for a, b in zip(srcs, srcs[1:], strict=False)) or len(set(srcs)) == 1
    assert ids(ctx) != ids(Resolver(two).search("order"))


def test_stale_policies(tmp_path: Path) -> None:
    cat = make(
        tmp_path,
        {
            "a": {
                "old.md": concept("topic", stale="2026-05-01"),
                "soon.md": concept("topic", stale="2026-06-02"),
                "never.md": concept("topic"),
            }
        },
        [{"id": "a", "path": "a"}],
    )
    r = Resolver(cat, clock=lambda: NOW)
    use = r.search(Query("topic"))
    assert len(use.passages) == 3 and [p.is_stale for p in use.passages] == [False, True, False]
    strict = r.search(Query("topic", stale_policy=StalePolicy.strict()))
    assert ids(strict) == [("a", "never"), ("a", "soon")]
    assert [(e.concept_id, e.reason) for e in strict.exclusions] == [("old", "stale")]
    tol = r.search(Query("topic", stale_policy=StalePolicy.tolerate(31)))
    assert len(tol.passages) == 3
    assert len(r.search(Query("topic", stale_policy=StalePolicy.tolerate(30))).passages) == 2


def test_passages_are_lazy(two: Catalog) -> None:
    ctx = Resolver(two).search(Query("order", strategy="merged"))
    n = len(ctx.passages)
    assert n == 4 and ctx.passages._cache == {}
    first = ctx.passages[:2]
    assert len(ctx.passages._cache) == 2 and first[0] == ctx.passages[0]
    assert ctx.passages[-1] == list(ctx.passages)[-1]
    assert first[0].body.strip() in ("order", "", "order order")
    # Indexed as a list is (docs/spec.md §5.2): any integer, never a float.
    import numpy as np

    assert ctx.passages[np.int64(1)] == ctx.passages[1] and ctx.passages[True] == ctx.passages[1]
    for bad in (0.0, 1.5, "0", None):
        with pytest.raises(TypeError, match="passage indices must be integers or slices"):
            ctx.passages[bad]  # type: ignore[call-overload]


def test_limit_and_min_score_trim_with_exclusions(two: Catalog) -> None:
    full = Resolver(two).search(Query("order", strategy="merged"))
    lim = Resolver(two).search(Query("order", strategy="merged", limit=1))
    assert ids(lim) == ids(full)[:1]
    # Exclusions are sorted by source id, then concept id (SPEC §5.8: deterministic).
    assert [(e.source_id, e.concept_id) for e in lim.exclusions] == sorted(ids(full)[1:])
    assert {e.reason for e in lim.exclusions} == {"not-relevant"}


def test_digest_is_deterministic(two: Catalog) -> None:
    a = Resolver(two).search(Query("order", strategy="merged"))
    b = Resolver(two).search(Query("order", strategy="merged"))
    assert a.digest == b.digest and a.digest.startswith("sha256:")
    assert a.digest != Resolver(two).search(Query("order")).digest


def test_refresh_notices_changes(two: Catalog, tmp_path: Path) -> None:
    r = Resolver(two, max_staleness=0)
    assert ("beta", "new") not in ids(r.search("order"))
    (tmp_path / "b" / "new.md").write_text(concept("order"))
    assert ("beta", "new") in ids(r.search("order"))
    slow = Resolver(two, max_staleness=3600)
    before = ids(slow.search("order"))
    (tmp_path / "b" / "new2.md").write_text(concept("order"))
    assert ids(slow.search("order")) == before
    slow.refresh()
    assert ("beta", "new2") in ids(slow.search("order"))


@pytest.mark.parametrize("strategy", list(Strategy))
def test_a_search_takes_one_snapshot_of_a_directory_two_sources_name(
    tmp_path: Path, strategy: Strategy, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/spec.md §5.10: a search keeps the snapshots it started with. A
    # writer adds a concept right after the search loaded the directory for
    # its first source; with max_staleness 0 a second load would see it.
    cat = make(
        tmp_path,
        {"a": {"x.md": concept("order")}},
        [{"id": "one", "path": "a", "priority": 2}, {"id": "two", "path": "./a/"}],
    )
    r = Resolver(cat, max_staleness=0)
    load = Snapshots.get
    calls = []

    def then_write(self: Snapshots, *args: Any, **kwargs: Any) -> Any:
        snap = load(self, *args, **kwargs)
        calls.append(snap)
        (tmp_path / "a" / f"new{len(calls)}.md").write_text(concept("order"))
        return snap

    monkeypatch.setattr(Snapshots, "get", then_write)
    ctx = r.search(Query("order", strategy=strategy))
    assert len(calls) == 1
    # grouped searches both sources (no dedup, §5.5): the same concepts in each.
    by_source: dict[str, list[str]] = {}
    for s, c in ids(ctx):
        by_source.setdefault(s, []).append(c)
    assert by_source["one"] == ["x"]
    assert by_source.get("two", ["x"]) == ["x"]
    assert ("two" in by_source) == (strategy is Strategy.GROUPED)
    # The next search sees the writes.
    monkeypatch.setattr(Snapshots, "get", load)
    assert ("one", "new1") in ids(r.search(Query("order", strategy=strategy)))


def test_a_directory_gone_after_a_search_took_it_is_still_read_by_that_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/spec.md §5.10: the second source naming the directory reads the
    # snapshot the search took, even once the directory has moved away.
    cat = make(
        tmp_path,
        {"a": {"x.md": concept("order"), "y.md": concept("order")}},
        [{"id": "one", "path": "a", "priority": 2}, {"id": "two", "path": "./a/"}],
    )
    r = Resolver(cat)
    take = Snapshots.take

    def take_then_move(self: Snapshots, *args: Any) -> Any:
        snap = take(self, *args)
        if (tmp_path / "a").exists():
            (tmp_path / "a").rename(tmp_path / "moved")
        return snap

    monkeypatch.setattr(Snapshots, "take", take_then_move)
    ctx = r.search(Query("order", strategy="grouped"))
    assert ids(ctx) == [("one", "x"), ("one", "y"), ("two", "x"), ("two", "y")]
    assert [d.code for d in ctx.diagnostics if d.code == "SourceUnavailable"] == []
    # The next search finds it gone.
    ctx = r.search(Query("order", strategy="grouped"))
    assert ids(ctx) == [] and {d.source_id for d in ctx.diagnostics} == {"one", "two"}


def test_both_passes_of_the_cut_read_the_snapshot_the_search_took(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/spec.md §5.2, §5.10: the best passages are stale, so the cut pass
    # does not settle and the search runs again over whole lists: from the
    # snapshot the first pass took, though the directory went meanwhile.
    files = {
        f"c{i}.md": concept("data", "data " * (6 - i), "2026-01-01" if i < 2 else None)
        for i in range(6)
    }
    cat = make(tmp_path, {"b": files}, [{"id": "one", "path": "b"}])
    q = Query("data", scorer="bm25f", limit=2, stale_policy="strict")
    whole = ids(Resolver(cat, clock=lambda: NOW).search(q, exclusions=False))
    assert whole == [("one", "c2"), ("one", "c3")]
    r = Resolver(cat, clock=lambda: NOW)
    take, calls = Snapshots.take, []

    def take_then_move(self: Snapshots, *args: Any) -> Any:
        snap = take(self, *args)
        calls.append(1)
        if (tmp_path / "b").exists():
            (tmp_path / "b").rename(tmp_path / "moved")
        return snap

    monkeypatch.setattr(Snapshots, "take", take_then_move)
    ctx = r.search(q, exclusions=False)
    assert len(calls) == 2  # one per pass: the cut did not settle
    assert ids(ctx) == whole
    assert "SourceUnavailable" not in {d.code for d in ctx.diagnostics}


def linked_later(tmp_path: Path) -> tuple[Catalog, Path]:
    """A catalog of 'kb/docs' and 'other', and a bundle outside its root that
    a link put on 'kb' would lead to."""
    cat = make(
        tmp_path,
        {"kb/docs": {"x.md": concept("order")}, "other": {"y.md": concept("order")}},
        [{"id": "docs", "path": "kb/docs"}, {"id": "other", "path": "other"}],
    )
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    write_bundle(outside / "docs", {"secret.md": concept("order")})
    return cat, outside


@pytest.mark.parametrize("staleness", [0, 3600])
def test_a_link_put_on_a_source_path_later_is_not_followed(
    tmp_path: Path, staleness: float
) -> None:
    # docs/spec.md §4.2, §5.10: the catalog checked 'kb/docs' for links when
    # it was read; a running resolver checks again before it loads or
    # refreshes, so 'kb' swapped for a link does not serve what it points to.
    cat, outside = linked_later(tmp_path)
    r = Resolver(cat, max_staleness=staleness)
    assert ("docs", "x") in ids(r.search("order"))
    (tmp_path / "kb").rename(tmp_path / "kb-was")
    (tmp_path / "kb").symlink_to(outside)
    r.refresh()  # the other source is refreshed; the linked one is left to the search
    fresh = Resolver(cat)
    for res in (r, fresh):
        ctx = res.search("order")
        assert ids(ctx) == [("other", "y")]
        [d] = [d for d in ctx.diagnostics if d.code == "SourceUnavailable"]
        assert d.source_id == "docs" and "is a symbolic link" in d.message
        assert str(tmp_path / "kb") in d.message
        with pytest.raises(BundleNotFoundError, match="symbolic link"):
            res.snapshot("docs")
    (tmp_path / "kb").unlink()
    (tmp_path / "kb-was").rename(tmp_path / "kb")
    assert ("docs", "x") in ids(r.search("order"))


def test_a_link_put_on_a_source_path_between_the_check_and_the_load_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/spec.md §5.10: the resolver checks the path for links, then the
    # load opens it; a link put there in between (here, just as the load
    # starts) is caught by comparing the directory the load opened with the
    # one the check reached, and nothing read through it is served.
    cat, outside = linked_later(tmp_path)
    link_swapped_in_at_load(monkeypatch, tmp_path / "kb" / "docs", tmp_path / "kb", outside)
    ctx = Resolver(cat).search("order")
    assert ids(ctx) == [("other", "y")]
    [d] = [d for d in ctx.diagnostics if d.code == "SourceUnavailable"]
    assert d.source_id == "docs" and "changed while it was opened" in d.message


def test_example_catalog_resolves() -> None:
    cat = Catalog.load(REPO / "examples" / "catalog.json")
    for s in Strategy:
        ctx = Resolver(cat).search(Query("policy refund", strategy=s, fairness_quota=2))
        assert len(ctx.passages) > 3 and {p.source_id for p in ctx.passages} >= {"glossary"}


# --- fairness (SPEC §5.7) against a literal Python reading ----------------------------


def fairness_reference(sources: list[int], k: int) -> list[int]:
    rest = list(range(len(sources)))
    out: list[int] = []
    run_src, run_len = None, 0
    while rest:
        pick = 0
        if sources[rest[0]] == run_src and run_len >= k:
            pick = next((j for j, i in enumerate(rest) if sources[i] != run_src), 0)
        i = rest.pop(pick)
        run_src, run_len = (run_src, run_len + 1) if sources[i] == run_src else (sources[i], 1)
        out.append(i)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=60), st.integers(1, 5))
def test_fairness_matches_reference(sources: list[int], k: int) -> None:
    got = _native.fairness_order(np.array(sources, dtype=np.uint32), k).tolist()
    assert got == fairness_reference(sources, k)
    assert sorted(got) == list(range(len(sources)))  # no loss, no duplicate
    seq = [sources[i] for i in got]
    run = 1
    for j in range(1, len(seq)):
        run = run + 1 if seq[j] == seq[j - 1] else 1
        if run > k:
            # Only allowed when no other source has passages left.
            assert set(seq[j:]) == {seq[j]}


def test_fairness_quota_keeps_the_same_passages(two: Catalog) -> None:
    plain = Resolver(two).search(Query("order", strategy="merged"))
    fair = Resolver(two).search(Query("order", strategy="merged", fairness_quota=1))
    assert sorted(ids(plain)) == sorted(ids(fair))


def test_a_search_without_exclusions_ranks_the_same(tmp_path: Path) -> None:
    """docs/spec.md §5.2: ``exclusions=False`` changes nothing but the list."""
    cat = Catalog.load(Path(__file__).parent.parent / "examples" / "catalog.json")
    r = Resolver(cat)
    for q in (Query("the", strategy="merged", limit=2), Query("the", min_score=3, scorer="fusion")):
        whole, bare = r.search(q), r.search(q, exclusions=False)
        assert whole.exclusions and bare.exclusions == ()
        assert bare.passages.keys() == whole.passages.keys()
        assert bare.diagnostics == whole.diagnostics


@pytest.mark.parametrize("flag", ["no", 0, None])
def test_exclusions_that_is_not_a_bool_is_refused(flag: object) -> None:
    """docs/spec.md §5.1: a switch is True or False; ``"no"`` was read as on."""
    r = Resolver(Catalog.load(Path(__file__).parent.parent / "examples" / "catalog.json"))
    with pytest.raises(InvalidArgumentTypeError, match="exclusions must be True or False"):
        r.search("the", exclusions=flag)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentTypeError, match="exclusions must be True or False"):
        r.search_many(["the", "a"], exclusions=flag)  # type: ignore[arg-type]


def test_a_snapshot_is_of_an_enabled_knowledge_source_only(tmp_path: Path) -> None:
    """docs/spec.md §5.2: a snapshot of a memory tier would hold every scope's
    memory in the persistent cache and outlive an erasure (§6.3, §9.8)."""
    note = "---\ntype: Note\ntitle: Secret\n---\nswordfish\n"
    cat = make_catalog(
        tmp_path,
        {"kb": {"a.md": note}, "mem": {"t/u/n.md": note}, "off": {}},
        [
            {"id": "kb", "path": "kb"},
            {"id": "mu", "path": "mem", "role": "memory", "tier": "user"},
            {"id": "off", "path": "off", "enabled": False},
        ],
    )
    r = Resolver(cat)
    assert len(r.snapshot("kb")) == 1
    with pytest.raises(InvalidArgumentError, match="'mu' is a memory source"):
        r.snapshot("mu")
    with pytest.raises(InvalidArgumentError, match="'mu' is a memory source"):
        r.snapshot(cat.source("mu"))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="'off' is disabled"):
        r.snapshot("off")
    # A Source made by hand, not the catalog's: its path was never checked.
    kb = cat.source("kb")
    assert kb is not None
    outside = dataclasses.replace(kb, id="elsewhere", directory=tmp_path / "mem")
    with pytest.raises(InvalidArgumentError, match="'elsewhere' is not one of the catalog's"):
        r.snapshot(outside)
    with pytest.raises(InvalidArgumentError, match="'kb' is not one of the catalog's"):
        r.snapshot(dataclasses.replace(kb, directory=tmp_path / "mem"))
    assert len(r.snapshot(kb)) == 1


def test_wrong_types_are_type_errors_naming_what_was_given(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentTypeError, match=r"got str \(Catalog.load\(path\)"):
        Resolver("catalog.json")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentTypeError, match="got NoneType"):
        Resolver(None)  # type: ignore[arg-type]
    cat = make_catalog(tmp_path, {"kb": {}}, [{"id": "kb", "path": "kb"}])
    r = Resolver(cat)
    for bad in (5, b"order", None):
        with pytest.raises(InvalidArgumentTypeError, match="a query must be a Query or a str"):
            r.search(bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentTypeError, match="a query must be a Query or a str"):
            r.search_many(["order", bad])  # type: ignore[list-item]


def test_resolver_arguments_are_checked_when_it_is_made(tmp_path: Path) -> None:
    """docs/spec.md §5.2: a wrong argument fails at the constructor (or the
    call), as okfast's own error, never a raw TypeError at the first search,
    and a falsy value is not taken for "use the default"."""
    cat = make_catalog(tmp_path, {"kb": {}}, [{"id": "kb", "path": "kb"}])
    for falsy in ("", 0, False, [], {}):
        with pytest.raises(InvalidArgumentError):
            Resolver(cat, default_strategy=falsy)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError):
            Resolver(cat, default_scorer=falsy)  # type: ignore[arg-type]
    for name in ("default_visibility", "clock", "progress"):
        with pytest.raises(InvalidArgumentTypeError, match=f"{name} must be a callable"):
            Resolver(cat, **{name: 1})  # type: ignore[arg-type]
    for staleness in (None, "1", True):
        with pytest.raises(InvalidArgumentTypeError, match="max_staleness"):
            Resolver(cat, max_staleness=staleness)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentTypeError, match="settings must be"):
        Resolver(cat, settings=0)  # type: ignore[arg-type]
    for source in (None, 1, b"kb"):
        with pytest.raises(InvalidArgumentTypeError, match="source must be"):
            Resolver(cat).snapshot(source)  # type: ignore[arg-type]


def test_max_staleness_is_any_real_number(tmp_path: Path) -> None:
    """docs/spec.md §5.2: only a ``max_staleness`` that is not a number is a
    type error; numpy's numbers and a ``Fraction`` are numbers (§5.1)."""
    from fractions import Fraction

    cat = make_catalog(tmp_path, {"kb": {"x.md": concept("order")}}, [{"id": "kb", "path": "kb"}])
    for staleness in (np.int64(0), np.float32(0.5), Fraction(1, 2), 2**70):
        assert ids(Resolver(cat, max_staleness=staleness).search("order")) == [("kb", "x")]
    for bad in (np.float64("nan"), np.int64(-1), Fraction(-1, 2)):
        with pytest.raises(InvalidArgumentError, match="max_staleness must be >= 0"):
            Resolver(cat, max_staleness=bad)


def test_the_generation_is_that_of_the_sources_searched(tmp_path: Path) -> None:
    """docs/spec.md §4.3, §5.2: a reload that lands while a search runs (here
    from inside its visibility check, after the sources were read) does not
    give the search the new generation beside the old sources' passages."""
    import json

    for s in ("a", "b"):
        write_bundle(tmp_path / s, {"x.md": concept(f"{s} alpha", "alpha")})

    def point_at(sid: str) -> None:
        doc = {"version": 1, "sources": [{"id": sid, "path": f"./{sid}"}]}
        (tmp_path / "catalog.json").write_text(json.dumps(doc))

    point_at("a")
    cat = Catalog.load(tmp_path / "catalog.json")
    reloaded: list[int] = []

    def visible(scope: object, source: object) -> bool:
        if not reloaded:
            point_at("b")
            reloaded.append(cat.reload().generation)
        return True

    ctx = Resolver(cat, default_visibility=visible, max_staleness=0).search(Query("alpha"))
    assert reloaded == [2] and cat.snapshot()[1] == 2
    assert (ctx.generation, [p.source_id for p in ctx.passages]) == (1, ["a"])
    after = Resolver(cat).search(Query("alpha"))
    assert (after.generation, [p.source_id for p in after.passages]) == (2, ["b"])


def test_refresh_of_a_source_that_cannot_be_loaded_now_leaves_it_to_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/spec.md §5.3: a source whose directory is there but cannot be read
    (its permissions; removed meanwhile) is reported by the search that needs
    it, as SourceUnavailable; refresh() raised for every source, and so
    ``okfast eval`` and ``tune`` stopped with status 2 (§11.2)."""
    note = "---\ntype: Note\ntitle: {0}\n---\nwidget {0}\n"
    cat = make_catalog(
        tmp_path,
        {"a": {"x.md": note.format("Ax")}, "b": {"y.md": note.format("By")}},
        [{"id": "a", "path": "a"}, {"id": "b", "path": "b"}],
    )
    r = Resolver(cat)
    assert [p.source_id for p in r.search(Query("widget", strategy="merged")).passages] == [
        "a",
        "b",
    ]
    real = Bundle.load

    def load(path: Any, **kw: Any) -> Bundle:
        if Path(path).name == "b":
            raise BundleNotFoundError(f"bundle root {str(path)!r} is not a readable directory")
        return real(path, **kw)

    monkeypatch.setattr("okfast.snapshots.Bundle.load", load)
    (tmp_path / "b" / "z.md").write_text(note.format("Bz"))  # so b's snapshot reloads
    monkeypatch.setattr("okfast.snapshots.Bundle.refresh", lambda self: load(self.root))
    r.refresh()
    ctx = r.search(Query("widget", strategy="merged"))
    assert [p.source_id for p in ctx.passages] == ["a"]
    assert [(d.code, d.source_id) for d in ctx.diagnostics] == [("SourceUnavailable", "b")]


def test_a_strategy_engine_takes_a_resolver_and_a_query_or_its_text() -> None:
    """docs/spec.md §5.2: the exported engines check what they are given."""
    from okfast import GroupedResolver, MergedResolver

    r = Resolver(Catalog.load(REPO / "examples" / "catalog.json"))
    with pytest.raises(InvalidArgumentTypeError, match="resolver must be a Resolver"):
        GroupedResolver(None)  # type: ignore[arg-type]
    assert GroupedResolver(r).run("the").passages == r.search(Query("the")).passages
    merged = r.search(Query("the", strategy="merged")).passages
    assert MergedResolver(r).run("the").passages == merged
    with pytest.raises(InvalidArgumentTypeError, match="exclusions must be True or False"):
        MergedResolver(r).run("the", "no")  # type: ignore[arg-type]


def test_no_matches_says_whether_matches_were_all_excluded() -> None:
    """docs/spec.md §5.6: "No passages matched" only when nothing matched."""
    r = Resolver(Catalog.load(REPO / "examples" / "catalog.json"))
    for q in (Query("croissant", limit=0), Query("croissant", min_score=1e9)):
        ctx = r.search(q)
        assert ctx.passages == [] and ctx.exclusions
        assert ctx.diagnostics[-1].message == (
            "No passages remain for query 'croissant': every match was excluded."
        )
    assert r.search(Query("zebraxyz")).diagnostics[-1].message == (
        "No passages matched query 'zebraxyz'."
    )


def test_a_refresh_that_began_earlier_never_replaces_a_later_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/spec.md §5.10: two searches refreshing one source at once keep
    the later look, whichever ends last, so no later search reads an older
    disk than an earlier one saw."""
    import threading

    def doc(title: str) -> str:
        return f"---\ntype: T\ntitle: {title}\n---\nbody\n"

    cat = make_catalog(tmp_path, {"kb": {"a.md": doc("one")}}, [{"id": "kb", "path": "kb"}])
    snaps, (source,) = Snapshots(max_staleness=3600.0), cat.sources
    snaps.get(source, None)
    (tmp_path / "kb" / "a.md").write_text(doc("two, longer"))
    looked, release = threading.Event(), threading.Event()
    real = Bundle.refresh

    def slow(self: Bundle) -> Bundle | None:
        changed = real(self)
        if threading.current_thread().name == "early":
            looked.set()  # it has seen "two" and ends only after the later look
            release.wait(30)
        return changed

    monkeypatch.setattr(Bundle, "refresh", slow)
    early = threading.Thread(target=snaps.get, args=(source, None), kwargs={"force": True})
    early.name = "early"
    early.start()
    assert looked.wait(30)
    (tmp_path / "kb" / "a.md").write_text(doc("three, longer still"))
    assert snaps.get(source, None, force=True).bundle.concept("a").title == "three, longer still"
    release.set()
    early.join(30)
    assert snaps.get(source, None).bundle.concept("a").title == "three, longer still"


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/self/maps")
def test_a_source_the_catalog_no_longer_names_holds_no_snapshot(tmp_path: Path) -> None:
    """docs/spec.md §5.10: after a reload moves a source to another
    directory, or disables it, the resolver lets go of the old directory's
    bundle (its mapped cache file, its change watch), at the next search or
    refresh()."""
    import gc
    import json

    doc = "---\ntype: T\ntitle: Rollback\n---\nrollback steps\n"
    entry = {"id": "kb", "path": "r1"}
    cat = make_catalog(tmp_path, {"r1": {"a.md": doc}, "r2": {"a.md": doc}}, [entry])

    def write_catalog(**changes: object) -> None:
        sources = [{**entry, **changes}]
        (tmp_path / "catalog.json").write_text(json.dumps({"version": 1, "sources": sources}))
        assert not cat.reload().diagnostics

    def mapped(cache_file: Path | None) -> bool:
        assert cache_file is not None
        gc.collect()
        return str(cache_file) in Path("/proc/self/maps").read_text()

    r = Resolver(cat, max_staleness=3600.0)
    assert r.search("rollback").passages
    old = r.snapshot(cat.sources[0]).cache_file
    assert mapped(old)
    write_catalog(path="r2")  # the next release's directory
    assert [p.path for p in r.search("rollback").passages] == ["a.md"]
    assert not mapped(old)
    now = r.snapshot(cat.sources[0]).cache_file
    assert now != old and mapped(now)
    write_catalog(path="r2", enabled=False)
    r.refresh()
    assert not mapped(now)
