"""docs/spec.md §12 read literally, in Python: BM25F tokens, statistics and
scores, with no index. Slow and obvious; the property tests hold the native
scorer to it.

Word segmentation is UAX #29 as the ``regex`` module implements it (the
``(?w)`` flag makes ``\\b`` the Unicode default word boundary), stemming is
Snowball through ``snowballstemmer``: both independent of the Rust crates
the core uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import regex
import snowballstemmer

FIELDS = ("title", "tags", "description", "body")
#: docs/spec.md's white space.
WS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_CJK = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}]")
_BOUNDARY = regex.compile(r"(?w)\b")


def fold(s: str) -> str:
    """§3 fold: each character's simple uppercase, when it is one character."""
    out = []
    for c in s:
        up = c.upper()
        out.append(up if len(up) == 1 else c)
    return "".join(out)


def lower(s: str) -> str:
    out = []
    for c in s:
        low = c.lower()
        out.append(low if len(low) == 1 else c)
    return "".join(out)


def pieces(text: str) -> list[str]:
    out, cur = [], []
    for c in text:
        if c in WS:
            if cur:
                out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if cur:
        out.append("".join(cur))
    return out


#: docs/spec.md §12.1's letter or digit: `Alphabetic` (which holds the
#: combining vowel signs of Indic scripts and the circled letters, that
#: ``str.isalnum`` leaves out) or General_Category Nd, Nl or No.
_LETTER_OR_DIGIT = regex.compile(r"[\p{Alphabetic}\p{Nd}\p{Nl}\p{No}]")


def _alnum(c: str) -> bool:
    return _LETTER_OR_DIGIT.match(c) is not None


def tokens(text: str, language: str | None) -> list[tuple[str, str | None]]:
    """Every token of ``text`` with the word it came from (``None`` for a
    bigram): per folded piece, its UAX #29 words holding a letter or digit
    (stemmed), each word's letter-and-digit runs when it holds anything
    else, then the piece's CJK bigrams."""
    stem = snowballstemmer.stemmer(language) if language else None

    def stemmed(w: str) -> str:
        return fold(stem.stemWord(lower(w))) if stem else w

    out: list[tuple[str, str | None]] = []
    for piece in pieces(text):
        p = fold(piece)
        for w in (s for s in _BOUNDARY.split(p) if s):
            if not any(_alnum(c) for c in w):
                continue
            out.append((stemmed(w), w))
            if not all(_alnum(c) for c in w):
                run = ""
                for c in w + " ":
                    if _alnum(c):
                        run += c
                    elif run:
                        out.append((stemmed(run), run))
                        run = ""
        for a, b in zip(p, p[1:], strict=False):
            if _CJK.match(a) and _CJK.match(b):
                out.append((a + b, None))
    return out


def query_tokens(text: str, language: str | None, stop_words: set[str]) -> list[str]:
    """Distinct tokens in order of first appearance, stop words dropped."""
    out: list[str] = []
    for t, w in tokens(text, language):
        if w is not None and w in stop_words:
            continue
        if t not in out:
            out.append(t)
    return out


@dataclass
class Doc:
    fields: tuple[list[str], list[str], list[str], list[str]]


def doc(
    title: str | None, tags: list[str], description: str | None, body: str, language: str | None
) -> Doc:
    def toks(texts: list[str]) -> list[str]:
        return [t for x in texts for t, _ in tokens(x, language)]

    return Doc((toks([title or ""]), toks(tags), toks([description or ""]), toks([body])))


@dataclass
class Params:
    k1: float
    weights: tuple[float, float, float, float]
    b: tuple[float, float, float, float]


def scores(
    docs: list[Doc], query: list[str], p: Params, stats_docs: list[Doc] | None = None
) -> list[float]:
    """Each doc's score; statistics from ``stats_docs`` (default: ``docs``)."""
    sd = docs if stats_docs is None else stats_docs
    n = len(sd)
    totals = [sum(len(d.fields[f]) for d in sd) for f in range(4)]
    df = {t: sum(1 for d in sd if any(t in fl for fl in d.fields)) for t in query}
    out = []
    for d in docs:
        score = 0.0
        for t in query:
            idf = math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5))
            x = 0.0
            for f in range(4):
                tf = min(d.fields[f].count(t), 65535)
                if tf:
                    avg = totals[f] / n
                    norm = (1.0 - p.b[f]) + (p.b[f] / avg) * len(d.fields[f])
                    x += (p.weights[f] * tf) / norm
            if x > 0:
                score += idf * (x / (p.k1 + x))
        out.append(score)
    return out
