"""docs/spec.md §1.3-§1.6: one concept file read into a ``RefConcept`` and its
diagnostics, with the fixed messages of docs/frontmatter-yaml.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from reference.stale import parse_stale_after
from reference.text import trim
from reference.yaml_block import parse_yaml
from reference.yaml_scalars import YamlError

MAX_FILE_BYTES = 16 * 1024 * 1024  # docs/spec.md §1.3: files over 16 MiB are skipped

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
    concepts: list[RefConcept]  # in id order (docs/spec.md §1.2 / 1.6)
    diagnostics: list[RefDiagnostic]
    okf_version: str | None


def split_lines(text: str) -> list[str]:
    """docs/spec.md §1.3 "lines": split on '\\n', a '\\r' just before each '\\n'
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
    # docs/spec.md §1.4 "display text": a scalar's text; null, a sequence or a
    # mapping where a scalar is expected means absent.
    return v if isinstance(v, str) else None


def _split_frontmatter(text: str) -> tuple[list[str] | None, str]:
    """docs/spec.md §1.3: (YAML lines or None when there is no frontmatter, body).
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
    diagnostics), per docs/spec.md §1.3-1.4. The id and size checks are load_bundle's.
    ``rel_path`` is the '/'-separated relative path, `.md` kept."""
    concept_id = rel_path[:-3] if rel_path.endswith(".md") else rel_path

    def error(code: str, message: str) -> tuple[None, list[RefDiagnostic]]:
        return None, [RefDiagnostic(code, message, rel_path, "error")]

    # docs/spec.md §1.3: bytes must be UTF-8; the offset counts the file's bytes,
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

    # type: absent or empty → None and a MissingType warning (docs/spec.md §1.4).
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

    # stale_after (docs/spec.md §2.2): absent / null → None, no diagnostic.
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

    # docs/spec.md §2.1 trust tier.
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
    """docs/spec.md §1.4 tags rule: a sequence → its scalar items' text (absent items
    skipped); one scalar → a one-element list; anything else → []."""
    if isinstance(v, list):
        return [t for t in v if isinstance(t, str)]
    if isinstance(v, str):
        return [v]
    return []


def _has_invalid_id_char(concept_id: str) -> bool:
    # docs/spec.md §1.2: a control character (U+0000-U+001F, U+007F) or a backslash.
    return any(ord(c) < 0x20 or c == "\x7f" or c == "\\" for c in concept_id)


def _is_utf8_name(name: str) -> bool:
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:  # os.fsdecode surrogate escapes
        return False
