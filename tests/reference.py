"""Pure-Python reference oracle for okfast (slow, obviously correct).

This module is the independent oracle that property tests compare the Rust
core against. It follows, line by line:

* /work/shared/SPEC.md -- the preamble (white space, trim, fold, contains_ci,
  ordinal order), section 1 (bundles and concepts), 2.1-2.2 (trust tier,
  stale_after) and 3 (the scorer);
* docs/frontmatter-yaml.md -- the exact YAML subset, its error messages and
  the diagnostic messages and order.

Only the standard library is used; clarity wins over speed everywhere.
Places where the documents leave a choice open are marked ``AMBIGUITY:`` with
the decision taken.

Public names: WHITE_SPACE, is_ws, trim, split_ws, fold, contains_ci, id_key,
YamlError, parse_yaml, parse_stale_after, split_lines, RefDiagnostic,
RefConcept, RefBundle, read_concept, load_bundle, field_texts, score,
excerpt, search.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

__all__ = [
    "WHITE_SPACE",
    "is_ws",
    "trim",
    "split_ws",
    "fold",
    "contains_ci",
    "id_key",
    "YamlError",
    "parse_yaml",
    "parse_stale_after",
    "split_lines",
    "RefDiagnostic",
    "RefConcept",
    "RefBundle",
    "read_concept",
    "load_bundle",
    "field_texts",
    "score",
    "excerpt",
    "search",
]

# ---------------------------------------------------------------------------
# SPEC preamble: text terms
# ---------------------------------------------------------------------------

# SPEC preamble "White space": exactly the Unicode White_Space characters
# U+0009-U+000D, U+0020, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028,
# U+2029, U+202F, U+205F, U+3000.
WHITE_SPACE: frozenset[str] = frozenset(
    [chr(c) for c in range(0x0009, 0x000D + 1)]
    + ["\u0020", "\u0085", "\u00a0", "\u1680"]
    + [chr(c) for c in range(0x2000, 0x200A + 1)]
    + ["\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
)


def is_ws(c: str) -> bool:
    """True when the one-character string ``c`` is SPEC white space."""
    return c in WHITE_SPACE


def trim(s: str) -> str:
    """SPEC preamble "trim": remove leading and trailing white space."""
    start = 0
    end = len(s)
    while start < end and is_ws(s[start]):
        start += 1
    while end > start and is_ws(s[end - 1]):
        end -= 1
    return s[start:end]


def split_ws(s: str) -> list[str]:
    """SPEC 3.1: split on SPEC white space, empty pieces dropped.

    Deliberately not ``str.split()``, whose white-space set differs (it also
    splits on U+001C-U+001F, which are not White_Space).
    """
    pieces: list[str] = []
    current: list[str] = []
    for c in s:
        if is_ws(c):
            if current:
                pieces.append("".join(current))
                current = []
        else:
            current.append(c)
    if current:
        pieces.append("".join(current))
    return pieces


def _fold_char(c: str) -> str:
    # SPEC preamble "fold(c)": the simple uppercase when Unicode's uppercase
    # of c is exactly one character, else c itself (ß stays ß).
    u = c.upper()
    return u if len(u) == 1 else c


def fold(s: str) -> str:
    """SPEC preamble "fold(s)": fold every character; len(fold(s)) == len(s)."""
    return "".join(_fold_char(c) for c in s)


def contains_ci(h: str, n: str) -> bool:
    """SPEC preamble "contains_ci(h, n)": fold(n) is a substring of fold(h)."""
    return fold(n) in fold(h)


def id_key(concept_id: str) -> tuple[str, ...]:
    """SPEC 1.2 "Id order" as a sort key.

    Compare the '/'-segment lists element by element in ordinal order (Python
    ``<`` on ``str`` is code-point order); a prefix sorts first. A tuple of
    the segments has exactly that ordering, so ``a/b`` < ``a-b`` because
    ("a", "b") < ("a-b",).
    """
    return tuple(concept_id.split("/"))


# ---------------------------------------------------------------------------
# docs/frontmatter-yaml.md: the YAML subset
# ---------------------------------------------------------------------------


class YamlError(Exception):
    """A frontmatter YAML error.

    ``message`` is the doc's message *without* the
    ``Invalid YAML frontmatter: `` prefix (read_concept adds it).
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _NeedMore(Exception):
    """Internal: a flow collection ran past the text read so far."""


MAX_DEPTH = 64  # doc "Depth": opening a collection at level 65 is an error
_NULL_WORDS = ("", "null", "Null", "NULL", "~")  # doc "Scalar meaning"


def _indent(line: str) -> int:
    # doc "Lines": indent(line) = number of leading U+0020 spaces (only).
    n = 0
    while n < len(line) and line[n] == " ":
        n += 1
    return n


def _ignorable(line: str) -> bool:
    # doc "Lines": trim(line) (SPEC white space) is empty or starts with '#'.
    t = trim(line)
    return t == "" or t.startswith("#")


def _empty_after_trim(line: str) -> bool:
    return trim(line) == ""


def _is_seq_start(content: str) -> bool:
    # doc "Block node" rule 1: `- ` or `-` alone (also `-` + tab).
    return content == "-" or content.startswith("- ") or content.startswith("-\t")


def _plain_null(text: str) -> str | None:
    # doc "Scalar meaning": a plain scalar whose text is empty, null, Null,
    # NULL or ~ is null; every other scalar is a string.
    return None if text in _NULL_WORDS else text


def _comment_cut(s: str) -> int | None:
    """Index of the space/tab that starts the first ` #` or tab-`#` in s."""
    for i in range(1, len(s)):
        if s[i] == "#" and s[i - 1] in " \t":
            return i - 1
    return None


def _tail_ok(tail: str) -> bool:
    """After a quoted scalar / flow collection / block scalar header: only
    spaces/tabs and an optional comment.

    AMBIGUITY: the doc says the comment is "a `#` preceded by a space or
    tab, or right after the spaces". Decision: the `#` must be preceded by at
    least one space or tab (YAML's rule), so `"x"#c` is an error while
    `"x" #c` is fine.
    """
    stripped = tail.lstrip(" \t")
    if stripped == "":
        return True
    return stripped.startswith("#") and len(stripped) < len(tail)


