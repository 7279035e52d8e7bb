"""What a resolution's search gathers before ordering (okfast.matches)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from conftest import write_bundle
from okfast import BM25FParams, Bundle
from okfast.catalog import Source
from okfast.matches import Matches, concat, no_tokens
from okfast.passages import SourceSnapshot


def empty() -> Matches:
    return Matches([], [], [], [], [], [], [], False)


def test_concat_keeps_source_order_and_is_typed_when_empty() -> None:
    f = empty()
    src, pos, score = concat(f)
    assert (src.dtype, pos.dtype, len(src), len(pos), len(score)) == (np.uint32, np.int32, 0, 0, 0)
    f.src += [np.array([0, 0], np.uint32), np.array([1], np.uint32)]
    f.pos += [np.array([3, 1], np.int32), np.array([0], np.int32)]
    f.score += [np.array([5.0, 2.0]), np.array([4.0])]
    src, pos, score = concat(f)
    assert (src.tolist(), pos.tolist(), score.tolist()) == ([0, 0, 1], [3, 1, 0], [5.0, 2.0, 4.0])


def test_unavailable_is_an_exclusion_and_an_error() -> None:
    f = empty()
    f.unavailable("kb", "gone")
    assert [(e.source_id, e.reason) for e in f.exclusions] == [("kb", "source-unavailable")]
    assert [(d.code, d.severity) for d in f.diagnostics] == [("SourceUnavailable", "error")]


def test_no_tokens_says_why_only_when_no_source_has_a_token(tmp_path: Path) -> None:
    write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\ntitle: Alpha\n---\nalpha\n"})
    src = Source("kb", "kb", directory=tmp_path / "kb")

    def searched(text: str, params: BM25FParams) -> Matches:
        b = Bundle.load(tmp_path / "kb", cache=False, language=params.language)
        f = empty()
        q = b.bm25f_query(text, params)
        f.searched.append(SourceSnapshot(src, b, q, b.bm25f_stats(q.tokens)))
        return f

    assert no_tokens(empty(), "x") is None
    assert no_tokens(searched("alpha", BM25FParams()), "alpha") is None
    d = no_tokens(searched("-- !!", BM25FParams()), "-- !!")
    assert d is not None and d.code == "NoQueryTokens" and "no word holds a letter" in d.message
    d = no_tokens(searched("the of", BM25FParams(language="english", stop_words=True)), "the of")
    assert d is not None and d.message == (
        "Query 'the of' has no tokens to score: every word is a stop word (THE, OF)."
    )
