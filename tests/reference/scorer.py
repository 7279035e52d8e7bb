"""docs/spec.md §3: the fields, the score, the excerpt and a full search."""

from __future__ import annotations

from reference.concept import RefBundle, RefConcept
from reference.text import contains_ci, fold, id_key, split_ws, trim


def field_texts(c: RefConcept) -> tuple[str, str, str]:
    """docs/spec.md §3.2: (title, tags_desc, body)."""
    title = c.title or ""
    tags_desc = " ".join(c.tags) + " " + (c.description or "")
    return title, tags_desc, c.body


def score(c: RefConcept, terms: list[str]) -> int:
    """docs/spec.md §3.3: sum over the terms (duplicates included) of
    3·[title] + 2·[tags_desc] + 1·[body], each a contains_ci test."""
    title, tags_desc, body = field_texts(c)
    total = 0
    for t in terms:
        total += 3 * contains_ci(title, t) + 2 * contains_ci(tags_desc, t) + contains_ci(body, t)
    return total


def excerpt(body: str, terms: list[str]) -> str:
    """docs/spec.md §3.5: the first trimmed, non-empty body line that contains_ci any
    term; none → ""."""
    for line in body.split("\n"):
        t = trim(line)
        if t == "":
            continue
        if any(contains_ci(t, term) for term in terms):
            return t
    return ""


def search(bundle: RefBundle, text: str, tag: str | None = None) -> list[tuple[str, int, str]]:
    """docs/spec.md §3.1-3.6: (concept_id, score, excerpt) for every concept with a
    score > 0, by score descending then id order."""
    terms = split_ws(text)  # docs/spec.md §3.1: no lower-casing, no de-duplication
    if not terms:
        return []
    # docs/spec.md §3.6: a tag that is None or blank (empty / only white space) is no
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
