"""The fusion scorer (docs/spec.md §12.10): within a source, the weighted
count's and BM25F's rankings fused by reciprocal rank, checked against a
literal reading of the spec over the two scorers' own results."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from conftest import write_bundle
from hypothesis import given
from hypothesis import strategies as st
from okfast import BM25FParams, Bundle, InvalidArgumentError, Query, Resolver, Scorer
from okfast.memory import FileMemoryStore, MemoryEntry, Tier
from okfast.memory.scope import Scope
from okfast.scoring import fuse
from test_bm25f import SETTINGS, catalog, concepts, files_of, text


def reference_fusion(counted: list[str], ranked: list[str], k: int) -> list[tuple[str, float]]:
    """§12.10 read literally: 1/(k + rank) per list a concept is in, summed
    weighted count first; by score descending, then id in ordinal order."""
    score: dict[str, float] = {}
    for ranking in (counted, ranked):
        for r, cid in enumerate(ranking, start=1):
            score[cid] = score.get(cid, 0.0) + 1.0 / (k + r)
    return sorted(score.items(), key=lambda x: (-x[1], x[0]))


def test_a_fusion_tie_is_broken_by_ordinal_order_not_id_order(tmp_path: Path) -> None:
    # Each first in one scorer's list and second in the other's: equal shares.
    filler = " ".join(f"w{i}" for i in range(300))
    long_one = f"---\ntype: T\ntitle: Dough\ndescription: dough\n---\ndough {filler}\n"
    short_one = "---\ntype: T\ntitle: Other\ntags: [dough]\n---\n" + "dough " * 10 + "\n"
    b = Bundle.load(
        write_bundle(tmp_path / "b", {"a-b.md": long_one, "a/b.md": short_one}), cache=False
    )
    assert b.concept_ids == ("a/b", "a-b")  # id order (docs/spec.md §1.2)
    assert [h.concept_id for h in b.search("dough")] == ["a-b", "a/b"]
    assert [h.concept_id for h in b.search("dough", scorer="bm25f")] == ["a/b", "a-b"]
    fused = b.search("dough", scorer="fusion")
    assert fused[0].score == fused[1].score
    assert [h.concept_id for h in fused] == ["a-b", "a/b"]  # "-" < "/"


@SETTINGS
@given(concepts, text(4), st.integers(1, 100), st.sampled_from([None, "english"]))
def test_bundle_fusion_is_the_reciprocal_rank_of_both_scorers(
    cs: list[tuple[str, list[str], str, str]], q: str, k: int, language: str | None
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        b = Bundle.load(write_bundle(Path(tmp) / "b", files_of(cs)), cache=False, language=language)
        p = BM25FParams(language=language)
        counted = [h.concept_id for h in b.search(q)]
        ranked = [h.concept_id for h in b.search(q, scorer="bm25f", bm25f=p)]
        got = [(h.concept_id, h.score) for h in b.search(q, scorer="fusion", bm25f=p, rrf_k=k)]
        assert got == reference_fusion(counted, ranked, k)
        for limit in (0, 1, 2):
            top = b.search(q, scorer=Scorer.FUSION, bm25f=p, rrf_k=k, limit=limit)
            assert [(h.concept_id, h.score) for h in top] == got[:limit]


@SETTINGS
@given(concepts, concepts, text(4), st.integers(1, 100))
def test_a_resolve_fuses_each_source_with_the_catalog_statistics(
    a: list[tuple[str, list[str], str, str]],
    b: list[tuple[str, list[str], str, str]],
    q: str,
    k: int,
) -> None:
    """Each source's fused list is its weighted-count list fused with its
    BM25F list scored with the catalog's statistics (§12.4); merged orders
    the fused scores across sources."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_bundle(root / "A", files_of(a, "a/"))
        write_bundle(root / "B", files_of(b, "b/"))
        cat = catalog(root, {"A": "./A", "B": "./B"})
        if not q.strip():
            return
        r = Resolver(cat, default_strategy="merged", default_rrf_k=k)
        counted = r.search(Query(q, strategy="grouped")).passages.keys()
        ranked = r.search(Query(q, scorer="bm25f")).passages.keys()
        want = []
        for sid in ("A", "B"):
            fused = reference_fusion(
                [c for s, c, _ in counted if s == sid],
                [c for s, c, _ in sorted(ranked, key=lambda x: (-x[2], x[1])) if s == sid],
                k,
            )
            want.extend((sid, c, sc) for c, sc in fused)
        got = r.search(Query(q, scorer="fusion")).passages.keys()
        assert sorted(got, key=lambda x: (-x[2], x[0], x[1])) == got
        assert sorted(got) == sorted(want)


@pytest.mark.parametrize(
    "trim",
    [{"min_score": 0.5}, {"limit": 0}, {"stale_policy": "strict"}],
    ids=["min_score", "limit", "stale"],
)
def test_fusion_of_stop_words_alone_is_no_matches_once_found(
    tmp_path: Path, trim: dict[str, object]
) -> None:
    """A query of stop words has no BM25F token, but the weighted count's
    list finds `the`: what a filter then takes leaves NoMatches, not
    NoQueryTokens (docs/spec.md §12.10)."""
    write_bundle(
        tmp_path / "A",
        {"c.md": "---\ntype: T\ntitle: the\nstale_after: 2000-01-01\n---\nthe\n"},
    )
    r = Resolver(catalog(tmp_path, {"A": "./A"}))
    p = BM25FParams(language="english", stop_words=True)
    found = r.search(Query("the", scorer="fusion", bm25f=p))
    assert [c for _, c, _ in found.passages.keys()] == ["c"]
    c = r.search(Query("the", scorer="fusion", bm25f=p, **trim))  # type: ignore[arg-type]
    assert len(c.passages) == 0
    assert [d.code for d in c.diagnostics] == ["NoMatches"]
    nothing = r.search(Query("the", scorer="bm25f", bm25f=p))
    assert [d.code for d in nothing.diagnostics] == ["NoQueryTokens"]
    unfound = r.search(Query("was", scorer="fusion", bm25f=p))
    assert [d.code for d in unfound.diagnostics] == ["NoQueryTokens"]