def _scan_quoted(s: str, start: int) -> int | None:
    """Find the end (exclusive index after the closing quote) of the quoted
    scalar opening at s[start]; None when it does not close before the end of
    s or a line break.

    Single-quoted: `''` is an escaped quote. Double-quoted: a backslash takes
    the next character with it (so `\\"` does not close); a backslash at the
    end of the text cannot close anything.
    """
    q = s[start]
    i = start + 1
    while i < len(s):
        ch = s[i]
        if ch == "\n":
            return None
        if q == '"':
            if ch == "\\":
                if i + 1 >= len(s) or s[i + 1] == "\n":
                    return None
                i += 2
                continue
            if ch == '"':
                return i + 1
        else:
            if ch == "'":
                if i + 1 < len(s) and s[i + 1] == "'":
                    i += 2
                    continue
                return i + 1
        i += 1
    return None


_SIMPLE_ESCAPES = {
    # doc "Quoted scalars": YAML 1.2 meanings of the short escapes.
    "0": "\x00",
    "a": "\x07",
    "b": "\x08",
    "t": "\t",
    "\t": "\t",
    "n": "\n",
    "v": "\x0b",
    "f": "\x0c",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "/": "/",
    "\\": "\\",
    "N": "\u0085",
    "_": "\u00a0",
    "L": "\u2028",
    "P": "\u2029",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _unquote(raw: str, line_no: int) -> str:
    """Text of a complete quoted scalar ``raw`` (both quotes included)."""
    q = raw[0]
    inner = raw[1:-1]
    if q == "'":
        # Single-quoted: '' is one ', every other character is literal.
        return inner.replace("''", "'")
    out: list[str] = []
    i = 0
    while i < len(inner):
        ch = inner[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        if i + 1 >= len(inner):  # cannot happen for a scanned scalar
            raise YamlError(f"invalid escape sequence at line {line_no}")
        e = inner[i + 1]
        if e in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[e])
            i += 2
            continue
        if e in _HEX_ESCAPES:
            width = _HEX_ESCAPES[e]
            digits = inner[i + 2 : i + 2 + width]
            if len(digits) != width or any(d not in _HEX_DIGITS for d in digits):
                raise YamlError(f"invalid escape sequence at line {line_no}")
            cp = int(digits, 16)
            # A surrogate or a value over U+10FFFF is invalid.
            if 0xD800 <= cp <= 0xDFFF or cp > 0x10FFFF:
                raise YamlError(f"invalid escape sequence at line {line_no}")
            out.append(chr(cp))
            i += 2 + width
            continue
        raise YamlError(f"invalid escape sequence at line {line_no}")
    return "".join(out)


class _Flow:
    """doc "Flow collections": a recursive-descent parser over the flow text.

    ``text`` starts with `[` or `{` and holds the lines read so far joined
    with '\\n'. Running past its end inside the collection raises _NeedMore
    and the caller appends the next line and parses again from scratch.
    Every error names ``line_no``, the line where the collection started
    ("N is always the line where the collection started").

    AMBIGUITY: an error found *before* the end of the text read so far (for
    example `[a,,b` with nothing after) is reported as that error, not as
    `unterminated flow collection`: the collection is read as it is
    extended, line by line, and the first error found ends parsing.
    AMBIGUITY: the depth error and the anchor/alias/tag and unterminated
    quoted scalar errors inside a flow collection also use the line where
    the outermost flow collection started.
    """

    # Flow white space: "spaces, tabs, \n" (doc); other SPEC white space is
    # not a separator (it is trimmed off plain scalars, though).
    SEP = " \t\n"

    def __init__(self, text: str, line_no: int) -> None:
        self.text = text
        self.pos = 0
        self.line_no = line_no

    def _err(self, what: str) -> YamlError:
        return YamlError(f"{what} at line {self.line_no}")

    def _skip(self) -> None:
        # White space separates tokens; `#` preceded by white space (or at
        # the start of a line, i.e. after '\n') starts a comment that runs to
        # the next '\n'. pos >= 1 here, because text[0] is the bracket.
        t = self.text
        while self.pos < len(t):
            c = t[self.pos]
            if c in self.SEP:
                self.pos += 1
            elif c == "#" and t[self.pos - 1] in self.SEP:
                nl = t.find("\n", self.pos)
                self.pos = len(t) if nl < 0 else nl
            else:
                break

    def _peek(self) -> str:
        if self.pos >= len(self.text):
            raise _NeedMore()
        return self.text[self.pos]

    def _check_node_indicator(self, c: str) -> None:
        # "&, *, ! at the start of an item, key or value: the anchor / alias /
        # tag errors."
        if c == "&":
            raise YamlError(f"YAML anchor (&) at line {self.line_no} is not supported")
        if c == "*":
            raise YamlError(f"YAML alias (*) at line {self.line_no} is not supported")
        if c == "!":
            raise YamlError(f"YAML tag (!) at line {self.line_no} is not supported")

    def collection(self, level: int) -> Any:
        """Parse the collection at self.pos, which opens at ``level``."""
        if level > MAX_DEPTH:
            raise YamlError(f"nesting deeper than 64 levels at line {self.line_no}")
        if self.text[self.pos] == "[":
            return self._sequence(level)
        return self._mapping(level)

    def _sequence(self, level: int) -> list[Any]:
        # `[ item, item, ... ]`, a trailing comma allowed.
        self.pos += 1
        items: list[Any] = []
        while True:
            self._skip()
            if self._peek() == "]":
                self.pos += 1
                return items
            items.append(self._node(level))
            self._skip()
            c = self._peek()
            if c == ",":
                self.pos += 1
                continue
            if c == "]":
                self.pos += 1
                return items
            raise self._err("invalid flow collection")

    def _mapping(self, level: int) -> dict[str, Any]:
        # `{ key: value, key, ... }` (a key without `:` has a null value;
        # first key wins).
        self.pos += 1
        result: dict[str, Any] = {}
        while True:
            self._skip()
            if self._peek() == "}":
                self.pos += 1
                return result
            key = self._key()
            self._skip()
            c = self._peek()
            value: Any = None
            if c == ":":
                # After a quoted key the `:` may be followed by anything
                # (JSON style `{"a":1}`); after a plain key the plain scanner
                # only stops at a `:` followed by white space , ] } or end.
                self.pos += 1
                self._skip()
                c = self._peek()
                if c in ",}":
                    # AMBIGUITY: `{a: , b: 1}` / `{a:}`: an empty *value* is
                    # null (as in YAML); only an empty sequence item or an
                    # empty key is "invalid flow collection".
                    value = None
                else:
                    value = self._node(level)
                    self._skip()
                    c = self._peek()
            if key not in result:
                result[key] = value
            if c == ",":
                self.pos += 1
                continue
            if c == "}":
                self.pos += 1
                return result
            raise self._err("invalid flow collection")

    def _key(self) -> str:
        c = self._peek()
        self._check_node_indicator(c)
        if c in "[{":
            # AMBIGUITY: keys are strings (doc "Nodes"), so a collection used
            # as a flow mapping key is "invalid flow collection".
            raise self._err("invalid flow collection")
        if c in "\"'":
            return self._quoted()
        text = self._plain_text()
        # Keys are kept as written: a plain key `null` is the string "null".
        return text

    def _node(self, level: int) -> Any:
        # "An item or value is a nested flow collection, a quoted scalar, or
        # a plain scalar."
        c = self._peek()
        self._check_node_indicator(c)
        if c in "[{":
            return self.collection(level + 1)
        if c in "\"'":
            return self._quoted()
        return _plain_null(self._plain_text())

    def _quoted(self) -> str:
        # A quoted scalar inside a flow collection must not contain a line
        # break: `unterminated quoted scalar at line N`.
        end = _scan_quoted(self.text, self.pos)
        if end is None:
            raise self._err("unterminated quoted scalar")
        raw = self.text[self.pos : end]
        self.pos = end
        return _unquote(raw, self.line_no)

    def _plain_text(self) -> str:
        """Plain scalar: the text up to the first `,` `[` `]` `{` `}`, ` #`
        (a `#` preceded by white space), or `:` followed by white space / `,`
        / `]` / `}` / the end; trimmed. An empty one is invalid.

        A plain scalar that spans a line break inside the collection is
        folded as YAML does: split on '\\n', trim each piece, drop empty
        pieces, join with one space (docs/frontmatter-yaml.md "Flow").
        """
        t = self.text
        start = self.pos
        i = start
        while True:
            if i >= len(t):
                raise _NeedMore()
            ch = t[i]
            if ch in ",[]{}":
                break
            if ch == "#" and t[i - 1] in self.SEP:
                break
            if ch == ":" and (i + 1 >= len(t) or t[i + 1] in self.SEP + ",]}"):
                break
            i += 1
        self.pos = i
        pieces = [trim(x) for x in t[start:i].split("\n")]
        text = " ".join(x for x in pieces if x)
        if text == "":
            raise self._err("invalid flow collection")
        return text


class _Parser:
    """doc "Nodes": block-structure parser over the frontmatter lines.

    Line indexes are 0-based internally; messages use 1-based line numbers
    (line 1 = the line after the opening `---`). Every method that reads a
    node returns (value, index of the first line it did not consume).
    ``level`` arguments are the nesting level of the *enclosing* collection
    (0 above the top node); a collection opened inside is at level + 1.
    """

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.n = len(lines)

    # -- helpers ----------------------------------------------------------

    def next_sig(self, i: int) -> int:
        """Index of the first non-ignorable line at or after i (or n)."""
        while i < self.n and _ignorable(self.lines[i]):
            i += 1
        return i

    def start_check(self, k: int) -> None:
        """doc "Lines": checks on a non-ignorable line read as the start of a
        block node or entry."""
        line = self.lines[k]
        ind = _indent(line)
        content = line[ind:]
        no = k + 1
        if content and is_ws(content[0]):
            raise YamlError(f"invalid indentation character at line {no}")
        if ind == 0:
            if content.startswith("%"):
                raise YamlError(f"YAML directive (%) at line {no} is not supported")
            if content in ("...", "---") or content[:4] in ("... ", "...\t", "--- ", "---\t"):
                raise YamlError(f"YAML document marker at line {no} is not supported")

    def entry(self, c: str, line_no: int) -> tuple[str, str] | None:
        """doc "Mapping entry": (key, rest) when content ``c`` is a mapping
        entry, None when it is not; raises for the rejected constructs."""
        if c == "":
            return None
        ch = c[0]
        if ch in "\"'":
            # The quoted scalar closes on this line and is followed by
            # optional spaces/tabs and `:` + space/tab/end of line.
            end = _scan_quoted(c, 0)
            if end is None:
                return None
            after = c[end:].lstrip(" \t")
            if not after.startswith(":"):
                return None
            if len(after) > 1 and after[1] not in " \t":
                return None
            key = _unquote(c[:end], line_no)
            return key, after[1:].lstrip(" \t")
        if ch == "?" and (len(c) == 1 or c[1] in " \t"):
            raise YamlError(f"YAML explicit key (?) at line {line_no} is not supported")
        if ch == "&":
            raise YamlError(f"YAML anchor (&) at line {line_no} is not supported")
        if ch == "*":
            raise YamlError(f"YAML alias (*) at line {line_no} is not supported")
        if ch == "!":
            raise YamlError(f"YAML tag (!) at line {line_no} is not supported")
        if ch in "[{#|>":
            return None
        # A plain key: the first `:` followed by a space, a tab or the end of
        # the line; a ` #` or tab-`#` before it (or no such `:`) → not an
        # entry.
        colon = -1
        for i, x in enumerate(c):
            if x == "#" and i > 0 and c[i - 1] in " \t":
                return None
            if x == ":" and (i + 1 == len(c) or c[i + 1] in " \t"):
                colon = i
                break
        if colon < 0:
            return None
        key = trim(c[:colon])
        if key == "":
            raise YamlError(f"empty key at line {line_no}")
        # AMBIGUITY: the doc's entry test does not exclude contents starting
        # with `- `: in a block mapping loop a line `- a: b` at the mapping's
        # indent is an entry with key `- a` (a block *node* start tests the
        # sequence rule first, so this only matters inside a mapping).
        return key, c[colon + 1 :].lstrip(" \t")

    # -- block nodes -------------------------------------------------------

    def block_node(
        self, i: int, m: int, content: str, p: int, level: int, compact: bool = False
    ) -> tuple[Any, int]:
        """doc "Block node at indent m": the node whose first line is line i,
        with ``content`` the text at column m. ``compact`` = the node starts
        inside a sequence item's line (no start checks: the line itself
        starts with `-`)."""
        if not compact:
            self.start_check(i)
        if _is_seq_start(content):  # rule 1
            return self.block_sequence(i, m, content, level + 1)
        if self.entry(content, i + 1) is not None:  # rule 2
            return self.block_mapping(i, m, content, level + 1)
        # rule 3: a scalar or flow value, read by value text, owner indent p.
        return self.value_text(content, i, p, level, same_indent_seq=False)

    def block_mapping(self, i: int, m: int, content: str, level: int) -> tuple[dict[str, Any], int]:
        """doc "Block mapping at m"."""
        if level > MAX_DEPTH:
            raise YamlError(f"nesting deeper than 64 levels at line {i + 1}")
        result: dict[str, Any] = {}
        while True:
            ent = self.entry(content, i + 1)
            if ent is None:
                raise YamlError(f"expected 'key: value' at line {i + 1}")
            key, rest = ent
            value, j = self.value_text(rest, i, m, level, same_indent_seq=True)
            # First occurrence wins; later duplicates were still parsed above
            # (so errors in them count) and are dropped here.
            if key not in result:
                result[key] = value
            k = self.next_sig(j)
            if k >= self.n:
                return result, k
            ind = _indent(self.lines[k])
            if ind < m:
                return result, k
            if ind > m:
                raise YamlError(f"unexpected indentation at line {k + 1}")
            self.start_check(k)
            i = k
            content = self.lines[k][m:]

    def block_sequence(self, i: int, m: int, content: str, level: int) -> tuple[list[Any], int]:
        """doc "Block sequence at m"."""
        if level > MAX_DEPTH:
            raise YamlError(f"nesting deeper than 64 levels at line {i + 1}")
        items: list[Any] = []
        while True:
            # content is `-` followed by a space, a tab or the end.
            after = content[1:]
            rest = after.lstrip(" \t")
            # The item column is m + 1 + (number of spaces and tabs after the -).
            col = m + 1 + (len(after) - len(rest))
            # AMBIGUITY: the doc lists "`- `, or is `-`" for a compact nested
            # sequence; `-<TAB>` is included too, as in block node rule 1.
            if _is_seq_start(rest) or self.entry(rest, i + 1) is not None:
                value, j = self.block_node(i, col, rest, m, level, compact=True)
            else:
                value, j = self.value_text(rest, i, m, level, same_indent_seq=False)
            items.append(value)
            k = self.next_sig(j)
            if k >= self.n:
                return items, k
            line = self.lines[k]
            ind = _indent(line)
            if ind > m:
                raise YamlError(f"unexpected indentation at line {k + 1}")
            if ind == m and _is_seq_start(line[ind:]):
                i = k
                content = line[ind:]
                continue
            return items, k

    # -- value text --------------------------------------------------------

    def value_text(
        self, r: str, i: int, m: int, level: int, same_indent_seq: bool
    ) -> tuple[Any, int]:
        """doc "Value text (rest r on line N, owner indent m)"."""
        no = i + 1
        if r == "" or r.startswith("#"):
            # The value is on the following lines.
            k = self.next_sig(i + 1)
            if k >= self.n:
                return None, k
            line = self.lines[k]
            ind = _indent(line)
            if ind > m:
                return self.block_node(k, ind, line[ind:], m, level)
            if ind == m and same_indent_seq and _is_seq_start(line[ind:]):
                return self.block_sequence(k, m, line[ind:], level + 1)
            return None, k
        c = r[0]
        if c == "&":
            raise YamlError(f"YAML anchor (&) at line {no} is not supported")
        if c == "*":
            raise YamlError(f"YAML alias (*) at line {no} is not supported")
        if c == "!":
            raise YamlError(f"YAML tag (!) at line {no} is not supported")
        if c in "\"'":
            end = _scan_quoted(r, 0)
            if end is None:
                raise YamlError(f"unterminated quoted scalar at line {no}")
            # AMBIGUITY: `"\q" x` has two errors; the scalar is read (and
            # unescaped) first, so `invalid escape sequence` wins over
            # `unexpected text after quoted scalar`.
            value = _unquote(r[:end], no)
            if not _tail_ok(r[end:]):
                raise YamlError(f"unexpected text after quoted scalar at line {no}")
            return value, i + 1
        if c in "[{":
            return self.flow(r, i, level)
        if c in "|>":
            return self.block_scalar(r, i, m)
        return self.plain(r, i, m)

    def flow(self, r: str, i: int, level: int) -> tuple[Any, int]:
        """doc "Value text", `[`/`{`: the text is r, then, while the
        collection is not closed, '\\n' and the next line (whatever it
        holds)."""
        j = i
        buf = r
        while True:
            parser = _Flow(buf, i + 1)
            try:
                value = parser.collection(level + 1)
                break
            except _NeedMore:
                if j + 1 >= self.n:
                    raise YamlError(f"unterminated flow collection at line {i + 1}") from None
                j += 1
                buf = buf + "\n" + self.lines[j]
        tail = buf[parser.pos :]
        assert "\n" not in tail  # the collection closed on the last line read
        if not _tail_ok(tail):
            closing_line = i + 1 + buf.count("\n", 0, parser.pos)
            raise YamlError(f"unexpected text after flow collection at line {closing_line}")
        return value, j + 1

    def plain(self, r: str, i: int, m: int) -> tuple[str | None, int]:
        """doc "Value text", plain scalar (the lenient rule: `: ` inside is
        text), with continuation lines."""
        cut = _comment_cut(r)
        if cut is not None:
            # r held a comment: the scalar is this line only.
            return _plain_null(trim(r[:cut])), i + 1
        text = trim(r)
        # Continuation lines: every next line that is empty-after-trim or has
        # indent > m and does not start (after its spaces) with `#`, as long
        # as a later non-empty such line follows.
        pieces: list[str] = []  # "" = an empty line
        pending_empty = 0
        j = i + 1
        while j < self.n:
            line = self.lines[j]
            if _empty_after_trim(line):
                pending_empty += 1
                j += 1
                continue
            ind = _indent(line)
            # A comment line (its trim starts with `#`) is ignorable, never
            # a continuation line.
            if ind <= m or trim(line).startswith("#"):
                break
            pieces.extend([""] * pending_empty)
            pending_empty = 0
            piece = trim(line)
            # AMBIGUITY: "trimmed and cut at its first ` #`": the piece is
            # trimmed again after the cut (as the first line is).
            pc = _comment_cut(piece)
            j += 1
            if pc is not None:
                pieces.append(trim(piece[:pc]))
                break  # a comment ends the scalar after that line
            pieces.append(piece)
        next_index = j - pending_empty  # trailing empty lines are not taken
        # Joining: consecutive non-empty pieces with one space; k empty lines
        # between two pieces give k '\n'.
        # AMBIGUITY: if the first line's text trims to "" (possible only when
        # r is e.g. a lone NBSP) and continuation lines follow, the join is
        # applied literally: "" + " " + next piece.
        out = text
        empties = 0
        for piece in pieces:
            if piece == "":
                empties += 1
                continue
            out += (" " if empties == 0 else "\n" * empties) + piece
            empties = 0
        return _plain_null(out), next_index

    def block_scalar(self, r: str, i: int, m: int) -> tuple[str, int]:
        """doc "Block scalars"."""
        no = i + 1
        style = r[0]
        chomp: str | None = None
        digit: int | None = None
        k = 1
        # At most one chomping indicator and at most one digit 1-9, in
        # either order.
        for _ in range(2):
            if k >= len(r):
                break
            ch = r[k]
            if ch in "+-" and chomp is None:
                chomp = ch
            elif ch in "123456789" and digit is None:
                digit = int(ch)
            else:
                break
            k += 1
        if not _tail_ok(r[k:]):
            raise YamlError(f"invalid block scalar header at line {no}")

        # Content indent c: m + digit, else the indent of the first content
        # line that is not empty-after-trim (content lines: empty-after-trim
        # or indent > m).
        c: int | None
        if digit is not None:
            c = m + digit
        else:
            c = None
            t = i + 1
            while t < self.n:
                line = self.lines[t]
                if _empty_after_trim(line):
                    t += 1
                    continue
                if _indent(line) > m:
                    c = _indent(line)
                break
        # Collect: while a line is empty-after-trim or has indent > m; end
        # before the first non-empty line with indent < c.
        raw: list[str] = []
        j = i + 1
        while j < self.n:
            line = self.lines[j]
            if not _empty_after_trim(line):
                ind = _indent(line)
                if ind <= m or c is None or ind < c:
                    break
            raw.append(line)
            j += 1
        if c is None:
            # "no such line → the content is empty".
            # AMBIGUITY: this is "" whatever the chomping (the empty lines
            # consumed are not content lines).
            return "", j
        # Each content line is line[c..] (an empty-after-trim line shorter
        # than c gives ""; Python slicing does exactly that).
        content = [
            line[c:] if not _empty_after_trim(line) or _indent(line) >= c else "" for line in raw
        ]
        # AMBIGUITY: "empty line" (for folding and chomping) = a line that is
        # empty-after-trim, even when it has more spaces than c. Such a line's
        # extra spaces are kept in the middle of a literal scalar (the lines
        # are joined as they are) and dropped in a folded one / at the end.
        nonempty = [x for x, line in enumerate(content) if trim(line) != ""]
        if not nonempty:
            # Only possible with an explicit indentation digit.
            # AMBIGUITY: keep gives one '\n' per (trailing) empty line, strip
            # and clip give "" (clip adds '\n' only if there is a non-empty
            # line).
            return ("\n" * len(content) if chomp == "+" else ""), j
        first, last = nonempty[0], nonempty[-1]
        if style == "|":
            text = "\n".join(content[: last + 1])
        else:
            # Folded: leading empty lines give one '\n' each; between two
            # non-empty lines x, y with k empty lines: if neither starts with
            # a space or tab, k = 0 → " ", k > 0 → k '\n'; else k + 1 '\n'.
            text = "\n" * first + content[first]
            prev = content[first]
            empties = 0
            for line in content[first + 1 : last + 1]:
                if trim(line) == "":
                    empties += 1
                    continue
                if prev[:1] not in (" ", "\t") and line[:1] not in (" ", "\t"):
                    sep = " " if empties == 0 else "\n" * empties
                else:
                    sep = "\n" * (empties + 1)
                text += sep + line
                prev = line
                empties = 0
        trailing = len(content) - 1 - last
        if chomp == "-":  # strip: no final line break
            return text, j
        if chomp == "+":  # keep: one for the last line + one per trailing empty
            return text + "\n" * (1 + trailing), j
        return text + "\n", j  # clip: one '\n' (there is a non-empty line)


def parse_yaml(lines: list[str]) -> dict[str, Any]:
    """docs/frontmatter-yaml.md: parse the frontmatter lines.

    Returns the mapping (dicts keep key order, the first duplicate key
    wins; values are None | str | list | dict). Raises YamlError.
    """
    parser = _Parser(lines)
    k = parser.next_sig(0)
    if k >= parser.n:
        # No non-ignorable line → the empty mapping.
        return {}
    ind = _indent(lines[k])
    # The document is one block node whose indent is that of its first
    # non-ignorable line (parent indent -1, level 0 so the top mapping is
    # level 1).
    value, j = parser.block_node(k, ind, lines[k][ind:], -1, 0)
    # AMBIGUITY: a top node that is not a mapping *and* is followed by a
    # leftover line reports `not a mapping` (the doc states that rule first).
    if not isinstance(value, dict):
        raise YamlError(f"YAML frontmatter is not a mapping (line {k + 1})")
    left = parser.next_sig(j)
    if left < parser.n:
        raise YamlError(f"unexpected indentation at line {left + 1}")
    return value


# ---------------------------------------------------------------------------
# SPEC 2.2: stale_after
# ---------------------------------------------------------------------------

# ASCII digits only ([0-9], never \d which also matches other scripts).
_DATE_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_DATETIME_RE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
    r"[Tt ]"
    r"([0-9]{2}):([0-9]{2})"
    r"(?::([0-9]{2})(?:\.([0-9]+))?)?"
    r"(Z|z|[+-][0-9]{2}(?::?[0-9]{2})?)?"
)


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def parse_stale_after(text: str) -> datetime | None:
    """SPEC 2.2 (with the lead's exact grammar): a UTC instant or None.

    Accepted, exactly (the whole text, no surrounding white space):
    * `YYYY-MM-DD` → midnight UTC;
    * `YYYY-MM-DD(T|t| )HH:MM[:SS[.F+]]` + optional `Z`, `z`, `±HH:MM`,
      `±HHMM`, `±HH` (no suffix → read as UTC). Fraction digits beyond 6 are
      truncated.
    Validated: year >= 1, month 1-12, day within month, hour <= 23,
    minute <= 59, second <= 59, offset hours <= 23 and minutes <= 59, and
    the UTC instant within years 1..9999.
    """
    mo = _DATE_RE.fullmatch(text)
    if mo:
        y, mon, d = (int(g) for g in mo.groups())
        hh = mm = ss = us = 0
        offset = 0
    else:
        mo = _DATETIME_RE.fullmatch(text)
        if not mo:
            return None
        y, mon, d, hh, mm = (int(g) for g in mo.groups()[:5])
        ss = int(mo.group(6)) if mo.group(6) else 0
        frac = mo.group(7)
        us = int(frac[:6].ljust(6, "0")) if frac else 0
        off = mo.group(8)
        if off is None or off in ("Z", "z"):
            offset = 0
        else:
            sign = 1 if off[0] == "+" else -1
            digits = off[1:].replace(":", "")
            oh = int(digits[:2])
            om = int(digits[2:4]) if len(digits) > 2 else 0
            if oh > 23 or om > 59:
                return None
            offset = sign * (oh * 60 + om)
    if y < 1 or not 1 <= mon <= 12 or not 1 <= d <= _days_in_month(y, mon):
        return None
    if hh > 23 or mm > 59 or ss > 59:
        return None
    try:
        local = datetime(y, mon, d, hh, mm, ss, us)
        utc = local - timedelta(minutes=offset)
    except (OverflowError, ValueError):
        # Outside Python's datetime range = outside years 1..9999.
        return None
    return utc.replace(tzinfo=timezone.utc)


