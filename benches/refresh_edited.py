"""In-process ``refresh()`` after editing the body of 10 files spread over a
synthetic bundle of N concepts (docs/spec.md §1.9: ``events, index spliced``):
5 rounds, each appending a word to the same 10 files; prints each refresh's
time and ``made_by`` and the median. The files are restored at the end.

    python benches/refresh_edited.py 100000
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402
import okfast  # noqa: E402


def main(n: int) -> None:
    root = corpus.ensure_corpus(n, 42)
    b = okfast.Bundle.load(root)
    ids = b.concept_ids
    step = len(ids) // 10
    files = [root / (ids[i * step] + ".md") for i in range(10)]
    orig = [f.read_bytes() for f in files]
    times = []
    try:
        for r in range(5):
            for f in files:
                with open(f, "ab") as h:
                    h.write(b" editedword%d" % r)
            t = time.perf_counter()
            fresh = b.refresh()
            dt = time.perf_counter() - t
            times.append(dt)
            print(f"{dt:.3f} s", fresh.made_by if fresh else None, flush=True)
            b = fresh or b
    finally:
        for f, o in zip(files, orig, strict=True):
            f.write_bytes(o)
    print(f"{n} concepts: refresh after editing 10 files, median {statistics.median(times):.3f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
