"""A bundle's cold load — a fresh process, an empty cache directory, the
cache file written — timed in fresh processes, with the process's peak
resident memory; several builds of okfast interleaved, so a machine whose
speed drifts treats them alike.

    .venv/bin/python benches/cold_load.py PATH [--rounds 15] [LABEL=PYTHONPATH ...]

Without ``LABEL=PYTHONPATH`` pairs it times the okfast this interpreter
imports; with them, each label's process runs with that ``PYTHONPATH`` (an
unpacked wheel of another commit, say) and ``this=`` names this one. Prints
one JSON object per label: median, first quartile and least load time in
milliseconds, and the largest peak in MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = """
import resource, shutil, sys, tempfile, time
import okfast
d = tempfile.mkdtemp()
t = time.perf_counter()
okfast.Bundle.load(sys.argv[1], cache_dir=d)
ms = (time.perf_counter() - t) * 1000
shutil.rmtree(d)
print(ms, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def one(path: str, pythonpath: str | None) -> tuple[float, int]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    else:
        env.pop("PYTHONPATH", None)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, path], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[0]), int(out[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("builds", nargs="*", help="LABEL=PYTHONPATH (empty for this interpreter's)")
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_intermixed_args()
    builds = [b.partition("=")[::2] for b in args.builds] or [("this", "")]
    times: dict[str, list[float]] = {label: [] for label, _ in builds}
    peaks: dict[str, list[int]] = {label: [] for label, _ in builds}
    for _ in range(args.rounds):
        for label, pythonpath in builds:
            ms, peak = one(args.path, pythonpath or None)
            times[label].append(ms)
            peaks[label].append(peak)
    for label, _ in builds:
        t = sorted(times[label])
        print(
            json.dumps(
                {
                    "build": label,
                    "median_ms": round(statistics.median(t), 1),
                    "q25_ms": round(t[len(t) // 4], 1),
                    "min_ms": round(t[0], 1),
                    "peak_mib": max(peaks[label]),
                    "rounds": len(t),
                }
            )
        )


if __name__ == "__main__":
    main()