# ---------------------------------------------------------------------------
# SPEC 1: bundles and concepts
# ---------------------------------------------------------------------------

MAX_FILE_BYTES = 16 * 1024 * 1024  # SPEC 1.3: files over 16 MiB are skipped

# docs/frontmatter-yaml.md "Diagnostics": fixed messages.
MSG_INVALID_ID = "Concept file name contains a control character or a backslash; rename the file"
MSG_MISSING_TYPE = "Concept has no 'type' in its frontmatter (OKF requires one)"
MSG_UNTERMINATED = "Unterminated YAML frontmatter block"
MSG_STALE_NOT_DATE = "stale_after is not a date; the concept is treated as never stale"
MSG_SYMLINK = "Symbolic link not followed"


def _msg_too_large(n: int) -> str:
    return f"File is {n} bytes, over the 16 MiB limit for a concept file"


def _msg_invalid_utf8(offset: int) -> str:
    return f"File is not valid UTF-8 (first invalid byte at offset {offset}); re-save it as UTF-8"


def _msg_malformed_stale(text: str) -> str:
    return (
        f'stale_after "{text}" is not an ISO 8601 date or date-time; '
        "the concept is treated as never stale"
    )


@dataclass
class RefDiagnostic:
    code: str
    message: str
    path: str
    severity: str  # "error" (file skipped) or "warning"