def test_fusion_explains_both_rankings_and_excerpts_like_bm25f(tmp_path: Path) -> None:
    root = write_bundle(
        tmp_path / "b",
        files_of([("Vacuum retention", ["data"], "How long files stay", "intro\nretain files")]),
    )
    cat = catalog(tmp_path, {"A": "./b"})
    ctx = Resolver(cat, default_scorer="fusion").search(Query("retention of files", explain=True))
    (p,) = ctx.passages
    assert p.score == pytest.approx(2 / 61)
    x = p.explanation
    assert x is not None
    assert {m.term for m in x.matches if m.fields} == {"retention", "files"}
    assert {t.token for t in x.bm25f if t.score > 0} == {"RETENTION", "FILES"}
    hit = Bundle.load(root, cache=False).search("retention of files", scorer="bm25f")[0]
    assert p.excerpt == hit.excerpt


def test_a_passage_no_bm25f_token_adds_to_explains_by_the_weighted_count(
    tmp_path: Path,
) -> None:
    """docs/spec.md §12.5, §10.2: a title weighted so little that its token's
    score rounds to 0 adds nothing, so it is not listed, and the passage (in
    the weighted count's list only) is explained by that count's terms."""
    write_bundle(
        tmp_path / "b",
        {
            "one.md": "---\ntype: T\ntitle: zeta\n---\norders\n",
            "two.md": "---\ntype: T\ntitle: other\n---\nnothing\n",
        },
    )
    cat = catalog(tmp_path, {"a": "./b"})
    r = Resolver(cat, default_bm25f=BM25FParams(title_weight=5e-324, title_b=0.0))
    (p,) = r.search(Query("zeta orders", scorer="bm25f", explain=True)).passages
    assert p.explanation is not None
    assert [t.token for t in p.explanation.bm25f] == ["ORDERS"] and p.score > 0
    (f,) = r.search(Query("zeta", scorer="fusion", explain=True)).passages
    assert f.explanation is not None and f.explanation.bm25f == ()
    assert [(m.term, m.fields, m.weight) for m in f.explanation.matches] == [
        ("zeta", ("title",), 3)
    ]


def test_fusion_in_memory_reads(tmp_path: Path) -> None:
    (tmp_path / "mem").mkdir()
    store = FileMemoryStore({Tier.USER: tmp_path / "mem"})
    scope = Scope("t", "u")
    entry = MemoryEntry(
        "editor",
        {"type": "Preference", "title": "Editor", "description": "tools"},
        "uses vim daily\n",
    )
    assert store.write(scope, entry, Tier.USER).written
    got = store.read(scope, "vim editor", scorer="fusion")
    assert len(got.passages) == 1
    assert got.passages[0].concept_id.endswith("/editor")
    assert got.passages[0].score == pytest.approx(2 / 61)


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_a_bad_rrf_k_is_refused(tmp_path: Path, k: object) -> None:
    b = Bundle.load(write_bundle(tmp_path / "b", files_of([("a", [], "", "a")])), cache=False)
    with pytest.raises(InvalidArgumentError, match="rrf_k"):
        b.search("a", scorer="fusion", rrf_k=k)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="rrf_k"):
        Query("a", rrf_k=k)  # type: ignore[arg-type]


@pytest.mark.parametrize("k", [0, -1, "60", math.nan, pytest.param(10**400, id="10**400")])
@pytest.mark.parametrize("scorer", ["weighted_count", "bm25f", "fusion"])
def test_a_bad_rrf_k_is_refused_whatever_the_scorer(tmp_path: Path, k: object, scorer: str) -> None:
    # As Query refuses it (docs/spec.md §5.1): not ignored until a fusion search.
    b = Bundle.load(write_bundle(tmp_path / "b", files_of([("a", [], "", "a")])), cache=False)
    for search in (
        lambda: b.search("a", scorer=scorer, rrf_k=k),  # type: ignore[arg-type]
        lambda: b.search_arrays("a", scorer=scorer, rrf_k=k),  # type: ignore[arg-type]
        lambda: b.search_many(["a"], scorer=scorer, rrf_k=k),  # type: ignore[arg-type]
        lambda: b.search_arrays_many([], scorer=scorer, rrf_k=k),  # type: ignore[arg-type]
    ):
        with pytest.raises(InvalidArgumentError, match="rrf_k"):
            search()


@given(st.data(), st.integers(1, 400), st.integers(1, 100))
def test_fuse_over_any_two_lists_is_the_literal_fusion(data: st.DataObject, n: int, k: int) -> None:
    # Lists short and long against the bundle's size: both ways fuse adds.
    ids = [f"c{p:04}" for p in range(n)]
    counted = data.draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n))
    ranked = data.draw(st.lists(st.integers(0, n - 1), unique=True, max_size=n))
    pos, score = fuse(
        np.array(counted, np.int32), np.array(ranked, np.int32), np.arange(n, dtype=np.uint32), k
    )
    want = reference_fusion([ids[p] for p in counted], [ids[p] for p in ranked], k)
    assert [(ids[p], s) for p, s in zip(pos.tolist(), score.tolist(), strict=True)] == want
    assert pos.dtype == np.int32 and score.dtype == np.float64
