"""Seeded, reproducible synthetic OKF corpus for the benchmarks.

Everything here is a function of ``seed`` alone and uses only
``random.Random.random()`` (Mersenne Twister, stable across Python versions):
no ``randint``/``choice``/``choices``/numpy, whose algorithms have changed
between releases. The same ``(n, seed)`` therefore gives byte-identical files
on every machine, and timings quoted from different runs describe the same
corpus.

Layout written by :func:`generate`::

    root/index.md                     okf_version: "0.2" (reserved, not a concept)
    root/.okfast-bench.json           generator marker (dot-file: never loaded)
    root/d0000/c0000000.md … c0000999.md
    root/d0001/c0001000.md …          ≤ 1000 files per folder

Concept ids sort in the same order as the index ``i`` (fixed-width names), so
document positions agree between okfast (``bundle.concept_ids``) and the peers
built from :func:`read_documents`.

Words come from a ~50k pseudo-word vocabulary drawn with a Zipf law
(exponent 1.1) by bisecting cumulative weights, so term frequencies look like
natural text: a handful of words are in nearly every concept, most are rare.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from random import Random
from typing import NamedTuple

# Bump when the output of generate() changes, so cached corpora are rebuilt.
GENERATOR_VERSION = 1

VOCAB_SIZE = 50_000
ZIPF_EXPONENT = 1.1
FILES_PER_DIR = 1000
BODY_WORDS = 300  # approximate words per body, headings included

CORPUS_DIR = Path(__file__).resolve().parent / ".corpus"
MARKER = ".okfast-bench.json"

_ONSETS = (
    "b c d f g h j k l m n p r s t v w z "
    "bl br ch cl cr dr fl fr gl gr kr pl pr sc sh sk sl sp st str th tr"
).split()
_VOWELS = "a e i o u a e i o u ai au ea ee ia io oa oo ou y".split()
_CODAS = [""] * 6 + "n r s l m t k nd st rn ck ng".split()

# Plain YAML scalars that would not read back as the same text (YAML 1.1/1.2
# booleans, nulls, special floats): never used as words, so every field of
# the corpus is ordinary display text.
_YAML_SPECIAL = {
    "null",
    "nul",
    "true",
    "false",
    "yes",
    "no",
    "on",
    "off",
    "nan",
    "inf",
    "y",
    "n",
    "tru",
    "fals",
}

_TYPES = ("Concept", "Procedure", "Reference", "Decision", "Glossary", "Runbook", "Policy")


def _rint(rng: Random, lo: int, hi: int) -> int:
    """Uniform integer in [lo, hi] from rng.random() only (version-stable)."""
    return lo + int(rng.random() * (hi - lo + 1))


class Vocabulary(NamedTuple):
    words: list[str]  # rank order: words[0] is the most frequent
    cum: list[float]  # cumulative Zipf weights, cum[-1] == total

    def draw(self, rng: Random) -> str:
        return self.words[bisect_right(self.cum, rng.random() * self.cum[-1])]

    def draw_many(self, rng: Random, k: int) -> list[str]:
        words, cum, total, rnd = self.words, self.cum, self.cum[-1], rng.random
        return [words[bisect_right(cum, rnd() * total)] for _ in range(k)]


@lru_cache(maxsize=4)
def vocabulary(seed: int = 42, size: int = VOCAB_SIZE) -> Vocabulary:
    """~``size`` distinct pseudo-words, ranked so shorter words tend to be frequent."""
    rng = Random(seed * 7919 + 1)
    seen: set[str] = set()
    keyed: list[tuple[float, int, str]] = []
    while len(keyed) < size:
        n_syl = 1 + int(rng.random() ** 1.6 * 4)  # 1..4 syllables, mostly short
        w = "".join(
            _ONSETS[int(rng.random() * len(_ONSETS))]
            + _VOWELS[int(rng.random() * len(_VOWELS))]
            + _CODAS[int(rng.random() * len(_CODAS))]
            for _ in range(n_syl)
        )
        if len(w) < 3 or w in seen or w in _YAML_SPECIAL:
            continue
        seen.add(w)
        # Soft length/frequency correlation, as in natural languages.
        keyed.append((len(w) + rng.random() * 4.0, len(keyed), w))
    keyed.sort()
    words = [w for _, _, w in keyed]
    cum: list[float] = []
    acc = 0.0
    for r in range(1, size + 1):
        acc += 1.0 / r**ZIPF_EXPONENT
        cum.append(acc)
    return Vocabulary(words, cum)


# ---------------------------------------------------------------------------
# Concept text


def _sentence(vocab: Vocabulary, rng: Random, n_words: int) -> str:
    ws = vocab.draw_many(rng, n_words)
    ws[0] = ws[0].capitalize()
    # A comma now and then, so bodies are not one flat token stream.
    if n_words > 8 and rng.random() < 0.5:
        i = _rint(rng, 3, n_words - 3)
        ws[i] += ","
    return " ".join(ws) + "."


def _concept_text(vocab: Vocabulary, rng: Random) -> tuple[dict[str, object], str]:
    title = " ".join(w.capitalize() for w in vocab.draw_many(rng, _rint(rng, 3, 7)))
    description = _sentence(vocab, rng, _rint(rng, 8, 16))
    tags = vocab.draw_many(rng, _rint(rng, 0, 4))
    fm: dict[str, object] = {
        "type": _TYPES[int(rng.random() * len(_TYPES))],
        "title": title,
        "description": description,
        "tags": tags,
    }
    u = rng.random()
    if u < 0.08:
        fm["status"] = "draft"
    elif u < 0.12:
        fm["status"] = "deprecated"
    if rng.random() < 0.10:
        fm["stale_after"] = f"{_rint(rng, 2024, 2030)}-{_rint(rng, 1, 12):02d}-01T00:00:00Z"

    budget = _rint(rng, BODY_WORDS * 3 // 4, BODY_WORDS * 5 // 4)
    parts = [f"# {title}"]
    used = 0
    n_sections = _rint(rng, 1, 3)
    for s in range(n_sections):
        if s > 0:
            heading = vocab.draw_many(rng, _rint(rng, 2, 4))
            heading[0] = heading[0].capitalize()
            parts.append("## " + " ".join(heading))
            used += len(heading)
        section_budget = (budget - used) // (n_sections - s)
        while section_budget > 0:
            para: list[str] = []
            para_words = min(section_budget, _rint(rng, 40, 90))
            got = 0
            while got < para_words:
                k = min(para_words - got, _rint(rng, 6, 18))
                para.append(_sentence(vocab, rng, max(k, 1)))
                got += max(k, 1)
            parts.append(" ".join(para))
            section_budget -= got
            used += got
    return fm, "\n\n".join(parts) + "\n"


def _frontmatter(fm: dict[str, object]) -> str:
    lines = ["---"]
    for key, value in fm.items():
        if isinstance(value, list):
            lines.append(f"{key}: [{', '.join(value)}]")
        elif key == "stale_after":
            lines.append(f'{key}: "{value}"')
        else:
            lines.append(f"{key}: {value}")
    lines.append("---")
    return "\n".join(lines) + "\n"


def concept_path(i: int) -> str:
    return f"d{i // FILES_PER_DIR:04d}/c{i:07d}.md"


def generate(root: Path, n: int, seed: int = 42) -> Path:
    """Write ``n`` concept files and a root ``index.md`` under ``root``; return ``root``.

    Concept ``i`` depends only on ``(seed, i)``, so a 10k corpus is the first
    tenth of the 100k corpus with the same seed.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    vocab = vocabulary(seed)
    (root / "index.md").write_text(
        "---\n"
        'okf_version: "0.2"\n'
        f"title: Synthetic okfast benchmark corpus ({n} concepts, seed {seed})\n"
        "---\n\n"
        f"# Synthetic corpus\n\nGenerated by benches/corpus.py v{GENERATOR_VERSION}.\n",
        encoding="utf-8",
    )
    current_dir = -1
    for i in range(n):
        d = i // FILES_PER_DIR
        if d != current_dir:
            (root / f"d{d:04d}").mkdir(exist_ok=True)
            current_dir = d
        rng = Random(seed * 1_000_003 + i)
        fm, body = _concept_text(vocab, rng)
        with open(root / concept_path(i), "w", encoding="utf-8", newline="\n") as f:
            f.write(_frontmatter(fm))
            f.write("\n")
            f.write(body)
    (root / MARKER).write_text(
        json.dumps({"generator_version": GENERATOR_VERSION, "n": n, "seed": seed}) + "\n"
    )
    return root


