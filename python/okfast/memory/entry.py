"""``MemoryEntry`` and the producer side of a memory concept file (SPEC §6.3).

A memory concept is written by okfast, so okfast validates it as a producer
before any byte reaches the disk: the name is a safe segment, the frontmatter
has a non-blank ``type``, ``title`` and ``description`` and only values YAML
can carry exactly, and the file that would be written reads back — with the
same parser every bundle is read with — to those same fields.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from okfast import _native
from okfast.bundle import read_concept
from okfast.catalog import is_safe_segment
from okfast.errors import EntryError as EntryError  # re-exported from here too

#: Blank is only white space as a concept's reader trims it (docs/spec.md's
#: White_Space set, not Python's ``str.isspace``, which also takes U+001C–001F):
#: what a reader sees as text is never refused as blank.
_WHITE_SPACE: str = _native.WHITE_SPACE

#: A concept file larger than this is skipped by every reader (SPEC §1.3), so
#: an append that would cross it is refused instead of silently losing the file.
MAX_FILE_BYTES = 16 * 1024 * 1024
_RESERVED_NAMES = frozenset({"index", "log"})
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_REQUIRED = ("type", "title", "description")
_MAX_DEPTH = 16
# Escaped inside double quotes: C0/C1 controls, DEL and the characters some
# readers treat as line breaks, so a value stays on its one line.
_ESCAPE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff]")


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """What to append: ``section`` (markdown) to the concept ``name``, created
    with ``frontmatter`` when it does not exist yet."""

    name: str
    frontmatter: Mapping[str, Any] = field(default_factory=dict)
    section: str = ""


def check_name(name: object) -> str:
    if not isinstance(name, str) or not is_safe_segment(name):
        raise EntryError(f"memory concept name {name!r} is not a safe segment")
    if name in _RESERVED_NAMES:
        raise EntryError(f"memory concept name {name!r} is reserved (index.md and log.md)")
    if len(name.encode()) + 3 > 255:
        raise EntryError("memory concept name is too long for a file name (max 252 bytes)")
    return name


def check_entry(entry: MemoryEntry) -> None:
    """The producer checks of ``entry`` alone (name, section, frontmatter), as
    :meth:`FileMemoryStore.write` makes them before any I/O: :class:`EntryError`."""
    check_name(entry.name)
    check_section(entry.section)
    render_frontmatter(entry.frontmatter)


def _quote(s: str) -> str:
    body = json.dumps(s, ensure_ascii=False)[1:-1]
    return '"' + _ESCAPE.sub(lambda m: f"\\u{ord(m.group()):04x}", body) + '"'


def _scalar(v: Any, where: str) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        try:
            return str(v)
        except ValueError:
            # Python refuses to spell an int of more digits than
            # sys.get_int_max_str_digits() (4300 by default): a value that
            # cannot be written, refused as the others are (docs/spec.md §6.3).
            raise EntryError(
                f"frontmatter {where}: an integer too large to write as decimal text "
                f"(more than {sys.get_int_max_str_digits()} digits)"
            ) from None
    if isinstance(v, str):
        try:
            v.encode()
        except UnicodeEncodeError as e:
            raise EntryError(f"frontmatter {where}: not encodable as UTF-8: {e.reason}") from None
        return _quote(v)
    raise EntryError(f"frontmatter {where}: a {type(v).__name__} cannot be written as YAML text")


def _emit(value: Mapping[str, Any], indent: int, out: list[str], where: str, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise EntryError(f"frontmatter {where}: nested deeper than {_MAX_DEPTH} levels")
    pad = " " * indent
    for k, v in value.items():
        if not isinstance(k, str) or not _KEY.match(k):
            raise EntryError(f"frontmatter key {k!r} is not [A-Za-z_][A-Za-z0-9_-]*")
        here = f"{where}.{k}" if where else k
        if isinstance(v, Mapping):
            if not v:
                out.append(f"{pad}{k}: {{}}")
                continue
            out.append(f"{pad}{k}:")
            _emit(v, indent + 2, out, here, depth + 1)
        elif isinstance(v, list | tuple):
            items = [_scalar(x, f"{here}[{i}]") for i, x in enumerate(v)]
            out.append(f"{pad}{k}: [{', '.join(items)}]")
        else:
            out.append(f"{pad}{k}: {_scalar(v, here)}")


def render_frontmatter(fm: Mapping[str, Any]) -> str:
    """The ``---`` block for a new memory concept, after producer validation."""
    if not isinstance(fm, Mapping):
        raise EntryError("frontmatter must be a mapping")
    for key in _REQUIRED:
        v = fm.get(key)
        if not isinstance(v, str) or not v.strip(_WHITE_SPACE):
            raise EntryError(f"frontmatter needs a non-blank string {key!r}")
    lines: list[str] = []
    _emit(fm, 0, lines, "", 1)
    return "---\n" + "\n".join(lines) + "\n---\n"


def check_section(section: object) -> str:
    if not isinstance(section, str):
        raise EntryError(f"the section to append is not text: {type(section).__name__}")
    if not section.strip(_WHITE_SPACE):
        raise EntryError("the section to append is empty")
    if "\x00" in section:
        raise EntryError("the section contains a NUL character")
    try:
        section.encode()
    except UnicodeEncodeError as e:
        raise EntryError(f"the section is not encodable as UTF-8: {e.reason}") from e
    return section if section.endswith("\n") else section + "\n"


def parse_problem(name: str, data: bytes) -> str | None:
    """Why ``data`` would not load as a concept (SPEC §1.3), or ``None``."""
    concept, diags = read_concept(name + ".md", data)
    errors = [f"[{d.code}] {d.message}" for d in diags if d.severity == "error"]
    if concept is None or errors:
        return "; ".join(errors) or "it does not load as a concept"
    return None


def new_file(entry: MemoryEntry, section: str) -> bytes:
    """A new concept file: validated frontmatter, a blank line, the section.
    It must read back with the frontmatter's type, title and description."""
    data = (render_frontmatter(entry.frontmatter) + "\n" + section).encode()
    concept, diags = read_concept(entry.name + ".md", data)
    bad = [f"[{d.code}] {d.message}" for d in diags if d.severity == "error"]
    if concept is None or bad:
        raise EntryError("frontmatter does not read back: " + "; ".join(bad))
    for key in _REQUIRED:
        if getattr(concept, key) != entry.frontmatter[key]:
            raise EntryError(f"frontmatter {key!r} does not read back as written")
    return data


def appended(existing: bytes, section: str) -> bytes:
    """``existing`` with a blank line and ``section`` after it."""
    sep = b"\n" if existing.endswith(b"\n") else b"\n\n"
    return existing + sep + section.encode()
