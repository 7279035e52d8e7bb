"""docs/frontmatter-yaml.md "Flow collections": `[...]` and `{...}`."""

from __future__ import annotations

from typing import Any

from reference.text import trim
from reference.yaml_scalars import (
    MAX_DEPTH,
    YamlError,
    _NeedMore,
    _plain_null,
    _scan_quoted,
    _unquote,
)


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

    # Flow white space: "spaces, tabs, \n" (doc); other white space (docs/spec.md text terms) is
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
        # An explicit key (`{? a: b}`, `[? a]`), as in block context (spec §1.3).
        nxt = self.text[self.pos + 1 : self.pos + 2]
        if c == "?" and nxt != "" and nxt in " \t\n,]}":
            raise YamlError(f"YAML explicit key (?) at line {self.line_no} is not supported")

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
