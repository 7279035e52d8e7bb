"""docs/frontmatter-yaml.md, the pieces both parsers share: the error
class, line classes, plain and quoted scalars (escapes)."""

from __future__ import annotations

from reference.text import trim


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
    # doc "Lines": trim(line) (white space (docs/spec.md text terms)) is empty or starts with '#'.
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
