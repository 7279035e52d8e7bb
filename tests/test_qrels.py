"""Judged queries (docs/spec.md §11.1): JSON Lines, TREC qrels with a queries
TSV, percent-encoded ids, and every bad line reported with its file and line
while the other lines are used."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from okfast import Diagnostic, DiagnosticCode, InvalidArgumentError, InvalidArgumentTypeError
from okfast.qrels import JudgedQuery, JudgedSet, decode_id, encode_id


def codes(s: JudgedSet) -> list[tuple[str, str | None, str]]:
    return [(d.code, d.path, d.severity) for d in s.diagnostics]


def test_json_lines_as_in_the_shared_sets(tmp_path: Path) -> None:
    f = tmp_path / "q.jsonl"
    rows = [
        {"qid": "q1", "query": "gross margin", "relevant": {"acme:metrics/gm": 2, "acme:x": 0}},
        {"qid": 7, "query": "an integer qid", "relevant": {"b": 1}, "note": "extra keys ignored"},
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    s = JudgedSet.load(f)
    assert s.queries == (
        JudgedQuery("q1", "gross margin", {"acme:metrics/gm": 2, "acme:x": 0}),
        JudgedQuery("7", "an integer qid", {"b": 1}),
    )
    assert s.diagnostics == ()
    assert len(s) == 2 and [q.qid for q in s] == ["q1", "7"]
    # Judgements keep file order.
    assert list(s.queries[0].judgements) == ["acme:metrics/gm", "acme:x"]
    assert s.locations[("7", "b")] == f"{f}:2"


def test_bad_json_lines_are_reported_with_their_line_and_the_rest_is_used() -> None:
    lines = [
        b'{"qid": "ok1", "query": "a", "relevant": {"d": 1}}',  # 1
        b"{not json",  # 2
        b'["not", "an object"]',  # 3
        b'{"query": "no qid", "relevant": {"d": 1}}',  # 4
        b'{"qid": "q", "query": "   ", "relevant": {"d": 1}}',  # 5
        b'{"qid": "q", "query": "x", "relevant": ["d"]}',  # 6
        b'{"qid": "q", "query": "x", "relevant": {"d": 1.5}}',  # 7
        b'{"qid": "q", "query": "x", "relevant": {"d": -1}}',  # 8
        b'{"qid": "q", "query": "x", "relevant": {"d": true}}',  # 9
        b'{"qid": "q", "qid": "r", "query": "x", "relevant": {"d": 1}}',  # 10
        b'{"qid": "q", "query": "x", "relevant": {"d": NaN}}',  # 11
        b"\xff\xfe not utf-8",  # 12
        b'{"qid": "ok1", "query": "again", "relevant": {"e": 1}}',  # 13
        b'{"qid": "empty", "query": "nothing judged", "relevant": {}}',  # 14
        b'{"qid": "ok2", "query": "b", "relevant": {"d": 1, "d": 2}}',  # 15
        b'{"qid": "q", "query": "x", "relevant": {"": 1}}',  # 16
        b'{"qid": "", "query": "x", "relevant": {"d": 1}}',  # 17
        b'{"qid": "q", "query": "x", "relevant": {"d": 1}, "x": ' + b"[" * 100_000,  # 18
        b'{"qid": "q", "query": "x\x01", "relevant": {"d": 1}}',  # 19
        b'{"qid": "q", "query": "x", "relevant": {"d": ' + b"9" * 5000 + b"}}",  # 20
    ]
    s = JudgedSet.parse_jsonl(b"\r\n".join(lines), name="j.jsonl")
    assert [q.qid for q in s] == ["ok1", "ok2"]
    assert s.queries[0].judgements == {"d": 1}  # the first ok1 wins
    assert s.queries[1].judgements == {"d": 1}  # the first grade wins
    bad = [n for n in (2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17, 18, 19, 20)]
    assert codes(s) == [
        *[("BadJudgedLine", f"j.jsonl:{n}", "error") for n in bad if n < 13],
        ("DuplicateQuery", "j.jsonl:13", "warning"),
        ("UnjudgedQuery", "j.jsonl:14", "warning"),
        ("DuplicateJudgement", "j.jsonl:15", "warning"),
        *[("BadJudgedLine", f"j.jsonl:{n}", "error") for n in bad if n > 13],
    ]
    by_line = {d.path: d.message for d in s.diagnostics}
    assert by_line["j.jsonl:2"].startswith("not valid JSON")
    assert by_line["j.jsonl:3"] == "not a JSON object; line skipped"
    assert by_line["j.jsonl:7"] == (
        "the grade of 'd' must be a whole number from 0 to 2147483647; line skipped"
    )
    # Valid JSON, a grade out of range: not "not valid JSON" (Python's limit
    # on converting long digit strings).
    assert by_line["j.jsonl:20"] == by_line["j.jsonl:7"]
    assert by_line["j.jsonl:10"] == "the key 'qid' appears twice; line skipped"
    assert by_line["j.jsonl:12"].startswith("not valid UTF-8")
    assert by_line["j.jsonl:18"] == "not valid JSON: nested too deeply; line skipped"
    assert by_line["j.jsonl:19"] == (
        "not valid JSON: Invalid control character at column 25; line skipped"
    )
    assert by_line["j.jsonl:13"] == (
        "Query 'ok1' was already given at j.jsonl:1; this one is ignored."
    )


def test_a_leading_bom_and_crlf_line_ends_are_read() -> None:
    s = JudgedSet.parse_jsonl(
        b'\xef\xbb\xbf{"qid": "a", "query": "x", "relevant": {"d": 1}}\r\n', name="f"
    )
    assert [q.qid for q in s] == ["a"] and s.diagnostics == ()


def test_trec_qrels_with_a_queries_tsv(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    queries = tmp_path / "queries.tsv"
    qrels.write_text(
        "q1 0 docs:com%20espa%C3%A7o 2\n"
        "q1\t0\tdocs:plain   1\n"  # any white space separates fields
        "q1 0 docs:zero 0\n"
        "q%202 Q0 a%25b 1\n",
        encoding="utf-8",
    )
    queries.write_text("q1\tcom espaço\tand a tab\nq%202\tsecond query\n", encoding="utf-8")
    s = JudgedSet.load(qrels, queries)
    assert s.queries == (
        JudgedQuery(
            "q1", "com espaço\tand a tab", {"docs:com espaço": 2, "docs:plain": 1, "docs:zero": 0}
        ),
        JudgedQuery("q 2", "second query", {"a%b": 1}),
    )
    assert s.diagnostics == ()


def test_bad_trec_lines_are_reported_with_their_line() -> None:
    s = JudgedSet.parse_trec(
        "q1 0 a 1\nq1 0 b\nq1 0 c two\nq1 0 d -1\nq1 0 a 2\nq9 0 x 1\nq1 0 %FF 1\n"
        "q1 0 e 99999999999999999999\nq1 0 f 0002\n",
        "q1\tfirst\nno tab here\nq2\tnot judged\nq1\tagain\nq3\t  \n",
        qrels_name="r.txt",
        queries_name="t.tsv",
    )
    assert s.queries == (JudgedQuery("q1", "first", {"a": 1, "f": 2}),)
    assert codes(s) == [
        ("BadJudgedLine", "t.tsv:2", "error"),
        ("DuplicateQuery", "t.tsv:4", "warning"),
        ("BadJudgedLine", "t.tsv:5", "error"),
        ("BadJudgedLine", "r.txt:2", "error"),
        ("BadJudgedLine", "r.txt:3", "error"),
        ("BadJudgedLine", "r.txt:4", "error"),
        ("DuplicateJudgement", "r.txt:5", "warning"),
        ("BadJudgedLine", "r.txt:7", "error"),
        ("BadJudgedLine", "r.txt:8", "error"),
        ("QueryTextMissing", "r.txt:6", "warning"),
        ("UnjudgedQuery", "t.tsv:3", "warning"),
    ]
    messages = {d.path: d.message for d in s.diagnostics}
    assert messages["r.txt:2"] == (
        "expected 4 fields (qid iteration docid grade), found 3; line skipped"
    )
    assert (
        messages["r.txt:6"] == "Query 'q9' is judged but has no text in t.tsv; it is not evaluated."
    )
    assert messages["t.tsv:2"] == "expected qid<TAB>query; line skipped"


def test_percent_encoding_round_trips_white_space_and_percent() -> None:
    for text in ["plain", "com espaço", "a%b", "tab\there", "nbsp\u00a0x", "ideo\u3000x", "%20"]:
        enc = encode_id(text)
        assert not any(c.isspace() for c in enc)
        assert decode_id(enc) == text
    assert encode_id("a b%") == "a%20b%25"
    assert encode_id("x\u3000y") == "x%E3%80%80y"
    # Not white space, but what Python's str.split splits at (§11.1).
    for c in "\x1c\x1d\x1e\x1f":
        assert encode_id(f"a{c}b") == f"a%{ord(c):02X}b"
        assert encode_id(f"a{c}b").split() == [encode_id(f"a{c}b")]
        assert decode_id(encode_id(f"a{c}b")) == f"a{c}b"
    # A % that starts no escape stays as it is.
    assert decode_id("50%-off") == "50%-off"


def test_an_unreadable_file_is_an_argument_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="cannot read judged queries"):
        JudgedSet.load(tmp_path / "missing.jsonl")
    with pytest.raises(InvalidArgumentError, match="cannot read judged queries"):
        JudgedSet.load(tmp_path, None)  # a directory
    (tmp_path / "q.txt").write_text("q 0 d 1\n")
    with pytest.raises(InvalidArgumentError, match="missing.tsv"):
        JudgedSet.load(tmp_path / "q.txt", tmp_path / "missing.tsv")


def test_the_new_codes_are_diagnostic_codes() -> None:
    new = {
        "BadJudgedLine",
        "DuplicateQuery",
        "DuplicateJudgement",
        "UnjudgedQuery",
        "QueryTextMissing",
        "UnknownDocId",
    }
    assert new <= {c.value for c in DiagnosticCode}
    d = JudgedSet.parse_jsonl("{", name="x").diagnostics[0]
    assert isinstance(d, Diagnostic) and d.code == DiagnosticCode.BAD_JUDGED_LINE


def test_a_lone_surrogate_is_a_bad_line_and_no_judged_query_holds_one() -> None:
    # JSON's \ud800 escapes give Python strings that are not valid Unicode;
    # handed to the metric library they crashed the interpreter.
    lines = [
        rb'{"qid": "\ud800", "query": "x", "relevant": {"d": 1}}',
        rb'{"qid": "q", "query": "x\udc80", "relevant": {"d": 1}}',
        rb'{"qid": "q", "query": "x", "relevant": {"\ud800": 1}}',
        rb'{"qid": "ok", "query": "x", "relevant": {"d": 1}}',
    ]
    s = JudgedSet.parse_jsonl(b"\n".join(lines), name="s.jsonl")
    assert [q.qid for q in s] == ["ok"]
    assert [(d.path, d.message) for d in s.diagnostics] == [
        ("s.jsonl:1", '"qid" is not valid Unicode text (a lone surrogate); line skipped'),
        ("s.jsonl:2", '"query" is not valid Unicode text (a lone surrogate); line skipped'),
        (
            "s.jsonl:3",
            "the doc id '\\ud800' is not valid Unicode text (a lone surrogate); line skipped",
        ),
    ]
    for bad in (
        {"qid": "\ud800", "text": "x", "judgements": {"d": 1}},
        {"qid": "q", "text": "\ud800", "judgements": {"d": 1}},
        {"qid": "q", "text": "x", "judgements": {"\udc80": 1}},
    ):
        with pytest.raises(InvalidArgumentError, match="not valid Unicode text"):
            JudgedQuery(**bad)  # type: ignore[arg-type]


def test_a_nul_in_a_qid_or_doc_id_is_a_bad_line_in_either_format() -> None:
    """docs/spec.md §11.1: the metric library's C code ends an id at a NUL:
    two qids met as one (an abort) and a doc id matched a document it does
    not name (wrong metrics)."""
    lines = [
        rb'{"qid": "q\u0000a", "query": "x", "relevant": {"d": 1}}',
        rb'{"qid": "q", "query": "x", "relevant": {"d\u0000zz": 1}}',
        rb'{"qid": "ok", "query": "x", "relevant": {"d": 1}}',
    ]
    s = JudgedSet.parse_jsonl(b"\n".join(lines), name="s.jsonl")
    assert [q.qid for q in s] == ["ok"]
    assert [d.path for d in s.diagnostics] == ["s.jsonl:1", "s.jsonl:2"]
    assert all("NUL character" in d.message for d in s.diagnostics)
    trec = JudgedSet.parse_trec(
        b"q%00a 0 d 1\nq 0 d%00zz 1\nq 0 d 1\n",
        b"q%00a\tx\nq\tx\n",
        qrels_name="t.qrels",
        queries_name="t.tsv",
    )
    assert [q.qid for q in trec] == ["q"] and dict(trec.queries[0].judgements) == {"d": 1}
    assert [d.path for d in trec.diagnostics] == ["t.tsv:1", "t.qrels:1", "t.qrels:2"]
    for bad in (
        {"qid": "q\x00", "text": "x", "judgements": {"d": 1}},
        {"qid": "q", "text": "x", "judgements": {"d\x00": 1}},
    ):
        with pytest.raises(InvalidArgumentError, match="NUL character"):
            JudgedQuery(**bad)  # type: ignore[arg-type]


def test_a_nul_in_a_query_text_is_searched_in_either_format() -> None:
    """docs/spec.md §11.1: only ids go to the metric's C code; a JSON Lines
    query text holding a NUL was a bad line blaming a lone surrogate."""
    s = JudgedSet.parse_jsonl(b'{"qid": "q", "query": "a\\u0000b", "relevant": {"d": 1}}')
    assert [(q.qid, q.text) for q in s] == [("q", "a\x00b")] and s.diagnostics == ()
    trec = JudgedSet.parse_trec(b"q 0 d 1\n", b"q\ta\x00b\n")
    assert [q.text for q in trec] == ["a\x00b"]


def test_a_grade_of_leading_zeros_past_pythons_digit_limit_reads() -> None:
    """docs/spec.md §11.1: a grade is its digits' value; int() of 4,301
    digits raised ValueError out of the parser, the rest of the file lost."""
    s = JudgedSet.parse_trec(b"q 0 d " + b"0" * 4300 + b"1\nq 0 e 2\n", b"q\tx\n")
    assert dict(s.queries[0].judgements) == {"d": 1, "e": 2} and s.diagnostics == ()


@pytest.mark.parametrize(("qid", "doc"), [("", "d"), ("q", "")])
def test_a_judged_query_made_in_code_has_no_empty_id(qid: str, doc: str) -> None:
    """docs/spec.md §11.1, §11.4: an empty qid made a run file line of five
    fields, which no TREC reader takes (a file's empty id is a bad line)."""
    with pytest.raises(InvalidArgumentError, match="is empty"):
        JudgedQuery(qid, "x", {doc: 1})


def test_a_judged_query_keeps_its_own_copy_of_the_judgements() -> None:
    """A grade checked when the query is made stays the grade measured."""
    given = {"d": 1}
    q = JudgedQuery("q", "x", given)
    given["d"] = 2**40
    assert dict(q.judgements) == {"d": 1}
    with pytest.raises(TypeError):
        q.judgements["d"] = 2  # type: ignore[index]


def test_a_line_of_many_keys_is_read_in_linear_time() -> None:
    """Extra keys are ignored (§11.1); their duplicate check was quadratic
    (80,000 keys: 40 s; these 50,000 about 15 s, against 0.1 s now)."""
    extra = ", ".join(f'"k{i}": 1' for i in range(50_000))
    line = '{"qid": "q", "query": "x", "relevant": {"d": 1}, ' + extra + "}"
    s = JudgedSet.parse_jsonl(line.encode(), name="s.jsonl")
    assert [q.qid for q in s] == ["q"]
    twice = JudgedSet.parse_jsonl(b'{"qid": "q", "a": 1, "b": 2, "a": 3}', name="s.jsonl")
    assert "the key 'a' appears twice" in twice.diagnostics[0].message


def test_an_integer_qid_longer_than_python_reads_is_named_so() -> None:
    line = '{"qid": ' + "7" * 5000 + ', "query": "x", "relevant": {"d": 1}}'
    d = JudgedSet.parse_jsonl(line.encode(), name="s.jsonl").diagnostics[0]
    assert "an integer of 5000 digits" in d.message and "write it as a string" in d.message


@pytest.mark.parametrize("grade", [-1, 2**31, 2**40, True, 2.5, "1", None])
def test_a_judged_query_made_in_code_holds_only_grades_a_file_could(grade: object) -> None:
    """docs/spec.md §11.1: a grade is a whole number from 0 to 2**31 - 1; a
    larger one reached the metric library's C int (wrong metrics, or a
    crash)."""
    with pytest.raises(InvalidArgumentError, match="must be a whole number from 0 to"):
        JudgedQuery("q", "x", {"d": grade})  # type: ignore[dict-item]
    assert JudgedQuery("q", "x", {"d": 2**31 - 1, "e": 0}).judgements["d"] == 2**31 - 1


def test_a_judged_set_made_in_code_holds_each_qid_once() -> None:
    """Results are keyed by qid: a second query of one qid would be scored
    with the first's ranking (the readers keep the first, §11.1)."""
    one, other = JudgedQuery("q1", "apple", {"a": 1}), JudgedQuery("q1", "zebra", {"z": 1})
    with pytest.raises(InvalidArgumentError, match="'q1' is in the judged set twice"):
        JudgedSet((one, other))
    with pytest.raises(InvalidArgumentError, match="JudgedQuery items"):
        JudgedSet(("q1",))  # type: ignore[arg-type]
    assert len(JudgedSet((one, JudgedQuery("q2", "zebra", {"z": 1})))) == 2


def test_a_judged_set_made_from_a_generator_keeps_its_queries() -> None:
    """docs/spec.md §11.1: the set holds a tuple, a copy; its checks used up a
    generator and left no query to measure."""
    made = JudgedSet(q for q in [JudgedQuery("q1", "apple", {"a": 1})])
    assert [q.qid for q in made.queries] == ["q1"] and len(made) == 1
    for bad in (None, 3, "q1", {"q1": 1}):
        with pytest.raises(InvalidArgumentTypeError, match="queries must be a sequence"):
            JudgedSet(bad)  # type: ignore[arg-type]
    for judgements in (None, [("a", 1)], "a"):
        with pytest.raises(InvalidArgumentTypeError, match="judgements must be a mapping"):
            JudgedQuery("q", "x", judgements)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["a\x00b", "\ud800.jsonl"])
