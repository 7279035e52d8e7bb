"""Reopen after a few edits (docs/spec.md §9.4), each load in a fresh process.

Touches (``os.utime``) 10 files spread over a synthetic bundle of N concepts,
waits out the racy window, and reopens it in a new process; prints the median
of 5 rounds of the unchanged reopen and of the reopen after the touch, and
what the last one did (status, ``made_by``, files re-read).

With ``--edit``, each round appends a word to the body of those 10 files
instead (indexed text changes: the saved index is spliced, or rebuilt by a
version that cannot splice); their first contents are put back at the end.
The reopen "before the edit" then follows the round before's spliced load:
a hit where that load wrote a new cache file (docs/spec.md §9.5), another
splice where it did not (versions before 2026-12-07).

    python benches/reopen_touched.py [--edit] 100000 [1000000]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402

LOAD = (
    "import time, okfast, sys; t = time.perf_counter(); "
    "b = okfast.Bundle.load(sys.argv[1], cache_dir=sys.argv[2]); "
    "print(time.perf_counter() - t, b.cache_status, repr(b.made_by), b.cache_reread)"
)


def main(sizes: list[int], edit: bool = False) -> None:
    for n in sizes:
        root = corpus.ensure_corpus(n, 42)
        with tempfile.TemporaryDirectory() as cache:

            def load(root: Path = root, cache: str = cache) -> list[str]:
                out = subprocess.run(
                    [sys.executable, "-c", LOAD, str(root), cache],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                return out.split(maxsplit=1)

            load()  # writes the cache file
            files = sorted(root.glob("*/*.md"))
            files = files[:: max(1, len(files) // 10)][:10]
            first = {f: f.read_bytes() for f in files}
            same, touched, last = [], [], [""]
            try:
                for round in range(5):
                    same.append(float(load()[0]))
                    for f in files:
                        if edit:
                            with f.open("a", encoding="utf-8") as out:
                                out.write(f" spliced{round}\n")
                        else:
                            os.utime(f)
                    # Out of the racy window: a stamp equal to the cache's clock is
                    # not trusted (docs/spec.md §9.4) and would force a rebuild.
                    time.sleep(2.1)
                    last = load()
                    touched.append(float(last[0]))
            finally:
                for f, data in first.items():
                    f.write_bytes(data)
            what = "editing" if edit else "touching"
            print(
                f"{n} concepts: reopen before the round's {what[:-3]} "
                f"{statistics.median(same):.3f} s, "
                f"after {what} 10 files {statistics.median(touched):.3f} s ({last[1].strip()})"
            )


if __name__ == "__main__":
    args = sys.argv[1:]
    main([int(a) for a in args if a != "--edit"] or [100_000], edit="--edit" in args)
