"""Judged queries (docs/spec.md §11.1): JSON Lines, or TREC qrels plus a queries TSV.

A judged set is read line by line. A line that cannot be used is reported as
a diagnostic naming its file and line (``path`` is ``FILE:LINE``) and the
other lines are still used, as a catalog's or a bundle's problems are data
(§1.6, §4.1). Only a file that cannot be read at all raises
(:class:`~okfast.errors.InvalidArgumentError`: it is the caller's argument).

Doc ids are kept as written here; which concept of which source each one names
is decided against a catalog when the set is evaluated (§11.2).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import unquote

from okfast import _native, strict_json
from okfast.arguments import surrogate_in
from okfast.errors import InvalidArgumentError, InvalidArgumentTypeError
from okfast.model import Diagnostic, DiagnosticCode, Severity
from okfast.paths import directory_text
from okfast.scoring import whole_of

#: The white space of docs/spec.md (not Python's ``str.split`` set).
_WHITE_SPACE: str = _native.WHITE_SPACE
_WS_RUN = re.compile("[" + re.escape(_WHITE_SPACE) + "]+")
#: What a TREC file cannot hold in a field: white space splits fields, and
#: ``%`` must itself be encoded so that decoding gives the id back (§11.1);
#: so must U+001C–U+001F, which are no white space but which Python's
#: ``str.split`` splits at, as the tools reading run files with it do.
_ENCODE = re.compile("[%\x1c-\x1f" + re.escape(_WHITE_SPACE) + "]")
_GRADE = re.compile("[0-9]+")
#: trec_eval keeps a grade in a C ``int``.
_MAX_GRADE = 2**31 - 1
_GRADE_RANGE = f"a whole number from 0 to {_MAX_GRADE}"


def _whole(digits: str) -> int | None:
    """ASCII digits as a number, or ``None`` when too long to be a grade (Python
    refuses to convert very long digit strings)."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= 10 else None


def _is_text(value: object) -> bool:
    """A string the metric library can take: valid Unicode (no lone
    surrogate, JSON's ``\\ud800``) without a NUL, which its C code reads as
    the end of the id (docs/spec.md §11.1)."""
    return isinstance(value, str) and surrogate_in(value) is None and "\x00" not in value


def _first_repeated(keys: Iterator[str]) -> str | None:
    """The first key seen before (in linear time: a line may hold many)."""
    seen: set[str] = set()
    for k in keys:
        if k in seen:
            return k
        seen.add(k)
    return None


def _not_text(value: str) -> str:
    """Why :func:`_is_text` refuses ``value``, as a predicate of it."""
    if "\x00" in value:
        return "holds a NUL character (the metric library would end the id there)"
    return "is not valid Unicode text (a lone surrogate)"


def _is_grade(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_GRADE


def encode_id(text: str) -> str:
    """Percent-encode ``%``, every white-space character and U+001C–U+001F
    (as the UTF-8 bytes ``%XX``, upper-case hex), so the text is one TREC
    field to any reader (§11.1)."""
    return _ENCODE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), text)


def decode_id(text: str) -> str:
    """Undo :func:`encode_id`: every ``%XX`` is a byte of UTF-8; a ``%`` not
    followed by two hex digits stays as it is. Invalid UTF-8 raises
    ``UnicodeDecodeError``."""
    return unquote(text, errors="strict")


@dataclass(frozen=True, slots=True)
class JudgedQuery:
    """One judged query: its id, its text, and the grade of each judged doc id
    (as written in the file, in file order). Grade 0 is judged not relevant;
    anything unlisted is 0 too."""

    qid: str
    text: str
    judgements: Mapping[str, int]

    def __post_init__(self) -> None:
        # The metric library hands ids to C as UTF-8: a lone surrogate there
        # crashes the interpreter, and a NUL ends the id early (wrong metrics),
        # so both are refused here (docs/spec.md §11.1). The query text goes
        # to okfast's search only: a NUL in it is searched.
        if not isinstance(self.text, str) or surrogate_in(self.text) is not None:
            raise InvalidArgumentError(
                f"a judged query's query text {self.text!r} is not valid Unicode text"
            )
        if not self.text.strip():
            # As a file's line is refused (§11.1): no Query can be made of it.
            raise InvalidArgumentError(f"judged query {self.qid!r}: the query is blank")
        if not isinstance(self.judgements, Mapping):
            raise InvalidArgumentTypeError(
                "a judged query's judgements must be a mapping of doc id to grade,"
                f" got {type(self.judgements).__name__}"
            )
        for what, s in (("qid", self.qid), *(("doc id", d) for d in self.judgements)):
            if not isinstance(s, str):
                why = "is not a string"
            elif not s:
                # An empty id would be no field at all in a run file (§11.4).
                why = "is empty"
            elif not _is_text(s):
                why = _not_text(s)
            else:
                continue
            raise InvalidArgumentError(f"a judged query's {what} {s!r} {why}")
        # A copy, read-only: the checks below must hold for what is measured.
        # Grades go to C as an `int` too: a larger one is wrapped (wrong
        # metrics) or crashes the interpreter, as a file's would (§11.1).
        # A numpy integer is a whole number (§5.1), kept as an int.
        grades = {}
        for doc, grade in self.judgements.items():
            whole = whole_of(grade)
            if whole is None or not _is_grade(whole):
                raise InvalidArgumentError(
                    f"a judged query's grade of {doc!r} must be {_GRADE_RANGE}, got {grade!r}"
                )
            grades[doc] = whole
        object.__setattr__(self, "judgements", MappingProxyType(grades))


