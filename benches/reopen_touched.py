"""Reopen after a few edits (docs/spec.md §9.4), each load in a fresh process.

Touches (``os.utime``) 10 files spread over a synthetic bundle of N concepts,
waits out the racy window, and reopens it in a new process; prints the median
of 5 rounds of the unchanged reopen and of the reopen after the touch, and
what the last one did (status, ``made_by``, files re-read).

    python benches/reopen_touched.py 100000 [1000000]
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


def main(sizes: list[int]) -> None:
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
            same, touched, last = [], [], [""]
            for _ in range(5):
                same.append(float(load()[0]))
                for f in files:
                    os.utime(f)
                # Out of the racy window: a stamp equal to the cache's clock is
                # not trusted (docs/spec.md §9.4) and would force a rebuild.
                time.sleep(2.1)
                last = load()
                touched.append(float(last[0]))
            print(
                f"{n} concepts: unchanged reopen {statistics.median(same):.3f} s, "
                f"after touching 10 files {statistics.median(touched):.3f} s ({last[1].strip()})"
            )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [100_000])
