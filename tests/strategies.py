"""Hypothesis strategies for OKF bundles: well-formed and malformed frontmatter,
file names, bodies and queries. Shared by the property tests."""

from __future__ import annotations

import unicodedata
from typing import Any

from hypothesis import strategies as st


# Characters whose case mapping Python (Unicode 14 in 3.11) and Rust (a newer
# Unicode) agree on: assigned in Python's database. Newer assignments are
# 'Cn' here and would fold differently, which is a Unicode-version artefact,
# not a bug either side could fix.
def _assigned(c: str) -> bool:
    return unicodedata.category(c) not in ("Cn", "Cs")


SPICE = "ßıİςσΣﬁŉǅǆΐ漢字かなÅåÉéøØ\u00a0\u3000\u2003\t"
word_chars = st.sampled_from("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789-_.'" + "ßıςΣ漢éØ")
word = st.text(word_chars, min_size=1, max_size=8)
any_char = st.characters(codec="utf-8", exclude_categories=("Cs",)).filter(_assigned)
free_text = st.text(st.one_of(any_char, st.sampled_from(SPICE + " :#-[]{}|>'\"")), max_size=40)


def _plain_ok(s: str) -> bool:
    return bool(s) and s[0] not in "'\"[{|>&*!#%@`?-" and s == s.strip() and "\n" not in s


phrase = st.lists(word, min_size=1, max_size=5).map(" ".join)


@st.composite
def scalar_yaml(draw: st.DrawFn, value: str) -> str:
    """`value` written as a plain, single- or double-quoted YAML scalar."""
    style = draw(st.sampled_from(["plain", "single", "double"]))
    if style == "plain" and _plain_ok(value) and " #" not in value:
        return value
    if style == "double":
        esc = value.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
        return f'"{esc}"'
    return "'" + value.replace("'", "''") + "'"


@st.composite
def tags_yaml(draw: st.DrawFn) -> list[str]:
    tags = draw(st.lists(word, max_size=4))
    form = draw(st.sampled_from(["flow", "block", "scalar", "none"]))
    if form == "flow":
        return [f"tags: [{', '.join(tags)}]"]
    if form == "block":
        indent = draw(st.sampled_from(["", "  "]))
        return ["tags:"] + [f"{indent}- {t}" for t in tags]
    if form == "scalar" and tags:
        return [f"tags: {tags[0]}"]
    return []


STALE = [
    "2027-06-30",
    "2026-01-15T09:00:00Z",
    "2026-03-01T12:00:00+02:00",
    "2025-12-01 08:30",
    "2025-12-01T08:30:15.123456789",
    "2024-02-30",
    "soon",
    "[2026-01-01]",
    "~",
]


@st.composite
def frontmatter_lines(draw: st.DrawFn) -> list[str]:
    """A well-formed frontmatter (without the --- lines), in varied styles."""
    lines: list[str] = []
    if draw(st.booleans()):
        lines.append(f"type: {draw(st.sampled_from(['Policy', 'Note', 'Runbook', '', '~']))}")
    if draw(st.booleans()):
        lines.append(f"title: {draw(scalar_yaml(draw(phrase)))}")
    if draw(st.booleans()):
        desc = draw(phrase)
        form = draw(st.sampled_from(["one", "lenient", "multi", "folded", "literal"]))
        if form == "lenient":
            lines.append(f"description: Step 1: {desc}")
        elif form == "multi":
            lines += [f"description: {desc}", f"  {draw(phrase)}", "", f"  {draw(phrase)}"]
        elif form in ("folded", "literal"):
            ind = draw(st.sampled_from(["|", ">", "|-", ">+", "|2"]))
            lines += [
                f"description: {ind}",
                f"  {desc}",
                f"    {draw(phrase)}",
                "",
                f"  {draw(phrase)}",
            ]
        else:
            lines.append(f"description: {draw(scalar_yaml(desc))}")
    lines += draw(tags_yaml())
    if draw(st.booleans()):
        lines.append(
            f"status: {draw(st.sampled_from(['draft', 'stable', 'deprecated', 'Draft', '']))}"
        )
    if draw(st.booleans()):
        lines.append(f"stale_after: {draw(st.sampled_from(STALE))}")
    if draw(st.booleans()):
        who = draw(st.sampled_from(["human:ana", "tool:x", "agent:y"]))
        form = draw(st.sampled_from(["list", "bare", "flow"]))
        if form == "list":
            lines += ["verified:", f"  - by: {who}", "    at: 2026-01-01"]
        elif form == "bare":
            lines += ["verified:", f"  by: {who}", "  at: 2026-01-01"]
        else:
            lines += [f"verified: [{{by: {who}, at: x}}, {{by: tool:z}}]"]
    if draw(st.booleans()):
        lines.append(
            f"authority: {draw(st.sampled_from(['canonical', 'observed', 'bogus', '[x]', '']))}"
        )
    for key in ("supersedes", "superseded_by", "conflicts_with"):
        if draw(st.integers(0, 3)) == 0:
            ids = draw(st.lists(st.sampled_from(["a", "b", "a/b", "x y", "~"]), max_size=3))
            form = draw(st.sampled_from(["flow", "block", "scalar"]))
            if form == "flow" or not ids:
                lines.append(f"{key}: [{', '.join(ids)}]")
            elif form == "block":
                lines += [f"{key}:"] + [f"  - {i}" for i in ids]
            else:
                lines.append(f"{key}: {ids[0]}")
    if draw(st.booleans()):
        lines.append("generated: { by: tool:gen, at: 2026-06-30T14:00:00Z }")
    if draw(st.booleans()):
        lines.append("timestamp: 2025-03-01T10:00:00Z")
    if draw(st.booleans()):
        lines += [
            "x-extra:",
            "  nested:",
            "    - file: a.md",
            "    - file: |-",
            "        x>",
            "",
            "        ## B",
        ]
    if draw(st.booleans()):
        lines.insert(
            draw(st.integers(0, len(lines))), draw(st.sampled_from(["# comment", "", "   "]))
        )
    if draw(st.booleans()) and lines:
        # A duplicate key: the first one wins.
        lines.append(lines[0].split(":", 1)[0] + ": duplicate")
    return lines


