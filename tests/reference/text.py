"""docs/spec.md text terms: white space, trim, fold, contains_ci, id order;
and §3.1, splitting a query into terms."""

from __future__ import annotations

# docs/spec.md text terms "White space": exactly the Unicode White_Space characters
# U+0009-U+000D, U+0020, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028,
# U+2029, U+202F, U+205F, U+3000.
WHITE_SPACE: frozenset[str] = frozenset(
    [chr(c) for c in range(0x0009, 0x000D + 1)]
    + ["\u0020", "\u0085", "\u00a0", "\u1680"]
    + [chr(c) for c in range(0x2000, 0x200A + 1)]
    + ["\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
)


def is_ws(c: str) -> bool:
    """True when the one-character string ``c`` is white space (docs/spec.md text terms)."""
    return c in WHITE_SPACE


def trim(s: str) -> str:
    """docs/spec.md text terms "trim": remove leading and trailing white space."""
    start = 0
    end = len(s)
    while start < end and is_ws(s[start]):
        start += 1
    while end > start and is_ws(s[end - 1]):
        end -= 1
    return s[start:end]


def split_ws(s: str) -> list[str]:
    """docs/spec.md §3.1: split on white space (docs/spec.md text terms), empty pieces dropped.

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
    # docs/spec.md text terms "fold(c)": the simple uppercase when Unicode's uppercase
    # of c is exactly one character, else c itself (ß stays ß).
    u = c.upper()
    return u if len(u) == 1 else c


def fold(s: str) -> str:
    """docs/spec.md text terms "fold(s)": fold every character; len(fold(s)) == len(s)."""
    return "".join(_fold_char(c) for c in s)


def contains_ci(h: str, n: str) -> bool:
    """docs/spec.md text terms "contains_ci(h, n)": fold(n) is a substring of fold(h)."""
    return fold(n) in fold(h)


def id_key(concept_id: str) -> tuple[str, ...]:
    """docs/spec.md §1.2 "Id order" as a sort key.

    Compare the '/'-segment lists element by element in ordinal order (Python
    ``<`` on ``str`` is code-point order); a prefix sorts first. A tuple of
    the segments has exactly that ordering, so ``a/b`` < ``a-b`` because
    ("a", "b") < ("a-b",).
    """
    return tuple(concept_id.split("/"))
