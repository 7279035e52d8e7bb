"""docs/spec.md §1.1-§1.2, §1.5-§1.6: a bundle walked, every concept file
read, the root ``okf_version``."""

from __future__ import annotations

import os
import stat

from reference.concept import (
    MAX_FILE_BYTES,
    MSG_INVALID_ID,
    MSG_SYMLINK,
    RefBundle,
    RefConcept,
    RefDiagnostic,
    _display,
    _has_invalid_id_char,
    _is_utf8_name,
    _msg_too_large,
    _split_frontmatter,
    read_concept,
)
from reference.text import id_key
from reference.yaml_block import parse_yaml
from reference.yaml_scalars import YamlError


def _read_okf_version(root: str) -> str | None:
    """docs/spec.md §1.5: `okf_version` of the root index.md; absent or unreadable →
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
    """docs/spec.md §1.1-1.2, 1.5-1.6: walk the bundle and read every concept file.

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
        # docs/spec.md §1.1: entries in ordinal order of their names.
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
            # Order (docs/spec.md §1.3): invalid id, too large, invalid UTF-8,
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
    # docs/spec.md §1.6: concepts in id order (not walk order: `a.md` is walked
    # before `a/` but `a` < `a/b` anyway, whereas `a-b.md` is walked before
    # `a/` and sorts after `a/b`).
    concepts.sort(key=lambda c: id_key(c.concept_id))
    # doc "Diagnostics": ordered by path as segment lists in id order; one
    # path's diagnostics keep their produced order (stable sort).
    diags.sort(key=lambda d: id_key(d.path))
    return RefBundle(
        root=root, concepts=concepts, diagnostics=diags, okf_version=_read_okf_version(root)
    )
