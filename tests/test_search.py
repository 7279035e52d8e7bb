"""The scorer through the public API (SPEC §3): terms, weights, order, excerpt, tag, limit."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import reference
from conftest import MakeBundle
from okfast import Bundle, Hit, InvalidArgumentError, OkfastError


def concept(title: str = "", desc: str = "", tags: str = "[]", body: str = "") -> str:
    return f"---\ntype: T\ntitle: {title}\ndescription: {desc}\ntags: {tags}\n---\n{body}"


@pytest.fixture
def bundle(make_bundle: MakeBundle) -> Bundle:
    return Bundle.load(
        make_bundle(
            {
                "orders.md": concept("Orders", "all orders", "[sales]", "An order is placed."),
                "reorder.md": concept("Reorder point", "", "[Stock]", "when to reorder stock"),
                "other.md": concept("Unrelated", "nothing", "[]", "plain text"),
                "x/deep.md": concept("", "", "[SALES]", "ORDERS in body only"),
            }
        )
    )


def test_weights_and_substring_presence(bundle: Bundle) -> None:
    hits = bundle.search("order")
    assert [(h.concept_id, h.score) for h in hits] == [
        ("orders", 6),  # title 3 + tags/desc 2 + body 1
        ("reorder", 4),  # title 3 + body 1
        ("x/deep", 1),
    ]
    assert hits[0] == Hit("orders", 6, "Orders", "An order is placed.", "orders.md")


def test_duplicate_terms_count_and_no_stop_words(bundle: Bundle) -> None:
    assert bundle.search("order order")[0].score == 12
    # No stop words: a one-letter term is a term like any other ('plain' holds 'a').
    assert "other" in [h.concept_id for h in bundle.search("a")]
    assert [h.concept_id for h in bundle.search("ORDERS")] == ["orders", "x/deep"]


def test_ties_break_by_id_order(make_bundle: MakeBundle) -> None:
    b = Bundle.load(make_bundle({n: concept("same") for n in ["b.md", "a-b.md", "a/b.md"]}))
    assert [h.concept_id for h in b.search("same")] == ["a/b", "a-b", "b"]


def test_blank_query_has_no_results(bundle: Bundle) -> None:
    for q in ["", "   ", "\u3000\t\n"]:
        assert bundle.search(q) == []
        pos, scores = bundle.search_arrays(q)
        assert len(pos) == len(scores) == 0


def test_unicode_folding_and_white_space(make_bundle: MakeBundle) -> None:
    b = Bundle.load(
        make_bundle(
            {
                "de.md": concept("Straße", body="GROẞ"),
                "tr.md": concept("ıstanbul"),
                "gr.md": concept("λόγος"),
                "nb.md": concept("foo\u00a0bar"),
            }
        )
    )
    assert [h.concept_id for h in b.search("STRAßE")] == ["de"]
    assert b.search("strasse") == []  # ß stays ß: fold is one character to one
    assert [h.concept_id for h in b.search("ISTANBUL")] == ["tr"]  # ı → I
    assert [h.concept_id for h in b.search("ΛΌΓΟΣ")] == ["gr"]  # ς → Σ
    assert [h.concept_id for h in b.search("foo\u2003bar")] == ["nb"]  # two terms, NBSP splits


def test_the_unicode_data_is_the_pinned_one_not_pythons(make_bundle: MakeBundle) -> None:
    """docs/spec.md, text terms: fold uses Unicode 17.0 on every machine.
    U+A7DB (assigned in Unicode 16) folds to U+A7DA here; Python 3.11's
    Unicode 14 leaves it as it is, so its str.upper is no reference there."""
    b = Bundle.load(make_bundle({"c.md": concept("lambda \ua7db")}))
    for scorer in ("weighted_count", "bm25f"):
        assert [h.concept_id for h in b.search("\ua7da", scorer=scorer)] == ["c"]


def test_the_word_boundaries_are_the_pinned_crates(make_bundle: MakeBundle) -> None:
    """docs/spec.md §12.1: `a.` + ZWJ + an Extended_Pictographic character is
    one word as unicode-segmentation 1.13.3 segments it (two by UAX #29), so
    the concept holding it matches that word's token and scores above one
    holding only `a`; by the standard both would hold just `A` and tie."""
    b = Bundle.load(
        make_bundle({"c.md": concept("t", body="a.\u200d\u2122"), "d.md": concept("t", body="a")})
    )
    hits = b.search("a.\u200d\u2122", scorer="bm25f")
    assert [h.concept_id for h in hits] == ["c", "d"]
    assert hits[0].score > hits[1].score


def test_excerpt(make_bundle: MakeBundle) -> None:
    body = "\n   \n# Title line\n  second LINE with Needle  \nthird needle"
    b = Bundle.load(make_bundle({"e.md": concept("t", body=body)}))
    assert b.search("needle")[0].excerpt == "second LINE with Needle"
    assert b.search("t")[0].excerpt == "# Title line"
    assert b.excerpt("e", "zzz") == ""


def test_tag_filter(bundle: Bundle) -> None:
    assert [h.concept_id for h in bundle.search("order", tag="Sales")] == ["orders", "x/deep"]
    assert bundle.search("order", tag="nope") == []
    assert len(bundle.search("order", tag="  ")) == 3  # blank tag = no filter
    assert [h.concept_id for h in bundle.search("order", tag="stock")] == ["reorder"]


def test_limit_and_arrays_agree(bundle: Bundle) -> None:
    full = bundle.search("order")
    pos, scores = bundle.search_arrays("order")
    assert pos.dtype == np.int32 and scores.dtype == np.uint32
    assert [bundle.concept_ids[p] for p in pos] == [h.concept_id for h in full]
    assert scores.tolist() == [h.score for h in full]
    for k in range(0, 5):
        assert bundle.search("order", limit=k) == full[:k]
        p2, s2 = bundle.search_arrays("order", limit=k)
        assert p2.tolist() == pos[:k].tolist() and s2.tolist() == scores[:k].tolist()


def test_negative_limit_is_a_value_error(bundle: Bundle) -> None:
    with pytest.raises(InvalidArgumentError) as e:
        bundle.search("order", limit=-1)
    assert isinstance(e.value, ValueError) and isinstance(e.value, OkfastError)
    with pytest.raises(ValueError):
        bundle.search_arrays("order", limit=-5)


def test_limit_selects_exact_top_k_among_many_ties(make_bundle: MakeBundle) -> None:
    files = {f"c{i:03d}.md": concept(f"w{i % 7}", body="w" * (i % 3)) for i in range(300)}
    b = Bundle.load(make_bundle(files))
    ref = reference.load_bundle(str(b.root))
    want = [(cid, s) for cid, s, _ in reference.search(ref, "w w1 ww")]
    got = [(h.concept_id, h.score) for h in b.search("w w1 ww")]
    assert got == want
    for k in [1, 5, 17, 99, 250, 299, 300, 1000]:
        pos, sc = b.search_arrays("w w1 ww", limit=k)
        assert [(b.concept_ids[p], s) for p, s in zip(pos, sc, strict=True)] == want[:k]


def test_eight_threads_search_one_bundle(make_bundle: MakeBundle) -> None:
    files = {f"d{i % 10}/c{i}.md": concept(f"t{i}", body=f"alpha beta{i % 13}") for i in range(400)}
    b = Bundle.load(make_bundle(files))
    queries = ["alpha", "beta1", "t3 beta", "ALPHA beta12", "t", "beta"]
    expected = {q: b.search(q) for q in queries}
    barrier = threading.Barrier(8)

    def worker(i: int) -> bool:
        barrier.wait()
        ok = True
        for r in range(40):
            q = queries[(i + r) % len(queries)]
            ok &= b.search(q) == expected[q]
            pos, _ = b.search_arrays(q, limit=5)
            ok &= [b.concept_ids[p] for p in pos] == [h.concept_id for h in expected[q][:5]]
        return ok

    with ThreadPoolExecutor(8) as ex:
        assert all(ex.map(worker, range(8)))


def test_long_queries_rank_exactly(make_bundle: MakeBundle) -> None:
    # 70 terms: scores can exceed 256, which takes the decode-and-sort path.
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
    files = {
        f"c{i:02d}.md": concept(
            " ".join(words[: i % 8]), " ".join(words[i % 5 :]), "[x]", " ".join(words[i % 3 :]) * 2
        )
        for i in range(40)
    }
    b = Bundle.load(make_bundle(files))
    ref = reference.load_bundle(str(b.root))
    q = " ".join(words * 9)[: 70 * 6]
    want = [(cid, s) for cid, s, _ in reference.search(ref, q)]
    assert max(s for _, s in want) > 256
    assert [(h.concept_id, h.score) for h in b.search(q)] == want
    pos, sc = b.search_arrays(q, limit=7)
    assert [(b.concept_ids[p], s) for p, s in zip(pos, sc, strict=True)] == want[:7]


def test_a_numpy_integer_limit_is_a_limit(bundle: Bundle) -> None:
    """docs/spec.md §3: a whole number is any integer Python indexes with."""
    assert bundle.search("order", limit=np.int64(2)) == bundle.search("order", limit=2)
    assert [len(bundle.search_arrays("order", limit=np.uint8(1))[0])] == [1]