def test_a_file_name_no_file_can_have_is_an_invalid_argument(name: str) -> None:
    with pytest.raises(InvalidArgumentError, match="not a usable file name"):
        JudgedSet.load(name)
    with pytest.raises(InvalidArgumentError, match="not a usable file name"):
        JudgedSet.load("/dev/null", name)


def test_a_loaded_set_carries_the_digest_of_the_bytes_it_read(tmp_path: Path) -> None:
    """docs/spec.md §14.3: a pipe is read once, and a file may change after
    it was read: tune's provenance hashes what was measured."""
    import hashlib

    data = b'{"qid": "q", "query": "x", "relevant": {"d": 1}}\n'
    fifo = tmp_path / "q.jsonl"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_bytes, args=(data,))
    writer.start()
    judged = JudgedSet.load(fifo)
    writer.join()
    assert judged.sha256 == "sha256:" + hashlib.sha256(data).hexdigest()
    assert [q.qid for q in judged] == ["q"]
    assert JudgedSet.parse_jsonl(data).sha256 is None


def test_a_numpy_grade_is_a_whole_number() -> None:
    # docs/spec.md §5.1: numpy's integers are whole numbers, kept as int.
    import numpy as np

    q = JudgedQuery("q", "text", {"d": np.int64(2), "e": np.uint8(0)})
    assert dict(q.judgements) == {"d": 2, "e": 0}
    assert all(type(g) is int for g in q.judgements.values())
    with pytest.raises(InvalidArgumentError, match="grade"):
        JudgedQuery("q", "text", {"d": np.float64(2.0)})


def test_readers_refuse_what_is_no_path_and_no_text() -> None:
    """docs/spec.md §11.1: okfast's errors, not a bare TypeError or an
    AttributeError from inside; a blank query is refused as a file's is."""
    for path in (None, 3, b"/x.jsonl"):
        with pytest.raises(InvalidArgumentTypeError, match="a judged queries path is text"):
            JudgedSet.load(path)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="a judged queries path is empty"):
        JudgedSet.load("")
    with pytest.raises(InvalidArgumentTypeError, match="<jsonl> must be text or bytes"):
        JudgedSet.parse_jsonl(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentTypeError, match="<queries> must be text or bytes"):
        JudgedSet.parse_trec("q 0 d 1", None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="judged query 'a': the query is blank"):
        JudgedQuery("a", " \t", {"d": 1})