@dataclass
class RefConcept:
    concept_id: str
    path: str
    type: str | None
    title: str | None
    description: str | None
    tags: list[str]
    resource: str | None
    status: str
    status_known: bool
    stale_after: datetime | None
    generated: dict[str, str | None] | None
    verified: list[dict[str, str | None]]
    trust_tier: str
    body: str
    frontmatter: dict[str, Any] = field(default_factory=dict)
    authority: str | None = None
    supersedes: list[str] = field(default_factory=list)
    superseded_by: list[str] = field(default_factory=list)
    conflicts_with: list[str] = field(default_factory=list)


@dataclass
class RefBundle:
    root: str
    concepts: list[RefConcept]  # in id order (SPEC 1.2 / 1.6)
    diagnostics: list[RefDiagnostic]
    okf_version: str | None


def split_lines(text: str) -> list[str]:
    """SPEC 1.3 "lines": split on '\\n', a '\\r' just before each '\\n'
    removed, no empty line after a final '\\n'; the empty text has no lines.
    A final '\\r' not followed by '\\n' stays."""
    if text == "":
        return []
    pieces = text.split("\n")
    lines = [p[:-1] if p.endswith("\r") else p for p in pieces[:-1]]
    if pieces[-1] != "":  # text did not end with '\n'
        lines.append(pieces[-1])
    return lines


