"""Sanity tests of the pure-Python oracle (the package tests/reference/) itself.

They do not import okfast: they pin the oracle to SPEC.md and
docs/frontmatter-yaml.md on hand-checked examples.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pytest
import reference as R


def y(text: str) -> dict:
    """parse_yaml over the lines of ``text`` (no trailing empty line)."""
    return R.parse_yaml(R.split_lines(text))


def yerr(text: str) -> str:
    with pytest.raises(R.YamlError) as exc:
        y(text)
    return exc.value.message


# -- SPEC preamble -----------------------------------------------------------


def test_white_space_split_and_trim() -> None:
    assert len(R.WHITE_SPACE) == 25
    # U+001C..U+001F are str.split() separators but not White_Space;
    # U+00A0 and U+3000 are White_Space.
    assert R.split_ws("a\x1cb c\u00a0d\u3000\u3000e ") == ["a\x1cb", "c", "d", "e"]
    assert R.split_ws(" \t\n") == []
    assert R.trim("\u2028 x y\u00a0\r") == "x y"


def test_fold_and_contains_ci() -> None:
    assert R.fold("ß") == "ß"  # "SS" is two characters: unchanged
    assert R.fold("ı") == "I"
    assert R.fold("ς") == "Σ"
    assert R.fold("straße") == "STRAßE"
    assert len(R.fold("ŉǰß")) == 3
    assert R.contains_ci("Reorders", "ORDER")
    assert R.contains_ci("ΟΔΟΣ", "οδος") and R.contains_ci("ΟΔΟΣ", "οδοσ")
    assert not R.contains_ci("STRASSE", "straße")


def test_id_order() -> None:
    ids = ["a-b", "a/b", "a", "b", "a/b/c", "A", "a.b", "ação", "a/a"]
    expected = ["A", "a", "a/a", "a/b", "a/b/c", "a-b", "a.b", "ação", "b"]
    assert sorted(ids, key=R.id_key) == expected


# -- YAML subset -------------------------------------------------------------


def test_lenient_plain_scalar_and_comments() -> None:
    fm = y("description: Step 1: do it\ntitle: C# in 2024 # a comment\nx: a:b")
    assert fm == {"description": "Step 1: do it", "title": "C# in 2024", "x": "a:b"}
    assert y("a:\nb: ~\nc: null\nd: 'null'\ne: true\nf: 0012") == {
        "a": None,
        "b": None,
        "c": None,
        "d": "null",
        "e": "true",
        "f": "0012",
    }


def test_multiline_plain_scalar() -> None:
    text = (
        "description: This is a long\n"
        "  description continued\n"
        "\n"
        "\n"
        "  after two empty lines # comment ends it\n"
        "title: x\n"
    )
    assert y(text)["description"] == (
        "This is a long description continued\n\nafter two empty lines"
    )
    # Trailing empty lines are not taken; a `#` line ends the scalar.
    assert y("a: x\n  y\n\n  # c\nb: z") == {"a": "x y", "b": "z"}
    # The value on the following lines, as a block node at a deeper indent.
    assert y("d:\n  one\n  two\n") == {"d": "one two"}


def test_block_scalar_in_sequence_of_mappings() -> None:
    text = (
        "type: concept\n"
        "x-llmwiki:\n"
        '  schemaVersion: "0.1"\n'
        "  citations:\n"
        "    - file: a.md\n"
        "    - file: |-\n"
        "        a.md>\n"
        "\n"
        "        ## Benefits\n"
        "\n"
        "        * **4x memory reduction** ...\n"
        '    - file: "`use_cache` must be set."\n'
        "title: MXFP4 Quantization\n"
        "tags:\n"
        "  - quantization\n"
        'timestamp: "2026-06-19T18:32:50.869Z"\n'
        "generated: { by: human:kliu@acme, at: 2026-06-30T14:00:00Z }\n"
    )
    fm = y(text)
    assert list(fm) == ["type", "x-llmwiki", "title", "tags", "timestamp", "generated"]
    assert fm["x-llmwiki"]["citations"] == [
        {"file": "a.md"},
        {"file": "a.md>\n\n## Benefits\n\n* **4x memory reduction** ..."},
        {"file": "`use_cache` must be set."},
    ]
    assert fm["tags"] == ["quantization"]
    assert fm["generated"] == {"by": "human:kliu@acme", "at": "2026-06-30T14:00:00Z"}


def test_block_scalar_styles() -> None:
    assert y("a: |\n  x\n   y\n\n") == {"a": "x\n y\n"}
    assert y("a: |+\n  x\n\n\nb: 1") == {"a": "x\n\n\n", "b": "1"}
    assert y("a: >\n  one\n  two\n\n  three\n    more\n  end\n") == {
        "a": "one two\nthree\n  more\nend\n"
    }
    assert y("a: >-\n\n  x\n") == {"a": "\nx"}
    assert y("a: |2-\n    x\n") == {"a": "  x"}
    assert y("a: |\nb: 1") == {"a": "", "b": "1"}
    assert yerr("a: |x\n  y") == "invalid block scalar header at line 1"


def test_sequences_and_flow() -> None:
    assert y("tags:\n- a\n- b\nn: 1") == {"tags": ["a", "b"], "n": "1"}
    assert y("t: [a, 'b c', \"d\\u00e9\", [x], {k: v, z}, ~,]") == {
        "t": ["a", "b c", "dé", ["x"], {"k": "v", "z": None}, None]
    }
    assert y("t: [a,\n  b, # c\n  c]\nn: 1") == {"t": ["a", "b", "c"], "n": "1"}
    assert y("s:\n  - - a\n    - b\n  - k: v\n    j: w\n") == {
        "s": [["a", "b"], {"k": "v", "j": "w"}]
    }
    assert yerr("t: [a,,b]") == "invalid flow collection at line 1"
    assert yerr("x: 1\nt: [a,\n b") == "unterminated flow collection at line 2"
    assert yerr("t: [a] b") == "unexpected text after flow collection at line 1"
    assert yerr("t: [a,\n b] c") == "unexpected text after flow collection at line 2"


def test_rejected_constructs_name_the_line() -> None:
    assert yerr("a: 1\n\n# c\nb: &x 2") == "YAML anchor (&) at line 4 is not supported"
    assert yerr("a:\n  - *x") == "YAML alias (*) at line 2 is not supported"
    assert yerr("a: !!str 1") == "YAML tag (!) at line 1 is not supported"
    assert yerr("a: [1, &x 2]") == "YAML anchor (&) at line 1 is not supported"
    assert yerr("%YAML 1.2\na: 1") == "YAML directive (%) at line 1 is not supported"
    assert yerr("a: 1\n...") == "YAML document marker at line 2 is not supported"
    assert yerr("? a\n: b") == "YAML explicit key (?) at line 1 is not supported"
    assert yerr("a: {? k: v}") == "YAML explicit key (?) at line 1 is not supported"
    assert yerr("a: [x, ?\n  k]") == "YAML explicit key (?) at line 1 is not supported"
    assert y("a: [?k, k?]") == {"a": ["?k", "k?"]}
    assert yerr("a: 1\n\tb: 2") == "invalid indentation character at line 2"
    assert yerr("a: '1'\n  b: 2") == "unexpected indentation at line 2"
    assert y("a: 1\n  b: 2") == {"a": "1 b: 2"}  # a plain continuation, not an error
    assert yerr("a: 1\nb") == "expected 'key: value' at line 2"
    # A sequence item at a mapping's indent is no key `- by` (docs/frontmatter-yaml.md).
    assert yerr("verified:\n  - by: a\n- by: b\n  at: x") == "expected 'key: value' at line 3"
    assert y("tags:\n- a: 1\n- b\nnext: 2") == {"tags": [{"a": "1"}, "b"], "next": "2"}
    # A first line that trims to nothing (a lone NBSP) is no piece of the scalar.
    assert y("title: \u00a0\n  Hello\n  World") == {"title": "Hello World"}
    assert y("title: \u00a0\n\n  Hello") == {"title": "Hello"}
    assert yerr("- a") == "YAML frontmatter is not a mapping (line 1)"
    # Checked once the node is read: an error inside it is reported instead.
    assert yerr('- a\n- "\\q"') == "invalid escape sequence at line 2"
    assert yerr("- a\nb: 1") == "YAML frontmatter is not a mapping (line 1)"
    assert yerr("\n# c\nfoo") == "YAML frontmatter is not a mapping (line 3)"
    assert yerr('a: "x') == "unterminated quoted scalar at line 1"
    assert yerr('a: "x" y') == "unexpected text after quoted scalar at line 1"
    assert yerr('a: "\\q"') == "invalid escape sequence at line 1"
    assert yerr('a: "\\ud800"') == "invalid escape sequence at line 1"
    assert yerr(": x") == "empty key at line 1"


def test_duplicate_keys_first_wins_but_are_parsed() -> None:
    assert y("a: 1\nb: 2\na: 3") == {"a": "1", "b": "2"}
    assert yerr("a: 1\na: &x 3") == "YAML anchor (&) at line 2 is not supported"
    assert y("m: {a: 1, a: 2}") == {"m": {"a": "1"}}


def test_depth_limit() -> None:
    def nested(n: int) -> str:
        return "".join(" " * i + "k:\n" for i in range(n)) + " " * n + "v\n"

    y(nested(64))
    assert yerr(nested(65)) == "nesting deeper than 64 levels at line 65"
    y("a: " + "[" * 63 + "]" * 63)
    assert yerr("a: " + "[" * 64 + "]" * 64) == "nesting deeper than 64 levels at line 1"


def test_quoted_scalars() -> None:
    assert y("a: 'it''s # not a comment'\nb: \"t\\tq\\\"\\x41\\U0001F600\"") == {
        "a": "it's # not a comment",
        "b": 't\tq"A\U0001f600',
    }
    assert y("'k: x': v") == {"k: x": "v"}


# -- stale_after ---------------------------------------------------------------


def test_parse_stale_after() -> None:
    utc = timezone.utc
    assert R.parse_stale_after("2024-02-29") == datetime(2024, 2, 29, tzinfo=utc)
    assert R.parse_stale_after("2024-01-01t10:00") == datetime(2024, 1, 1, 10, tzinfo=utc)
    assert R.parse_stale_after("2024-01-01 10:00:05.1234567+05:30") == datetime(
        2024, 1, 1, 4, 30, 5, 123456, tzinfo=utc
    )
    assert R.parse_stale_after("2024-01-01T00:00-0100") == datetime(2024, 1, 1, 1, tzinfo=utc)
    assert R.parse_stale_after("2024-01-01T00:00:00+01") == datetime(2023, 12, 31, 23, tzinfo=utc)
    for bad in [
        "2023-02-29",
        "2024-13-01",
        "2024-01-01T24:00",
        "2024-01-01T10:00:60",
        "2024-01-01Z",
        "2024-01-01T10",
        "2024-01-01T10:00.5",
        "2024-01-01T10:00+24:00",
        "0000-01-01",
        "0001-01-01T00:00+01:00",
        "9999-12-31T23:00-01:00",
        "２０２４-01-01",
        " 2024-01-01",
        "2024-01-01\n",
        "tomorrow",
    ]:
        assert R.parse_stale_after(bad) is None, bad


# -- concept files ---------------------------------------------------------------


def test_read_concept_fields_and_diagnostics() -> None:
    data = (
        b"---\n"
        b"title: Orders\n"
        b"tags: orders\n"
        b"status: Draft\n"
        b"stale_after: next week\n"
        b"verified:\n  - by: bot:ci\n  - by: human:ann\n    at: 2024-01-01\n  - nope\n"
        b"timestamp: 2020-01-01\n"
        b"---\n"
        b"\n"
        b"Body\n"
    )
    c, diags = R.read_concept("sales/orders.md", data)
    assert c is not None
    assert c.concept_id == "sales/orders" and c.path == "sales/orders.md"
    assert (c.type, c.title, c.tags) == (None, "Orders", ["orders"])
    assert (c.status, c.status_known) == ("stable", False)
    assert c.stale_after is None
    assert c.generated == {"by": None, "at": "2020-01-01"}
    assert c.verified == [{"by": "bot:ci", "at": None}, {"by": "human:ann", "at": "2024-01-01"}]
    assert c.trust_tier == "human_reviewed"
    assert c.body == "Body"
    assert [(d.code, d.severity) for d in diags] == [
        ("MissingType", "warning"),
        ("MalformedStaleAfter", "warning"),
    ]
    assert diags[1].message == (
        'stale_after "next week" is not an ISO 8601 date or date-time; '
        "the concept is treated as never stale"
    )
    c2, d2 = R.read_concept("x.md", b"---\ntype: t\nstale_after: [a]\nverified: {by: x}\n---\n")
    assert c2 is not None and c2.body == "" and c2.trust_tier == "machine_confirmed"
    assert [d.message for d in d2] == [
        "stale_after is not a date; the concept is treated as never stale"
    ]


def test_crlf_bom_and_errors() -> None:
    c, _ = R.read_concept("a.md", b"\xef\xbb\xbf---\r\ntype: t\r\n---\r\nx\r\ny\r\n")
    assert c is not None and c.type == "t" and c.body == "x\ny"
    # No frontmatter: the body is the text verbatim (after the BOM), CRLF kept.
    c, _ = R.read_concept("a.md", b"\xef\xbb\xbfx\r\ny\r\n")
    assert c is not None and c.body == "x\r\ny\r\n"
    c, d = R.read_concept("a.md", b"\xef\xbb\xbfab\xff")
    assert c is None and d[0].code == "InvalidUtf8"
    assert d[0].message == (
        "File is not valid UTF-8 (first invalid byte at offset 5); re-save it as UTF-8"
    )
    c, d = R.read_concept("a.md", b"---\ntype: t\n")
    assert c is None and (d[0].code, d[0].message) == (
        "InvalidFrontmatter",
        "Unterminated YAML frontmatter block",
    )
    c, d = R.read_concept("a.md", b" --- \nfoo\n---\n")
    assert c is None and d[0].message == (
        "Invalid YAML frontmatter: YAML frontmatter is not a mapping (line 1)"
    )
    assert R.split_lines("a\r\nb\r") == ["a", "b\r"]
    assert R.split_lines("") == [] and R.split_lines("\n") == [""]


# -- bundles and search ------------------------------------------------------------


def _write(root: Path, rel: str, text: str | bytes) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode()
    p.write_bytes(text)


def test_load_bundle_walk(tmp_path: Path) -> None:
    _write(tmp_path, "index.md", "---\nokf_version: '0.2'\n---\n")
    _write(tmp_path, "a-b.md", "---\ntype: t\n---\n")
    _write(tmp_path, "a/b.md", "---\ntype: t\n---\n")
    _write(tmp_path, "a.md", "no type")
    _write(tmp_path, "a/index.md", "---\ntype: t\n---\n")
    _write(tmp_path, "a/log.md", "x")
    _write(tmp_path, ".hidden/x.md", "---\ntype: t\n---\n")
    _write(tmp_path, "notes.txt", "x")
    _write(tmp_path, "bad\\name.md", "---\ntype: t\n---\n")
    _write(tmp_path, "z.md", "---\ntype: [\n---\n")
    os.symlink(tmp_path / "a", tmp_path / "link")
    os.symlink(tmp_path / "a-b.md", tmp_path / "c.md")
    big = tmp_path / "big.md"
    with open(big, "wb") as f:
        f.truncate(16 * 1024 * 1024 + 1)
    b = R.load_bundle(str(tmp_path))
    assert b.okf_version == "0.2"
    assert [c.concept_id for c in b.concepts] == ["a", "a/b", "a-b"]
    assert [(d.code, d.path, d.severity) for d in b.diagnostics] == [
        ("MissingType", "a.md", "warning"),
        ("InvalidConceptId", "bad\\name.md", "error"),
        ("FileTooLarge", "big.md", "error"),
        ("SymlinkSkipped", "c.md", "warning"),
        ("SymlinkSkipped", "link", "warning"),
        ("InvalidFrontmatter", "z.md", "error"),
    ]
    assert b.diagnostics[2].message == (
        "File is 16777217 bytes, over the 16 MiB limit for a concept file"
    )
    assert b.diagnostics[5].message == (
        "Invalid YAML frontmatter: unterminated flow collection at line 1"
    )
    with pytest.raises(FileNotFoundError):
        R.load_bundle(str(tmp_path / "missing"))


def test_search_score_order_excerpt_and_tag(tmp_path: Path) -> None:
    _write(
        tmp_path, "orders.md", "---\ntype: t\ntitle: Orders\ntags: [Sales]\n---\nAbout orders.\n"
    )
    _write(
        tmp_path,
        "b/reorder.md",
        "---\ntype: t\ndescription: how to reorder\n---\n\n  \n  Reorder   stock \n",
    )
    _write(tmp_path, "other.md", "---\ntype: t\ntitle: Other\n---\nnothing\n")
    b = R.load_bundle(str(tmp_path))
    # orders: title 3 + body 1 = 4 per term; b/reorder: desc 2 + body 1 = 3.
    assert R.search(b, "order") == [
        ("orders", 4, "About orders."),
        ("b/reorder", 3, "Reorder   stock"),
    ]
    assert R.search(b, "ORDER order")[0] == ("orders", 8, "About orders.")
    assert R.search(b, " \u3000 ") == []
    assert R.search(b, "order", tag="SALES") == [("orders", 4, "About orders.")]
    assert R.search(b, "order", tag="  ") == R.search(b, "order")
    c = b.concepts[0]
    assert R.field_texts(c) == ("", " how to reorder", "  \n  Reorder   stock ")
    assert R.excerpt("a\n\nb", ["zz"]) == ""