# Lines made of YAML punctuation and words, to explore the parser's corners,
# malformed cases included.
yaml_atom = st.sampled_from(
    [
        "a", "b", "key", "- ", "-", ": ", ":", "  ", "    ", "\t", "#", " #c", "'", "''", '"', '\\"',
        "\\x41", "\\u00e9", "\\q", "[", "]", "{", "}", ",", "|", ">", "|-", ">+", "&a", "*a", "!t",
        "%YAML", "...", "---", "? ", "~", "null", "ß", "漢", "\u00a0", "1", "x: y",
    ]
)  # fmt: skip
yaml_line = st.lists(yaml_atom, max_size=8).map("".join)
chaos_lines = st.lists(yaml_line, max_size=10)


MALFORMED = [
    ["a: &x 1"],
    ["a: *x"],
    ["a: !!str 1"],
    ["%YAML 1.2"],
    ["a: 1", "..."],
    ["- a"],
    ["a: [x]", "  b: 2"],
    ['a: "x'],
    ["a: 'x"],
    ['a: "\\q"'],
    ["a: [1, 2"],
    ["a: {b: 1"],
    ["a: [a,,b]"],
    ["a: |x"],
    ["\ta: 1"],
    ["? a"],
    [": x"],
    ["a: " + "[" * 70 + "]" * 70],
    ['a: "x" y'],
    ["a: [x] y"],
]


@st.composite
def concept_bytes(draw: st.DrawFn) -> bytes:
    """The bytes of one concept file, usually well formed, sometimes not."""
    kind = draw(st.sampled_from(["good"] * 6 + ["chaos", "malformed", "none", "unterminated"]))
    body = draw(st.lists(st.one_of(phrase, free_text, st.just("")), max_size=6))
    if kind == "none":
        text = "\n".join(body)
    else:
        if kind == "good":
            fm = draw(frontmatter_lines())
        elif kind == "chaos":
            fm = draw(chaos_lines)
        elif kind == "malformed":
            fm = draw(frontmatter_lines()) + draw(st.sampled_from(MALFORMED))
        else:
            fm = draw(frontmatter_lines())
        opening = draw(st.sampled_from(["---", "--- ", " ---"]))
        parts = [opening, *fm]
        if kind != "unterminated":
            parts.append("---")
            if draw(st.booleans()):
                parts.append("")
        text = "\n".join(parts + body)
    if draw(st.booleans()):
        text += "\n"
    if draw(st.integers(0, 5)) == 0:
        text = text.replace("\n", "\r\n")
    data = text.encode("utf-8")
    if draw(st.integers(0, 6)) == 0:
        data = b"\xef\xbb\xbf" + data
    if draw(st.integers(0, 12)) == 0:
        cut = draw(st.integers(0, len(data)))
        data = data[:cut] + b"\xff" + data[cut:]
    return data


segment = st.one_of(
    st.sampled_from(["a", "b", "a-b", "a.b", "B", "ação", "com espaço", "-x", "x_1", "Z", "漢"]),
    st.text(st.sampled_from("abcAB-_.ß 漢"), min_size=1, max_size=6),
).filter(lambda s: not s.startswith(".") and s not in ("index", "log"))


@st.composite
def bundle_files(draw: st.DrawFn) -> dict[str, bytes]:
    """A bundle as {relative path: bytes}: nested folders, reserved and ignored files."""
    paths = draw(st.lists(st.lists(segment, min_size=1, max_size=3), min_size=0, max_size=12))
    files: dict[str, bytes] = {}
    dirs: set[str] = set()
    for segs in paths:
        for k in range(1, len(segs)):
            dirs.add("/".join(segs[:k]))
    for segs in paths:
        rel = "/".join(segs) + ".md"
        # A path cannot be both a file and a folder.
        if "/".join(segs) + ".md" in dirs or any(d + ".md" == rel for d in dirs):
            continue
        files[rel] = draw(concept_bytes())
    if draw(st.booleans()):
        files["index.md"] = b"---\nokf_version: '0.2'\n---\n# index\n"
    if draw(st.booleans()):
        files["log.md"] = b"not a concept"
    if draw(st.booleans()):
        files[".hidden.md"] = b"---\ntype: T\n---\nhidden"
    if draw(st.booleans()):
        files["notes.txt"] = b"ignored"
    if draw(st.integers(0, 8)) == 0:
        files["bad\x01name.md"] = b"---\ntype: T\n---\n"
    return files


def query_for(words: list[str]) -> Any:
    """Queries built from words in the bundle plus noise and odd white space."""
    pool = [w for w in words if w] or ["a"]
    term = st.one_of(
        st.sampled_from(pool),
        st.sampled_from(pool).map(lambda w: w[: max(1, len(w) // 2)]),
        st.sampled_from(pool).map(str.upper),
        word,
        st.sampled_from(["ß", "SS", "I", "ı", "Σ", "ς", "漢", "#", "-", ":", "a"]),
    )
    sep = st.sampled_from([" ", "  ", "\t", "\u00a0", "\u3000", "\n"])
    return st.lists(st.tuples(term, sep), min_size=0, max_size=4).map(
        lambda parts: "".join(t + s for t, s in parts)
    )