def _display(v: Any) -> str | None:
    # SPEC 1.4 "display text": a scalar's text; null, a sequence or a
    # mapping where a scalar is expected means absent.
    return v if isinstance(v, str) else None


def _split_frontmatter(text: str) -> tuple[list[str] | None, str]:
    """SPEC 1.3: (YAML lines or None when there is no frontmatter, body).
    Raises ValueError(MSG_UNTERMINATED) for an unterminated block."""
    lines = split_lines(text)
    if not lines or trim(lines[0]) != "---":
        # No frontmatter: the body is the text verbatim (CRLF kept).
        return None, text
    close = None
    for k in range(1, len(lines)):
        if trim(lines[k]) == "---":
            close = k
            break
    if close is None:
        raise ValueError(MSG_UNTERMINATED)
    body = "\n".join(lines[close + 1 :])
    if body.startswith("\n"):
        body = body[1:]
    return lines[1:close], body


def read_concept(rel_path: str, data: bytes) -> tuple[RefConcept | None, list[RefDiagnostic]]:
    """One concept file's bytes → (concept or None when skipped, its
    diagnostics), per SPEC 1.3-1.4. The id and size checks are load_bundle's.
    ``rel_path`` is the '/'-separated relative path, `.md` kept."""
    concept_id = rel_path[:-3] if rel_path.endswith(".md") else rel_path

    def error(code: str, message: str) -> tuple[None, list[RefDiagnostic]]:
        return None, [RefDiagnostic(code, message, rel_path, "error")]

    # SPEC 1.3: bytes must be UTF-8; the offset counts the file's bytes,
    # a leading BOM included.
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return error("InvalidUtf8", _msg_invalid_utf8(e.start))
    if text.startswith("\ufeff"):  # one leading BOM is removed
        text = text[1:]

    try:
        yaml_lines, body = _split_frontmatter(text)
    except ValueError:
        return error("InvalidFrontmatter", MSG_UNTERMINATED)
    fm: dict[str, Any] = {}
    if yaml_lines is not None:
        try:
            fm = parse_yaml(yaml_lines)
        except YamlError as e:
            return error("InvalidFrontmatter", "Invalid YAML frontmatter: " + e.message)

    diags: list[RefDiagnostic] = []

    # type: absent or empty → None and a MissingType warning (SPEC 1.4).
    ctype = _display(fm.get("type"))
    if ctype is None or trim(ctype) == "":
        ctype = None
        diags.append(RefDiagnostic("MissingType", MSG_MISSING_TYPE, rel_path, "warning"))

    title = _display(fm.get("title"))
    description = _display(fm.get("description"))
    resource = _display(fm.get("resource"))

    # tags: a sequence → display text of its string items; a single scalar →
    # a one-element list; else [].
    tags = _text_list(fm.get("tags"))

    # status: draft/stable/deprecated exactly; absent → stable (known);
    # other (string, list, mapping) → stable, status_known False.
    raw_status = fm.get("status")
    if raw_status is None:
        status, status_known = "stable", True
    elif isinstance(raw_status, str) and raw_status in ("draft", "stable", "deprecated"):
        status, status_known = raw_status, True
    else:
        status, status_known = "stable", False

    # stale_after (SPEC 2.2): absent / null → None, no diagnostic.
    raw_stale = fm.get("stale_after")
    stale_after: datetime | None = None
    if isinstance(raw_stale, str):
        stale_after = parse_stale_after(raw_stale)
        if stale_after is None:
            diags.append(
                RefDiagnostic(
                    "MalformedStaleAfter", _msg_malformed_stale(raw_stale), rel_path, "warning"
                )
            )
    elif raw_stale is not None:  # a list or a mapping
        diags.append(RefDiagnostic("MalformedStaleAfter", MSG_STALE_NOT_DATE, rel_path, "warning"))

    # generated: mapping {by, at}; v0.1 fallback: a string `timestamp`.
    raw_gen = fm.get("generated")
    generated: dict[str, str | None] | None
    if isinstance(raw_gen, dict):
        generated = {"by": _display(raw_gen.get("by")), "at": _display(raw_gen.get("at"))}
    elif isinstance(fm.get("timestamp"), str):
        generated = {"by": None, "at": fm["timestamp"]}
    else:
        generated = None

    # verified: a list of {by, at} mappings (non-mapping items skipped), or
    # one bare mapping.
    raw_ver = fm.get("verified")
    if isinstance(raw_ver, list):
        ver_maps = [v for v in raw_ver if isinstance(v, dict)]
    elif isinstance(raw_ver, dict):
        ver_maps = [raw_ver]
    else:
        ver_maps = []
    verified = [{"by": _display(v.get("by")), "at": _display(v.get("at"))} for v in ver_maps]

    # SPEC 2.1 trust tier.
    if not verified:
        trust_tier = "unverified"
    elif any((v["by"] or "").startswith("human:") for v in verified):
        trust_tier = "human_reviewed"
    else:
        trust_tier = "machine_confirmed"

    concept = RefConcept(
        concept_id=concept_id,
        path=rel_path,
        type=ctype,
        title=title,
        description=description,
        tags=tags,
        resource=resource,
        status=status,
        status_known=status_known,
        stale_after=stale_after,
        generated=generated,
        verified=verified,
        trust_tier=trust_tier,
        body=body,
        frontmatter=fm,
        authority=fm.get("authority") if isinstance(fm.get("authority"), str) else None,
        supersedes=_text_list(fm.get("supersedes")),
        superseded_by=_text_list(fm.get("superseded_by")),
        conflicts_with=_text_list(fm.get("conflicts_with")),
    )
    return concept, diags