def synth_size(name: str) -> int | None:
    """``n`` for a corpus named ``synth-n`` (the reports' names), else None."""
    m = re.fullmatch(r"synth-(\d+)", name)
    return int(m.group(1)) if m else None


def corpus_dir(n: int, seed: int = 42) -> Path:
    return CORPUS_DIR / f"synth-{n}-{seed}"


def _is_current(path: Path, n: int, seed: int) -> bool:
    try:
        meta = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return False
    return meta == {"generator_version": GENERATOR_VERSION, "n": n, "seed": seed}


def ensure_corpus(n: int, seed: int = 42) -> Path:
    """Build ``benches/.corpus/synth-{n}-{seed}/`` once and return it.

    The corpus is written to a temporary sibling and renamed into place when
    complete, so an interrupted build is never mistaken for a finished one.
    """
    final = corpus_dir(n, seed)
    if final.is_dir() and _is_current(final, n, seed):
        return final
    CORPUS_DIR.mkdir(parents=True, exist_ok=True)
    tmp = CORPUS_DIR / f".tmp-synth-{n}-{seed}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    print(f"[okfast-bench] generating {n} concepts (seed {seed}) ...", file=sys.stderr)
    generate(tmp, n, seed)
    if final.exists():  # stale generator version
        shutil.rmtree(final)
    os.rename(tmp, final)
    return final


