"""docs/frontmatter-yaml.md "Nodes": block mappings, sequences and scalars;
``parse_yaml`` reads a whole frontmatter."""

from __future__ import annotations

from typing import Any

from reference.text import is_ws, trim
from reference.yaml_flow import _Flow
from reference.yaml_scalars import (
    MAX_DEPTH,
    YamlError,
    _comment_cut,
    _empty_after_trim,
    _ignorable,
    _indent,
    _is_seq_start,
    _NeedMore,
    _plain_null,
    _scan_quoted,
    _tail_ok,
    _unquote,
)


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
        if ch in "[{#|>" or _is_seq_start(c):
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
        elif is_ws(content[0]):
            # doc "Lines": a compact node's first content is checked as a
            # line's content is (the `-` before it is no indentation).
            raise YamlError(f"invalid indentation character at line {i + 1}")
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
        # between two pieces give k '\n'. A first line whose text trims to ""
        # (a lone NBSP) is no piece: nothing is joined to it.
        out = text
        empties = 0
        for piece in pieces:
            if piece == "":
                empties += 1
                continue
            out += ("" if out == "" else " " if empties == 0 else "\n" * empties) + piece
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
    # Not a mapping is checked once the node is read (an error inside it
    # wins) and before a leftover line (docs/frontmatter-yaml.md).
    if not isinstance(value, dict):
        raise YamlError(f"YAML frontmatter is not a mapping (line {k + 1})")
    left = parser.next_sig(j)
    if left < parser.n:
        raise YamlError(f"unexpected indentation at line {left + 1}")
    return value