def _text_list(v: Any) -> list[str]:
    """SPEC 1.4 tags rule: a sequence → its scalar items' text (absent items
    skipped); one scalar → a one-element list; anything else → []."""
    if isinstance(v, list):
        return [t for t in v if isinstance(t, str)]
    if isinstance(v, str):
        return [v]
    return []


def _has_invalid_id_char(concept_id: str) -> bool:
    # SPEC 1.2: a control character (U+0000-U+001F, U+007F) or a backslash.
    return any(ord(c) < 0x20 or c == "\x7f" or c == "\\" for c in concept_id)


def _is_utf8_name(name: str) -> bool:
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:  # os.fsdecode surrogate escapes
        return False


def _read_okf_version(root: str) -> str | None:
    """SPEC 1.5: `okf_version` of the root index.md; absent or unreadable →
    None; never a diagnostic.

    AMBIGUITY: no size limit is applied to index.md (the 16 MiB limit is
    stated for concept files).
    """
    path = os.path.join(root, "index.md")
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            return None
        with open(path, "rb") as f:
            data = f.read()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        yaml_lines, _body = _split_frontmatter(text)
    except ValueError:
        return None
    if yaml_lines is None:
        return None
    try:
        fm = parse_yaml(yaml_lines)
    except YamlError:
        return None
    return _display(fm.get("okf_version"))


