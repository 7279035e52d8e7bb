"""The arguments every search checks (docs/spec.md §3.7, §5.1, §12.9): a bad
one is the same clear error on every path — a bundle's four searches under
each scorer, the lower-level BM25F searches, a Query — never what a native
conversion happens to raise; a limit beyond every position keeps all."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import write_bundle
from okfast import Bundle, InvalidArgumentError, InvalidArgumentTypeError, Query

PAGE = "---\ntype: T\ntitle: Oven {i}\ntags: [bread]\n---\nThe oven runs hot {i}.\n"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    root = tmp_path_factory.mktemp("args") / "b"
    return Bundle.load(
        write_bundle(root, {f"c{i}.md": PAGE.format(i=i) for i in range(5)}), cache=False
    )


def searches(b: Bundle) -> list[Callable[..., Any]]:
    """Each search of one text, under each scorer."""
    out: list[Callable[..., Any]] = []
    for scorer in ("weighted_count", "bm25f", "fusion"):
        out += [
            lambda t, s=scorer, **kw: b.search(t, scorer=s, **kw),
            lambda t, s=scorer, **kw: b.search_arrays(t, scorer=s, **kw),
            lambda t, s=scorer, **kw: b.search_many(["oven", t], scorer=s, **kw),
            lambda t, s=scorer, **kw: b.search_arrays_many(["oven", t], scorer=s, **kw),
        ]
    return out


@pytest.mark.parametrize("text", [None, b"oven", 3])
def test_a_query_that_is_not_text_is_a_type_error(bundle: Bundle, text: object) -> None:
    for search in searches(bundle):
        with pytest.raises(InvalidArgumentTypeError, match="the query must be text"):
            search(text)
    with pytest.raises(InvalidArgumentTypeError):
        Query(text)  # type: ignore[arg-type]


@pytest.mark.parametrize("texts", [None, 3, iter(["oven"])])
def test_a_batch_that_is_not_a_sequence_is_a_type_error(bundle: Bundle, texts: object) -> None:
    for scorer in ("weighted_count", "bm25f"):
        for many in (bundle.search_many, bundle.search_arrays_many):
            with pytest.raises(InvalidArgumentTypeError, match="must be a sequence of queries"):
                many(texts, scorer=scorer)  # type: ignore[arg-type]


@pytest.mark.parametrize("concept_id", [None, 3, b"c1"])
def test_a_concept_id_that_is_not_text_is_a_type_error(bundle: Bundle, concept_id: object) -> None:
    for read in (bundle.concept, lambda c: bundle.excerpt(c, "oven")):
        with pytest.raises(InvalidArgumentTypeError, match="a concept id is text"):
            read(concept_id)


def test_a_lone_surrogate_is_refused_in_a_query_or_a_tag(bundle: Bundle) -> None:
    for search in searches(bundle):
        with pytest.raises(InvalidArgumentError, match=r"lone surrogate \(U\+DC80\)"):
            search("oven \udc80")
        with pytest.raises(InvalidArgumentError, match="tag is not valid Unicode"):
            search("oven", tag="\udc80")
    for kw in ({"text": "oven \udc80"}, {"text": "oven", "tag": "b\ud800"}):
        with pytest.raises(InvalidArgumentError, match="lone surrogate"):
            Query(**kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("limit", [1.5, "3", True])
def test_a_limit_that_is_not_a_whole_number_is_a_type_error(bundle: Bundle, limit: object) -> None:
    for search in searches(bundle):
        with pytest.raises(InvalidArgumentTypeError, match="limit must be a whole number"):
            search("oven", limit=limit)
    with pytest.raises(InvalidArgumentTypeError):
        Query("oven", limit=limit)  # type: ignore[arg-type]


def test_a_limit_past_every_position_keeps_every_match(bundle: Bundle) -> None:
    for search in searches(bundle):
        for huge in (2**31, 2**63, 2**70):
            assert repr(search("oven", limit=huge)) == repr(search("oven"))
        with pytest.raises(InvalidArgumentError, match="limit must be >= 0"):
            search("oven", limit=-1)


def test_bm25f_parameters_must_be_bm25f_params(bundle: Bundle) -> None:
    for search in searches(bundle):
        with pytest.raises(InvalidArgumentTypeError, match="bm25f must be a BM25FParams"):
            search("oven", bm25f={"k1": 1.0})
    # The same mistake is the same error where a query or a resolver takes it.
    from okfast import Catalog, Query, Resolver

    with pytest.raises(InvalidArgumentTypeError, match="Query.bm25f must be a BM25FParams"):
        Query("oven", bm25f={"k1": 1.0})  # type: ignore[arg-type]
    catalog = Catalog.load(Path(__file__).parent.parent / "examples" / "catalog.json")
    with pytest.raises(InvalidArgumentTypeError, match="default_bm25f must be a BM25FParams"):
        Resolver(catalog, default_bm25f={"k1": 1.0})  # type: ignore[arg-type]


def test_a_min_score_too_large_for_a_float_is_refused() -> None:
    for score in (10**400, float("inf"), float("nan"), -1):
        with pytest.raises(InvalidArgumentError, match="min_score must be a finite number"):
            Query("oven", min_score=score)
    assert Query("oven", min_score=10**300).min_score == 10**300


def test_a_min_score_is_any_real_number(tmp_path: Path) -> None:
    """docs/spec.md §5.1, §12.7: numpy's and the standard library's real
    numbers are numbers (stored as int or float); a string is a type error."""
    import fractions

    import numpy as np
    from okfast import BM25FParams

    for given, kept in (
        (np.int64(1), 1),
        (np.uint8(2), 2),
        (np.float32(0.5), 0.5),
        (fractions.Fraction(1, 2), 0.5),
        (fractions.Fraction(4, 2), 2),
        (np.float64(0.25), 0.25),
    ):
        q = Query("oven", min_score=given)
        assert q.min_score == kept and type(q.min_score) is type(kept)
    for bad in ("1", b"1", [1], True):
        with pytest.raises(InvalidArgumentTypeError, match="min_score must be a finite number"):
            Query("oven", min_score=bad)
    with pytest.raises(InvalidArgumentError, match="min_score"):
        Query("oven", min_score=fractions.Fraction(10**400))
    # A search with each is the search with its int or float.
    from conftest import make_catalog
    from okfast import Resolver

    cat = make_catalog(
        tmp_path,
        {"b": {f"c{i}.md": PAGE.format(i=i) for i in range(3)}},
        [{"id": "b", "path": "b"}],
    )
    r = Resolver(cat)
    for scorer in ("weighted_count", "bm25f"):
        ctx = r.search(Query("oven", scorer=scorer, min_score=fractions.Fraction(1, 10**6)))
        same = r.search(Query("oven", scorer=scorer, min_score=1e-6))
        assert ctx.passages and list(ctx.passages) == list(same.passages)
        assert ctx.digest == same.digest
    # The BM25F parameters take the same numbers, stored as int or float.
    p = BM25FParams(k1=np.float32(1.5), title_b=fractions.Fraction(1, 2), body_weight=np.int64(2))
    assert (p.k1, p.title_b, p.body_weight) == (1.5, 0.5, 2)
    assert p == BM25FParams(k1=1.5, title_b=0.5, body_weight=2)


def test_the_command_line_refuses_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", {"c.md": PAGE.format(i=0)})
    for scorer in ("weighted_count", "bm25f", "fusion"):
        done = subprocess.run(
            [sys.executable, "-m", "okfast", "search", str(root), b"\xff", "--scorer", scorer],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("okfast: the query is not valid Unicode text")
        assert done.stderr.count("\n") == 1