# ---------------------------------------------------------------------------
# Queries


def sample_queries(n_queries: int, seed: int = 42) -> list[str]:
    """``n_queries`` queries of 2–4 lower-case terms from the corpus vocabulary.

    The first term is a frequent word (rank 10–300: in many concepts), the
    others are frequent or mid-frequency (rank 300–10 000, log-uniform), so
    result sets range from a few hundred to most of the corpus. The 10 most
    frequent words (stop-word-like) are never used.
    """
    vocab = vocabulary(seed)
    rng = Random(seed * 1_000_003 + 999_999_937)
    out = []
    for _ in range(n_queries):
        terms = []
        for j in range(_rint(rng, 2, 4)):
            if j == 0 or rng.random() < 0.3:
                rank = _rint(rng, 10, 299)
            else:
                rank = int(300 * (10_000 / 300) ** rng.random())
            terms.append(vocab.words[rank])
        out.append(" ".join(terms))
    return out


# ---------------------------------------------------------------------------
# Reading the corpus back as plain documents (for the peers)


@dataclass(frozen=True, slots=True)
class Document:
    """The three text fields okfast scores (docs/spec.md §3.2), plus the concept id."""

    id: str
    title: str
    tags_desc: str
    body: str


def _split(text: str) -> tuple[dict[str, str], str]:
    """Tiny frontmatter split; enough for files written by :func:`generate`."""
    if not text.startswith("---\n"):
        return {}, text
    end = text.index("\n---\n", 3)
    fields: dict[str, str] = {}
    for line in text[4:end].split("\n"):
        key, _, value = line.partition(": ")
        fields[key] = value.strip()
    body = text[end + 5 :]
    if body.startswith("\n"):
        body = body[1:]
    return fields, body


def iter_concept_files(root: Path) -> Iterator[tuple[str, Path]]:
    """(id, path) in id order for a corpus written by :func:`generate`."""
    root = Path(root)
    for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for f in sorted(d.iterdir()):
            if f.suffix == ".md":
                yield f"{d.name}/{f.stem}", f


def read_documents(root: Path) -> list[Document]:
    docs = []
    for cid, path in iter_concept_files(root):
        fields, body = _split(path.read_text(encoding="utf-8"))
        tags_field = fields.get("tags", "[]")
        tags = [t.strip() for t in tags_field[1:-1].split(",") if t.strip()]
        docs.append(
            Document(
                id=cid,
                title=fields.get("title", ""),
                tags_desc=" ".join(tags) + " " + fields.get("description", ""),
                body=body,
            )
        )
    return docs


def disk_usage(root: Path) -> tuple[int, int]:
    """(apparent bytes of all files, bytes allocated on disk) under ``root``."""
    apparent = allocated = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            st = os.lstat(os.path.join(dirpath, name))
            apparent += st.st_size
            allocated += st.st_blocks * 512
    return apparent, allocated


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Build (or find) a cached synthetic OKF corpus.")
    ap.add_argument("n", type=int)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", type=Path, help="write here instead of the cache")
    args = ap.parse_args()
    path = generate(args.out, args.n, args.seed) if args.out else ensure_corpus(args.n, args.seed)
    print(path)