def load_bundle(root: str) -> RefBundle:
    """SPEC 1.1-1.2, 1.5-1.6: walk the bundle and read every concept file.

    Raises FileNotFoundError when the root is not a readable directory.
    """
    if not os.path.isdir(root):
        raise FileNotFoundError(f"bundle root is not a directory: {root}")
    concepts: list[RefConcept] = []
    diags: list[RefDiagnostic] = []

    def walk(abs_dir: str, rel_parts: list[str]) -> None:
        try:
            with os.scandir(abs_dir) as it:
                entries = list(it)
        except OSError as e:
            if not rel_parts:
                raise FileNotFoundError(f"bundle root cannot be listed: {e}") from e
            diags.append(
                RefDiagnostic(
                    "UnreadableDirectory",
                    f"Directory could not be listed: {e}",
                    "/".join(rel_parts),
                    "error",
                )
            )
            return
        # SPEC 1.1: entries in ordinal order of their names.
        entries.sort(key=lambda e: e.name)
        for entry in entries:
            name = entry.name
            if not _is_utf8_name(name):
                # Oracle simplification (allowed by the lead): names that
                # are not valid UTF-8 are ignored entirely; tests must not
                # generate them.
                continue
            if name.startswith("."):  # .git, .okfast, ...
                continue
            parts = rel_parts + [name]
            rel = "/".join(parts)
            try:
                if entry.is_symlink():
                    # Never followed nor loaded (lead: any non-hidden
                    # symlink, to a file or a directory, even a dangling one,
                    # gives this warning and nothing else).
                    diags.append(RefDiagnostic("SymlinkSkipped", MSG_SYMLINK, rel, "warning"))
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = entry.is_file(follow_symlinks=False)
            except OSError as e:
                diags.append(
                    RefDiagnostic("UnreadableFile", f"File could not be read: {e}", rel, "error")
                )
                continue
            if is_dir:
                walk(entry.path, parts)
                continue
            if not is_file:
                continue  # fifos, sockets, devices: ignored
            if name in ("index.md", "log.md"):
                continue  # reserved at any depth: no concept, no diagnostic
            if not name.endswith(".md"):
                continue
            concept_id = rel[:-3]
            # Order (SPEC 1.3): invalid id, too large, invalid UTF-8,
            # frontmatter.
            if _has_invalid_id_char(concept_id):
                diags.append(RefDiagnostic("InvalidConceptId", MSG_INVALID_ID, rel, "error"))
                continue
            try:
                size = entry.stat(follow_symlinks=False).st_size
                if size > MAX_FILE_BYTES:
                    diags.append(RefDiagnostic("FileTooLarge", _msg_too_large(size), rel, "error"))
                    continue
                with open(entry.path, "rb") as f:
                    data = f.read()
            except OSError as e:
                diags.append(
                    RefDiagnostic("UnreadableFile", f"File could not be read: {e}", rel, "error")
                )
                continue
            concept, file_diags = read_concept(rel, data)
            if concept is not None:
                concepts.append(concept)
            diags.extend(file_diags)

    walk(root, [])
    # SPEC 1.6: concepts in id order (not walk order: `a.md` is walked
    # before `a/` but `a` < `a/b` anyway, whereas `a-b.md` is walked before
    # `a/` and sorts after `a/b`).
    concepts.sort(key=lambda c: id_key(c.concept_id))
    # doc "Diagnostics": ordered by path as segment lists in id order; one
    # path's diagnostics keep their produced order (stable sort).
    diags.sort(key=lambda d: id_key(d.path))
    return RefBundle(
        root=root, concepts=concepts, diagnostics=diags, okf_version=_read_okf_version(root)
    )