@dataclass(frozen=True)
class JudgedSet:
    """The usable judged queries of a set, in file order, and the problems met
    while reading it (docs/spec.md §11.1)."""

    queries: tuple[JudgedQuery, ...]
    diagnostics: tuple[Diagnostic, ...] = ()
    #: ``FILE:LINE`` of each ``(qid, doc id)`` judgement, for later diagnostics.
    locations: Mapping[tuple[str, str], str] = field(
        default_factory=dict, repr=False, compare=False
    )
    #: ``sha256:`` + hex SHA-256 of the qrels file's bytes as read, for a set
    #: :meth:`load` read (the file may be a pipe, read once, or change later).
    sha256: str | None = field(default=None, compare=False)
    #: The same of the queries file, for TREC input read by :meth:`load`.
    queries_sha256: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # Results and judgements are keyed by qid: a second query of the same
        # qid would be scored with the other's ranking (a file's readers keep
        # the first and report the rest, §11.1).
        for name in ("queries", "diagnostics"):
            items = getattr(self, name)
            if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
                raise InvalidArgumentTypeError(
                    f"a judged set's {name} must be a sequence, got {type(items).__name__}"
                )
            # A tuple, a copy: a generator would be used up by the checks
            # below and leave nothing to measure.
            object.__setattr__(self, name, tuple(items))
        seen: set[str] = set()
        for q in self.queries:
            if not isinstance(q, JudgedQuery):
                raise InvalidArgumentTypeError(
                    f"a judged set holds JudgedQuery items, got {type(q).__name__}"
                )
            if q.qid in seen:
                raise InvalidArgumentError(f"qid {q.qid!r} is in the judged set twice")
            seen.add(q.qid)

    def __len__(self) -> int:
        return len(self.queries)

    def __iter__(self) -> Iterator[JudgedQuery]:
        return iter(self.queries)

    @classmethod
    def load(
        cls, qrels: str | os.PathLike[str], queries: str | os.PathLike[str] | None = None
    ) -> JudgedSet:
        """JSON Lines from ``qrels``; or, when ``queries`` (a ``qid<TAB>query``
        file) is given, TREC qrels from ``qrels``."""
        data = _read(qrels)
        if queries is None:
            judged = cls.parse_jsonl(data, name=os.fspath(qrels))
            return replace(judged, sha256=_sha256(data))
        texts = _read(queries)
        judged = cls.parse_trec(
            data, texts, qrels_name=os.fspath(qrels), queries_name=os.fspath(queries)
        )
        return replace(judged, sha256=_sha256(data), queries_sha256=_sha256(texts))

    def digests(self) -> dict[str, str | None]:
        """What a tune's provenance says of the set (docs/spec.md §14.3):
        ``qrels_sha256``, and ``queries_sha256`` for TREC input."""
        out = {"qrels_sha256": self.sha256}
        if self.queries_sha256 is not None:
            out["queries_sha256"] = self.queries_sha256
        return out

    @classmethod
    def parse_jsonl(cls, data: bytes | str, *, name: str = "<jsonl>") -> JudgedSet:
        """One ``{"qid", "query", "relevant": {doc id: grade}}`` object a line."""
        r = _Reader()
        for n, line in _lines(data, name, r):
            r.jsonl_line(line, name, n)
        return r.done([q for q in r.texts if q in r.judged])

    @classmethod
    def parse_trec(
        cls,
        qrels: bytes | str,
        queries: bytes | str,
        *,
        qrels_name: str = "<qrels>",
        queries_name: str = "<queries>",
    ) -> JudgedSet:
        """TREC qrels (``qid iteration docid grade``) and ``qid<TAB>query`` lines;
        qids and doc ids percent-encoded as :func:`encode_id` writes them."""
        r = _Reader()
        for n, line in _lines(queries, queries_name, r):
            r.tsv_line(line, queries_name, n)
        for n, line in _lines(qrels, qrels_name, r):
            r.qrels_line(line, qrels_name, n)
        for qid, where in r.first_judged.items():
            if qid not in r.texts:
                r.problem(
                    DiagnosticCode.QUERY_TEXT_MISSING,
                    where,
                    f"Query '{qid}' is judged but has no text in {queries_name}; "
                    "it is not evaluated.",
                )
        for qid in r.texts:
            if qid not in r.judged:
                r.report_unjudged(qid)
        return r.done([q for q in r.texts if q in r.judged])


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _read(path: str | os.PathLike[str]) -> bytes:
    given = directory_text("a judged queries path", path)
    try:
        return Path(given).read_bytes()
    except (ValueError, UnicodeEncodeError) as e:
        # A NUL or a lone surrogate: no file can have that name.
        raise InvalidArgumentError(
            f"cannot read judged queries {os.fspath(path)!r}: not a usable file name ({e})"
        ) from None
    except OSError as e:
        raise InvalidArgumentError(
            f"cannot read judged queries {os.fspath(path)}: {e.strerror or e}"
        ) from None


