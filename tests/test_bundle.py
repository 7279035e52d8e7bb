"""Bundle loading (SPEC §1–§2): walk, ids, reading, fields, every diagnostic code."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import okfast
import pytest
import strategies as S
from conftest import MakeBundle, write_bundle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from okfast import (
    Bundle,
    BundleNotFoundError,
    ConceptNotFoundError,
    InvalidArgumentError,
    OkfastError,
)
from okfast.bundle import Bm25fStats, query_terms
from okfast.governance import id_key
from okfast.scoring import BM25FParams

FM = "---\ntype: Note\ntitle: {t}\n---\nbody of {t}\n"


def codes(b: Bundle) -> list[tuple[str, str | None, str]]:
    return [(d.code, d.path, d.severity) for d in b.diagnostics]


def test_walk_order_ids_reserved_hidden(make_bundle: MakeBundle) -> None:
    root = make_bundle(
        {
            "a.md": FM.format(t="a"),
            "a/b.md": FM.format(t="ab"),
            "a-b.md": FM.format(t="a-b"),
            "a.b.md": FM.format(t="a.b"),
            "B.md": FM.format(t="B"),
            "index.md": "---\nokf_version: '0.2'\n---\n",
            "log.md": "log",
            "sub/index.md": "not a concept",
            "sub/log.md": "not a concept",
            ".hidden.md": FM.format(t="h"),
            ".git/x.md": FM.format(t="g"),
            "notes.txt": "ignored",
            "UPPER.MD": "ignored: suffix is case-sensitive",
            "ação.md": FM.format(t="ação"),
            "com espaço.md": FM.format(t="e"),
            "-x.md": FM.format(t="x"),
        }
    )
    b = Bundle.load(root)
    assert b.concept_ids == ("-x", "B", "a", "a/b", "a-b", "a.b", "ação", "com espaço")
    assert b.okf_version == "0.2"
    assert b.diagnostics == ()
    assert len(b) == 8
    assert "a/b" in b and "sub/index" not in b


def test_concept_fields(make_bundle: MakeBundle) -> None:
    text = (
        "\ufeff---\r\n"
        "type: Policy\r\n"
        "title: 2024\r\n"
        "description: Step 1: do it\r\n"
        "tags: [alpha, 'Beta Gamma', ~]\r\n"
        "resource: https://example.invalid/x\r\n"
        "status: deprecated\r\n"
        "stale_after: 2026-01-15T09:00:00+02:00\r\n"
        "generated: {by: tool:gen, at: 2026-01-01T00:00:00Z}\r\n"
        "verified:\r\n"
        "  - by: tool:lint\r\n"
        "    at: x\r\n"
        "  - by: human:ana\r\n"
        "version: 0012\r\n"
        "owner: team\r\n"
        "---\r\n"
        "\r\n"
        "# Heading\r\n"
        "text\r\n"
    )
    b = Bundle.load(make_bundle({"p.md": text}))
    c = b.concept("p")
    assert c.type == "Policy"
    assert c.title == "2024"
    assert c.description == "Step 1: do it"
    assert c.tags == ("alpha", "Beta Gamma")
    assert c.resource == "https://example.invalid/x"
    assert (c.status, c.status_known) == ("deprecated", True)
    assert c.stale_after == datetime(2026, 1, 15, 7, 0, tzinfo=timezone.utc)
    assert c.generated == okfast.Actor("tool:gen", "2026-01-01T00:00:00Z")
    assert c.verified == (okfast.Actor("tool:lint", "x"), okfast.Actor("human:ana", None))
    assert c.trust_tier == "human_reviewed"
    assert c.body == "# Heading\ntext"
    assert c.frontmatter["version"] == "0012"
    assert c.extra == {"version": "0012", "owner": "team"}
    assert list(c.frontmatter)[:3] == ["type", "title", "description"]
    assert c.is_stale_at(datetime(2026, 1, 15, 7, 0, tzinfo=timezone.utc))
    assert not c.is_stale_at(datetime(2026, 1, 15, 6, 59, tzinfo=timezone.utc))
    # An aware instant only, as the resolver's clock (docs/spec.md §2.2, §2.3):
    # a naive one failed with Python's comparison error here, and passed
    # unseen for a concept without stale_after.
    with pytest.raises(InvalidArgumentError, match="aware datetime, got a naive one"):
        c.is_stale_at(datetime(2026, 1, 15, 7, 0))
    with pytest.raises(okfast.InvalidArgumentTypeError, match="now must be an aware datetime"):
        c.is_stale_at("2026-01-15")  # type: ignore[arg-type]
    # A hashable value (docs/spec.md §1.4), though it holds dicts: equal
    # concepts hash alike, and a fresh one's dicts are its own.
    again = b.concept("p")
    assert again == c and again is not c and hash(again) == hash(c)
    assert len({c, again}) == 1
    again.frontmatter["owner"] = "other"
    assert again != c and b.concept("p") == c


def test_trust_tiers_and_v01_fallback(make_bundle: MakeBundle) -> None:
    b = Bundle.load(
        make_bundle(
            {
                "none.md": "---\ntype: T\n---\n",
                "machine.md": "---\ntype: T\nverified:\n  by: tool:x\n  at: y\n---\n",
                "human.md": "---\ntype: T\nverified: [{by: human:z}]\n---\n",
                "legacy.md": "---\ntype: T\ntimestamp: 2025-03-01T10:00:00Z\n---\n",
            }
        )
    )
    assert b.concept("none").trust_tier == "unverified"
    assert b.concept("machine").trust_tier == "machine_confirmed"
    assert b.concept("human").trust_tier == "human_reviewed"
    assert b.concept("legacy").generated == okfast.Actor(None, "2025-03-01T10:00:00Z")


def test_no_frontmatter_body_is_verbatim(make_bundle: MakeBundle) -> None:
    b = Bundle.load(make_bundle({"n.md": "plain\r\ntext\r\n", "e.md": ""}))
    assert b.concept("n").body == "plain\r\ntext\r\n"
    assert b.concept("e").body == ""
    assert codes(b) == [("MissingType", "e.md", "warning"), ("MissingType", "n.md", "warning")]


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"bad\x01.md": FM.format(t="x")}, ("InvalidConceptId", "bad\x01.md", "error")),
        ({"back\\slash.md": FM.format(t="x")}, ("InvalidConceptId", "back\\slash.md", "error")),
        ({"d\x7f/x.md": FM.format(t="x")}, ("InvalidConceptId", "d\x7f/x.md", "error")),
        ({"u.md": b"---\ntype: T\n---\n\xff\xfe"}, ("InvalidUtf8", "u.md", "error")),
        ({"f.md": "---\ntype: T\n"}, ("InvalidFrontmatter", "f.md", "error")),
        ({"y.md": "---\na: &x 1\n---\n"}, ("InvalidFrontmatter", "y.md", "error")),
        ({"m.md": "---\ntitle: t\n---\n"}, ("MissingType", "m.md", "warning")),
        (
            {"s.md": "---\ntype: T\nstale_after: soon\n---\n"},
            ("MalformedStaleAfter", "s.md", "warning"),
        ),
    ],
)
def test_each_diagnostic_code(
    make_bundle: MakeBundle, files: dict[str, str | bytes], expected: tuple[str, str, str]
) -> None:
    b = Bundle.load(make_bundle({**files, "ok.md": FM.format(t="ok")}))
    assert codes(b) == [expected]
    assert "ok" in b  # one bad file never stops the bundle
    d = b.diagnostics[0]
    assert d.message and d.source_id is None


def test_diagnostic_messages_name_what_to_fix(make_bundle: MakeBundle) -> None:
    b = Bundle.load(
        make_bundle(
            {
                "a.md": "---\ntype: T\nb: 1\nc: *alias\n---\n",
                "u.md": b"---\ntype: T\n---\nok\xc3",
                "s.md": "---\ntype: T\nstale_after: [1]\n---\n",
                "t.md": "---\ntype: T\nstale_after: next week\n---\n",
            }
        )
    )
    msgs = {d.path: d.message for d in b.diagnostics}
    assert msgs["a.md"] == "Invalid YAML frontmatter: YAML alias (*) at line 3 is not supported"
    assert msgs["u.md"] == (
        "File is not valid UTF-8 (first invalid byte at offset 18); re-save it as UTF-8"
    )
    assert msgs["s.md"] == "stale_after is not a date; the concept is treated as never stale"
    assert msgs["t.md"].startswith('stale_after "next week" is not an ISO 8601 date')


def test_file_too_large(make_bundle: MakeBundle) -> None:
    big = b"---\ntype: T\n---\n" + b"x" * (16 * 1024 * 1024)
    b = Bundle.load(make_bundle({"big.md": big, "ok.md": FM.format(t="ok")}))
    assert codes(b) == [("FileTooLarge", "big.md", "error")]
    assert str(len(big)) in b.diagnostics[0].message


def test_exactly_16_mib_loads(make_bundle: MakeBundle) -> None:
    head = b"---\ntype: T\n---\n"
    data = head + b"y" * (16 * 1024 * 1024 - len(head))
    b = Bundle.load(make_bundle({"edge.md": data}))
    assert b.diagnostics == () and len(b) == 1


def test_symlinks_are_never_followed(make_bundle: MakeBundle, tmp_path: Path) -> None:
    outside = make_bundle({"secret.md": FM.format(t="secret")})
    root = make_bundle({"ok.md": FM.format(t="ok")})
    os.symlink(outside / "secret.md", root / "link.md")
    os.symlink(outside, root / "dirlink")
    b = Bundle.load(root)
    assert b.concept_ids == ("ok",)
    assert codes(b) == [
        ("SymlinkSkipped", "dirlink", "warning"),
        ("SymlinkSkipped", "link.md", "warning"),
    ]


def test_non_utf8_file_name(make_bundle: MakeBundle) -> None:
    root = make_bundle({"ok.md": FM.format(t="ok")})
    with open(os.path.join(os.fsencode(root), b"bad\xff.md"), "wb") as f:
        f.write(FM.format(t="x").encode())
    b = Bundle.load(root)
    assert [d.code for d in b.diagnostics] == ["InvalidConceptId"]
    assert "not valid UTF-8" in b.diagnostics[0].message
    assert b.concept_ids == ("ok",)


def test_diagnostics_sorted_by_path_in_id_order(make_bundle: MakeBundle) -> None:
    b = Bundle.load(
        make_bundle(
            {
                "z.md": "---\ntype: T\n",
                "a-b.md": "---\n---\n",
                "a/b.md": "---\nstale_after: x\n---\n",
            }
        )
    )
    assert codes(b) == [
        ("MissingType", "a/b.md", "warning"),
        ("MalformedStaleAfter", "a/b.md", "warning"),
        ("MissingType", "a-b.md", "warning"),
        ("InvalidFrontmatter", "z.md", "error"),
    ]


def test_missing_root_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(BundleNotFoundError) as e:
        Bundle.load(tmp_path / "nope")
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, OkfastError)
    f = tmp_path / "file.md"
    f.write_text("x")
    with pytest.raises(FileNotFoundError):
        Bundle.load(f)


def test_unknown_concept(make_bundle: MakeBundle) -> None:
    b = Bundle.load(make_bundle({"a.md": FM.format(t="a")}))
    with pytest.raises(ConceptNotFoundError) as e:
        b.concept("zzz")
    assert isinstance(e.value, KeyError) and isinstance(e.value, OkfastError)


def test_okf_version_absent_or_unreadable(make_bundle: MakeBundle) -> None:
    assert Bundle.load(make_bundle({"a.md": FM.format(t="a")})).okf_version is None
    broken = make_bundle({"index.md": "---\nokf_version: [\n---\n", "a.md": FM.format(t="a")})
    assert Bundle.load(broken).okf_version is None
    v01 = make_bundle({"index.md": "---\nokf_version: 0.1\n---\n# x\n"})
    assert Bundle.load(v01).okf_version == "0.1"


def test_refresh_equals_a_fresh_load(make_bundle: MakeBundle) -> None:
    root = make_bundle({"a.md": FM.format(t="a"), "d/b.md": FM.format(t="b"), "x.md": "---\n"})
    b = Bundle.load(root)
    assert b.refresh() is None
    (root / "a.md").write_text(FM.format(t="a changed, longer"))
    (root / "d" / "b.md").unlink()
    (root / "n.md").write_text(FM.format(t="new"))
    fresh = b.refresh()
    assert fresh is not None
    again = Bundle.load(root)
    assert fresh.concept_ids == again.concept_ids == ("a", "n")
    assert [fresh.concept(i) for i in fresh.concept_ids] == [
        again.concept(i) for i in again.concept_ids
    ]
    assert fresh.diagnostics == again.diagnostics
    assert fresh.search("changed") == again.search("changed")
    assert b.concept_ids == ("a", "d/b")  # the old snapshot never changes
    assert fresh.refresh() is None


DEEP_LOADER = """
import resource, sys
import okfast
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(64, hard), hard))
b = okfast.Bundle.load(sys.argv[1], cache=False)
print(len(b.concept_ids), len(b.diagnostics))
"""


def test_a_tree_deeper_than_the_descriptor_limit_loads(make_bundle: MakeBundle) -> None:
    """The walk closes a directory before walking its sub-directories: a tree
    150 levels deep loads under a 64-descriptor limit (one open directory per
    level would run out)."""
    deep = "/".join(["d"] * 150)
    root = make_bundle({f"{deep}/leaf.md": FM.format(t="leaf"), "top.md": FM.format(t="top")})
    r = subprocess.run(
        [sys.executable, "-c", DEEP_LOADER, str(root)], capture_output=True, text=True, check=False
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2", "0"]


# -- parts of a bundle (docs/spec.md §1.10) -------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files=S.bundle_files(), data=st.data())
def test_parts_are_the_whole_bundle_cut_at_their_bounds(
    files: dict[str, bytes], data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    tmp = tmp_path_factory.mktemp("parts")
    root = write_bundle(tmp / "b", dict(files))
    whole = Bundle.load(root, cache=False)
    ids = list(whole.concept_ids)
    # Bounds at concepts, between them, and anywhere (a bound need not be an id).
    bound = st.one_of(st.sampled_from(ids or ["a"]), S.segment, st.just(""))
    cuts = sorted(set(data.draw(st.lists(bound, max_size=4), label="cuts")), key=id_key)
    bounds: list[str | None] = [None, *cuts, None]
    cached = data.draw(st.booleans(), label="cached")
    parts = [
        Bundle.load(root, id_range=(lo, hi), cache=cached, cache_dir=tmp / "cache")
        for lo, hi in zip(bounds, bounds[1:], strict=False)
    ]
    assert [p.id_range for p in parts] == list(zip(bounds, bounds[1:], strict=False))
    assert [i for p in parts for i in p.concept_ids] == ids
    merged = sorted((d for p in parts for d in p.diagnostics), key=lambda d: id_key(d.path or ""))
    assert merged == list(whole.diagnostics)
    assert all(p.okf_version == whole.okf_version for p in parts)
    words = sorted({w for i in ids for w in whole.concept(i).body.split()})[:6] + ["title"]
    q = whole.bm25f_query(" ".join(words), BM25FParams())
    summed = Bm25fStats.sum([p.bm25f_stats(q.tokens) for p in parts])
    own = whole.bm25f_stats(q.tokens)
    assert (summed.n, summed.totals, summed.df) == (own.n, own.totals, own.df)
    # Scored with the whole bundle's statistics, each part gives its share of
    # the whole ranking, bit for bit; the weighted count likewise.
    for w in words:
        got = sorted(
            ((h.concept_id, h.score) for p in parts for h in p.search(w)),
            key=lambda x: (-x[1], id_key(x[0])),
        )
        assert got == [(h.concept_id, h.score) for h in whole.search(w)]
    pos, score = whole.search_bm25f(q, own, BM25FParams())
    mine = [
        (p.concept_ids[int(i)], float(s))
        for p in parts
        for i, s in zip(*p.search_bm25f(q, own, BM25FParams()), strict=True)
    ]
    want = [(ids[int(i)], float(s)) for i, s in zip(pos, score, strict=True)]
    assert sorted(mine, key=lambda x: (-x[1], id_key(x[0]))) == want


def test_a_part_refreshes_within_its_range(make_bundle: MakeBundle) -> None:
    root = make_bundle({f"{c}.md": FM.format(t=c) for c in "abcdef"})
    left = Bundle.load(root, id_range=(None, "c"), cache=False)
    right = Bundle.load(root, id_range=("c", None), cache=False)
    (root / "e.md").write_text(FM.format(t="e, edited at length"))
    (root / "a0.md").write_text(FM.format(t="a0"))
    fresh_left, fresh_right = left.refresh(), right.refresh()
    assert fresh_left is not None and fresh_left.concept_ids == ("a", "a0", "b")
    assert fresh_left.id_range == (None, "c")
    assert fresh_right is not None and fresh_right.concept_ids == ("c", "d", "e", "f")
    assert fresh_right.concept("e").title == "e, edited at length"
    assert fresh_left.refresh() is None and fresh_right.refresh() is None


@pytest.mark.parametrize("bad", [("a",), ["a", "b"], ("a", 3), (b"a", None), ("\ud800", None)])
def test_a_bad_id_range_is_refused(make_bundle: MakeBundle, bad: object) -> None:
    root = make_bundle({"a.md": FM.format(t="a")})
    with pytest.raises(InvalidArgumentError, match="id_range"):
        Bundle.load(root, id_range=bad, cache=False)  # type: ignore[arg-type]


def test_split_ranges_cut_a_bundle_into_nearly_equal_parts(make_bundle: MakeBundle) -> None:
    from okfast.bundle import split_ranges

    root = make_bundle({f"d{i % 3}/c{i:02d}.md": FM.format(t=i) for i in range(20)})
    whole = Bundle.load(root, cache=False).concept_ids
    for k in (1, 2, 3, 7, 20, 25):
        ranges = split_ranges(root, k)
        assert len(ranges) == k and ranges[0][0] is None and ranges[-1][1] is None
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
        sizes = [len(Bundle.load(root, id_range=r, cache=False)) for r in ranges]
        assert sum(sizes) == len(whole) and max(sizes) - min(sizes) <= 1
        # More parts than ids: some parts are empty, some with equal bounds.
        equal = [
            n for (lo, hi), n in zip(ranges, sizes, strict=True) if lo is not None and lo == hi
        ]
        assert all(n == 0 for n in equal)
        assert (k > len(whole)) == (0 in sizes)
    assert split_ranges(make_bundle({}), 2) == [(None, ""), ("", None)]
    for bad in (0, -1, True, 1.5):
        with pytest.raises(InvalidArgumentError, match="parts"):
            split_ranges(root, bad)  # type: ignore[arg-type]
    with pytest.raises(BundleNotFoundError):
        split_ranges(root / "missing", 2)


def test_a_part_lists_only_the_directories_its_range_reaches(
    make_bundle: MakeBundle, tmp_path: Path
) -> None:
    root = make_bundle(
        {f"d{i}/c{j}.md": FM.format(t=f"{i}{j}") for i in range(4) for j in range(3)}
    )
    part = Bundle.load(root, id_range=("d1/c2", "d2/c1"), cache_dir=tmp_path / "cache")
    assert part.concept_ids == ("d1/c2", "d2/c0")
    # The root, d1 and d2: d0 and d3 hold nothing of the range.
    assert part.cache_listed == 3
    whole = Bundle.load(root, cache_dir=tmp_path / "cache")
    assert whole.cache_listed == 5


def test_a_lone_surrogate_names_no_concept_and_no_query(tmp_path: Path) -> None:
    # No concept id holds one (docs/spec.md §1.2), so lookups find nothing;
    # query text holding one is refused as Query's is (§5.1).
    write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\ntitle: Alpha\n---\nalpha\n"})
    b = Bundle.load(tmp_path / "kb", cache=False)
    assert "\ud800" not in b and b.position("\ud800") is None
    with pytest.raises(ConceptNotFoundError):
        b.concept("\ud800")
    with pytest.raises(ConceptNotFoundError):
        b.excerpt("\udc80", "alpha")
    with pytest.raises(InvalidArgumentError, match="lone surrogate"):
        b.bm25f_query("al\ud800pha", BM25FParams())


def test_a_position_out_of_range_or_not_an_int_is_an_argument_error(tmp_path: Path) -> None:
    import numpy as np

    write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\ntitle: Alpha\n---\nalpha\n"})
    b = Bundle.load(tmp_path / "kb", cache=False)
    assert b.body_at(np.int32(0)) == b.body_at(0) == "alpha"
    reads = (b.body_at, b.authority_at, lambda p: b.explain_at(p, query_terms("alpha")))
    for read in reads:
        for bad in (-1, 1, 2**70):
            with pytest.raises(InvalidArgumentError, match="out of range 0..1"):
                read(bad)
        for wrong in (0.0, True, "0"):
            with pytest.raises(okfast.InvalidArgumentTypeError, match="a position is an int"):
                read(wrong)


def test_every_read_a_resolver_makes_refuses_a_wrong_type_as_okfasts_error(
    tmp_path: Path,
) -> None:
    """docs/spec.md §3.7, §8: the native binding's own conversion error (a
    bare TypeError) or an AttributeError from inside is never what a caller
    gets."""
    import numpy as np

    write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\ntitle: Alpha\n---\nalpha\n"})
    b = Bundle.load(tmp_path / "kb", cache=False)
    p = BM25FParams()
    q = b.bm25f_query("alpha", p)
    st = b.bm25f_stats(q.tokens)
    calls = {
        "a concept id is text": lambda: b.position(3),  # type: ignore[arg-type]
        "params must be a BM25FParams": lambda: b.bm25f_query("x", None),  # type: ignore[arg-type]
        "query must be a Bm25fQuery": lambda: b.search_bm25f("alpha", st, p),  # type: ignore[arg-type]
        "stats must be a Bm25fStats": lambda: b.explain_bm25f(0, q, None, p),  # type: ignore[arg-type]
        "a query must be a Bm25fQuery": lambda: b.search_bm25f_many(["x"], [st], p),  # type: ignore[list-item]
        "terms must be a QueryTerms": lambda: b.explain_at(0, "alpha"),  # type: ignore[arg-type]
        "terms must be a QueryTerms or Bm25fQuery": lambda: b.passage_fields(0, None),  # type: ignore[arg-type]
        "title_key must be text": lambda: b.pinned(np.array([0], np.int32), 3, "a"),  # type: ignore[arg-type]
    }
    for words, call in calls.items():
        with pytest.raises(okfast.InvalidArgumentTypeError, match=words):
            call()
    with pytest.raises(InvalidArgumentError, match="lone surrogate"):
        b.pinned(np.array([0], np.int32), "\ud800", "a")
    with pytest.raises(okfast.InvalidArgumentTypeError, match="native bundle must be a Bundle"):
        Bundle(None)  # type: ignore[arg-type]
    with pytest.raises(okfast.InvalidArgumentTypeError, match="texts must be a sequence"):
        b.search_many(b"alpha")  # type: ignore[arg-type]
    assert b.search_bm25f(q, st, p)[0].tolist() == [0]


def test_statistics_whose_sum_passes_u64_are_refused_not_wrapped() -> None:
    # Only hand-made statistics can get there; the sums must stay exact (§12.4).
    top = 2**64 - 1
    ok = Bm25fStats.sum([Bm25fStats(2, [1] * 4, [("A", 1)]), Bm25fStats(3, [1] * 4, [("A", 2)])])
    assert (ok.n, ok.totals, ok.df) == (5, [2] * 4, [("A", 3)])
    for big in (
        Bm25fStats(top, [1] * 4, []),
        Bm25fStats(1, [top] * 4, []),
        Bm25fStats(top, [1] * 4, [("A", top)]),
    ):
        with pytest.raises(InvalidArgumentError, match="a sum passes 2\\*\\*64 - 1"):
            Bm25fStats.sum([Bm25fStats(2, [2] * 4, [("A", 2)]), big])


def test_the_root_of_a_directory_whose_name_is_not_utf8_is_that_directory(
    tmp_path: Path,
) -> None:
    # Linux names are bytes; Python spells the others with escaped bytes.
    root = Path(os.fsdecode(os.fsencode(tmp_path) + b"/\xffb"))
    try:
        write_bundle(root, {"a.md": "---\ntype: T\ntitle: Alpha\n---\nalpha\n"})
    except (OSError, UnicodeError):
        pytest.skip("this file system refuses a name that is not UTF-8")
    b = Bundle.load(root, cache=False)
    assert b.root == root and b.root.is_dir() and len(b) == 1


def _nested(root: Path, depth: int) -> None:
    """``depth`` directories ``d`` one inside the other below ``root``, with
    one concept at the bottom: made through descriptors, since past ~2,000
    levels the path is longer than the system lets a path be."""
    root.mkdir()
    fd = os.open(root, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        below = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = below
    try:
        with open("c.md", "w", opener=lambda p, f: os.open(p, f, dir_fd=fd)) as fh:
            fh.write("---\ntype: T\n---\nhello\n")
    finally:
        os.close(fd)


def _unnest(root: Path) -> None:
    """Remove a tree :func:`_nested` made, a level at a time from the top:
    pytest's own clean-up (``shutil.rmtree``) recurses once per level and
    fails with RecursionError on it, in every later session."""
    top, below = root / "d", root / "below"
    while top.is_dir():
        if (top / "d").is_dir():
            (top / "d").rename(below)
        for f in top.iterdir():
            f.unlink()
        top.rmdir()
        if below.is_dir():
            below.rename(top)
    for f in root.iterdir():
        f.unlink()
    root.rmdir()


@pytest.mark.skipif(sys.platform == "win32", reason="opens directories by descriptor")
def test_a_tree_as_deep_as_a_path_can_name_loads_and_a_deeper_one_is_reported(
    tmp_path: Path,
) -> None:
    """docs/spec.md §1.1: a concept 1,800 directories down loads, with the
    cache and without, and refreshes; one 2,100 down, past the longest path,
    is an UnreadableDirectory diagnostic. Past ~930 levels the walk ended the
    process with SIGSEGV (a worker thread's stack overflowed)."""
    try:
        _nested(tmp_path / "deep", 1800)
        for cache in (True, False):
            b = Bundle.load(tmp_path / "deep", cache=cache, cache_dir=tmp_path / "cache")
            assert list(b.concept_ids) == ["d/" * 1800 + "c"] and list(b.diagnostics) == []
        b.refresh()
        assert [h.concept_id for h in b.search("hello")] == ["d/" * 1800 + "c"]
        _nested(tmp_path / "deeper", 2100)
        b = Bundle.load(tmp_path / "deeper", cache=False)
        assert len(b) == 0
        assert [(d.code, d.message.endswith(": File name too long")) for d in b.diagnostics] == [
            ("UnreadableDirectory", True)
        ]
    finally:
        for tree in ("deep", "deeper"):
            if (tmp_path / tree).exists():
                _unnest(tmp_path / tree)


def test_a_list_item_one_column_left_of_its_list_is_reported_not_made_a_key(
    tmp_path: Path,
) -> None:
    """docs/frontmatter-yaml.md "Mapping entry": the item was read as the key
    ``- by`` (bob's verification silently lost); YAML refuses it, and so does
    okfast, naming the line (counted from the line after the opening ---)."""
    write_bundle(
        tmp_path / "kb",
        {
            "a.md": "---\ntype: T\ntitle: A\nverified:\n  - by: human:alice\n"
            "    at: 2024-01-01\n- by: human:bob\n  at: 2024-02-01\n---\nbody\n",
            "b.md": "---\ntype: T\ntags:\n- a\n- b\n---\nbody\n",
        },
    )
    b = Bundle.load(tmp_path / "kb", cache=False)
    assert b.concept_ids == ("b",) and b.concept("b").tags == ("a", "b")
    assert [(d.code, d.path, d.message) for d in b.diagnostics] == [
        ("InvalidFrontmatter", "a.md", "Invalid YAML frontmatter: expected 'key: value' at line 6")
    ]