# ---------------------------------------------------------------------------
# SPEC 3: the scorer
# ---------------------------------------------------------------------------


def field_texts(c: RefConcept) -> tuple[str, str, str]:
    """SPEC 3.2: (title, tags_desc, body)."""
    title = c.title or ""
    tags_desc = " ".join(c.tags) + " " + (c.description or "")
    return title, tags_desc, c.body


def score(c: RefConcept, terms: list[str]) -> int:
    """SPEC 3.3: sum over the terms (duplicates included) of
    3·[title] + 2·[tags_desc] + 1·[body], each a contains_ci test."""
    title, tags_desc, body = field_texts(c)
    total = 0
    for t in terms:
        total += 3 * contains_ci(title, t) + 2 * contains_ci(tags_desc, t) + contains_ci(body, t)
    return total


def excerpt(body: str, terms: list[str]) -> str:
    """SPEC 3.5: the first trimmed, non-empty body line that contains_ci any
    term; none → ""."""
    for line in body.split("\n"):
        t = trim(line)
        if t == "":
            continue
        if any(contains_ci(t, term) for term in terms):
            return t
    return ""


def search(bundle: RefBundle, text: str, tag: str | None = None) -> list[tuple[str, int, str]]:
    """SPEC 3.1-3.6: (concept_id, score, excerpt) for every concept with a
    score > 0, by score descending then id order."""
    terms = split_ws(text)  # SPEC 3.1: no lower-casing, no de-duplication
    if not terms:
        return []
    # SPEC 3.6: a tag that is None or blank (empty / only white space) is no
    # filter; otherwise fold(t) == fold(tag) for some tag t (tag untrimmed).
    use_filter = tag is not None and trim(tag) != ""
    hits: list[tuple[str, int, str]] = []
    for c in bundle.concepts:
        if use_filter and not any(fold(t) == fold(tag) for t in c.tags):  # type: ignore[arg-type]
            continue
        s = score(c, terms)
        if s > 0:
            hits.append((c.concept_id, s, excerpt(c.body, terms)))
    hits.sort(key=lambda h: (-h[1], id_key(h[0])))
    return hits