def _lines(data: bytes | str, name: str, r: _Reader) -> Iterator[tuple[int, str]]:
    """Non-blank lines with their 1-based numbers: split on ``\\n``, one ``\\r``
    before it removed, one leading BOM removed; a line that is not UTF-8 is a
    diagnostic."""
    if not isinstance(data, bytes | str):
        raise InvalidArgumentTypeError(f"{name} must be text or bytes, got {type(data).__name__}")
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    for i, piece in enumerate(raw.split(b"\n"), 1):
        piece = piece.removesuffix(b"\r")
        try:
            line = piece.decode("utf-8")
        except UnicodeDecodeError as e:
            r.bad(name, i, f"not valid UTF-8 (first invalid byte at offset {e.start})")
            continue
        if line.strip(_WHITE_SPACE):
            yield i, line


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its key/value pairs, so duplicate keys can be seen."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class _Reader:
    """What the lines read so far hold; the first of duplicates wins."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.texts: dict[str, str] = {}
        self.text_at: dict[str, str] = {}
        self.judged: dict[str, dict[str, int]] = {}
        self.first_judged: dict[str, str] = {}
        self.locations: dict[tuple[str, str], str] = {}

    def problem(self, code: DiagnosticCode, where: str, message: str) -> None:
        severity: Severity = "error" if code is DiagnosticCode.BAD_JUDGED_LINE else "warning"
        self.diagnostics.append(Diagnostic(code.value, message, where, None, severity))

    def bad(self, name: str, line: int, why: str) -> None:
        self.problem(DiagnosticCode.BAD_JUDGED_LINE, f"{name}:{line}", f"{why}; line skipped")

    def add_query(self, qid: str, text: str, where: str) -> bool:
        if qid in self.texts:
            self.problem(
                DiagnosticCode.DUPLICATE_QUERY,
                where,
                f"Query '{qid}' was already given at {self.text_at[qid]}; this one is ignored.",
            )
            return False
        self.texts[qid] = text
        self.text_at[qid] = where
        return True

    def judge(self, qid: str, doc: str, grade: int, where: str) -> None:
        docs = self.judged.setdefault(qid, {})
        self.first_judged.setdefault(qid, where)
        if doc in docs:
            self.problem(
                DiagnosticCode.DUPLICATE_JUDGEMENT,
                where,
                f"Document '{doc}' is judged twice for query '{qid}'; "
                f"the first grade ({docs[doc]}) is kept.",
            )
            return
        docs[doc] = grade
        self.locations[(qid, doc)] = where

    def report_unjudged(self, qid: str) -> None:
        self.problem(
            DiagnosticCode.UNJUDGED_QUERY,
            self.text_at[qid],
            f"Query '{qid}' has no judged document; it is not evaluated.",
        )

    def done(self, qids: list[str]) -> JudgedSet:
        queries = tuple(JudgedQuery(q, self.texts[q], self.judged[q]) for q in qids)
        return JudgedSet(queries, tuple(self.diagnostics), self.locations)

    # -- the three line formats ----------------------------------------------------

    def jsonl_line(self, line: str, name: str, n: int) -> None:
        try:
            # A grade of more digits than Python converts is valid JSON and
            # a grade out of range, not a line that is not JSON.
            obj = json.loads(
                line,
                object_pairs_hook=_Pairs,
                parse_constant=_no_constant,
                parse_int=strict_json.integer,
            )
        except RecursionError:
            self.bad(name, n, f"not valid JSON: {strict_json.NESTED_TOO_DEEPLY}")
            return
        except ValueError as e:
            # Some of json's messages end in "at" ("Invalid control character at").
            why = (
                f"{e.msg.removesuffix(' at')} at column {e.colno}"
                if isinstance(e, json.JSONDecodeError)
                else e
            )
            self.bad(name, n, f"not valid JSON: {why}")
            return
        if not isinstance(obj, _Pairs):
            self.bad(name, n, "not a JSON object")
            return
        fields = dict(obj)
        if len(fields) < len(obj):
            self.bad(name, n, f"the key {_first_repeated(k for k, _ in obj)!r} appears twice")
            return
        qid = fields.get("qid")
        if isinstance(qid, int) and not isinstance(qid, bool):
            qid = str(qid)
        if isinstance(qid, strict_json.OversizedInteger):
            self.bad(name, n, f'"qid" is {qid!r}, more than Python reads; write it as a string')
            return
        if not isinstance(qid, str) or not qid:
            self.bad(name, n, '"qid" must be a non-empty string or an integer')
            return
        if not _is_text(qid):
            self.bad(name, n, f'"qid" {_not_text(qid)}')
            return
        text = fields.get("query")
        # A NUL in the text is searched (only ids go to the metric's C code).
        if isinstance(text, str) and surrogate_in(text) is not None:
            self.bad(name, n, '"query" is not valid Unicode text (a lone surrogate)')
            return
        if not isinstance(text, str) or not text.strip():
            # The same rule as Query.text (docs/spec.md §5.1).
            self.bad(name, n, '"query" must be non-blank text')
            return
        relevant = fields.get("relevant")
        if not isinstance(relevant, _Pairs):
            self.bad(name, n, '"relevant" must be an object of doc id to grade')
            return
        for doc, grade in relevant:
            if not doc:
                self.bad(name, n, "a doc id is empty")
                return
            if not _is_text(doc):
                self.bad(name, n, f"the doc id {doc!r} {_not_text(doc)}")
                return
            if not _is_grade(grade):
                self.bad(name, n, f"the grade of {doc!r} must be {_GRADE_RANGE}")
                return
        where = f"{name}:{n}"
        if not self.add_query(qid, text, where):
            return
        for doc, grade in relevant:
            self.judge(qid, doc, grade, where)
        if not relevant:
            self.report_unjudged(qid)

    def tsv_line(self, line: str, name: str, n: int) -> None:
        qid_field, tab, text = line.partition("\t")
        if not tab:
            self.bad(name, n, "expected qid<TAB>query")
            return
        try:
            qid = decode_id(qid_field)
        except UnicodeDecodeError:
            self.bad(name, n, "the qid's percent-encoding is not UTF-8")
            return
        if not qid:
            self.bad(name, n, "the qid is empty")
            return
        if not _is_text(qid):
            self.bad(name, n, f"the qid {_not_text(qid)}")
            return
        if not text.strip():
            self.bad(name, n, "the query is blank")
            return
        self.add_query(qid, text, f"{name}:{n}")

    def qrels_line(self, line: str, name: str, n: int) -> None:
        fields = [f for f in _WS_RUN.split(line) if f]
        if len(fields) != 4:
            self.bad(name, n, f"expected 4 fields (qid iteration docid grade), found {len(fields)}")
            return
        qid_field, _iteration, doc_field, grade_field = fields
        if not (_GRADE.fullmatch(grade_field) and _is_grade(_whole(grade_field))):
            self.bad(name, n, f"the grade {grade_field!r} is not {_GRADE_RANGE}")
            return
        try:
            qid, doc = decode_id(qid_field), decode_id(doc_field)
        except UnicodeDecodeError:
            self.bad(name, n, "a percent-encoded field is not UTF-8")
            return
        for what, value in (("qid", qid), ("doc id", doc)):
            if not _is_text(value):
                self.bad(name, n, f"the {what} {value!r} {_not_text(value)}")
                return
        # `_whole`, not int(): past 4,300 digits (leading zeros) int() raises.
        grade = _whole(grade_field)
        assert grade is not None  # checked above
        self.judge(qid, doc, grade, f"{name}:{n}")
