"""Memory resident after a cold load through a new cache file and after the
reopen that follows (docs/spec.md §9.5), each in a fresh process.

Prints, per load, the process's resident set and its anonymous (heap) part
from ``/proc/self/smaps_rollup`` (Linux). A cold load that serves its
snapshot from the file it wrote holds about what its reopen holds; one that
keeps what it built holds the built index and every decoded concept too.

    python benches/resident_after_load.py PATH [PATH ...]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile

LOAD = """
import gc, sys
import okfast
b = okfast.Bundle.load(sys.argv[1], cache_dir=sys.argv[2])
gc.collect()
kib = {}
for line in open("/proc/self/smaps_rollup"):
    key, value = line.split(":", 1)
    if value.split()[1:] == ["kB"]:
        kib[key] = int(value.split()[0])
print(f"{b.cache_status:<5} {len(b):>8} concepts  resident {kib['Rss'] // 1024:>6} MiB"
      f"  anonymous {kib['Anonymous'] // 1024:>6} MiB")
"""


def main(paths: list[str]) -> None:
    for path in paths:
        print(path)
        with tempfile.TemporaryDirectory() as cache:
            for _ in ("cold", "reopen"):
                out = subprocess.run(
                    [sys.executable, "-c", LOAD, path, cache],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                print("  " + out.strip())


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
