"""A bundle's cold load — a fresh process, an empty cache directory, the
cache file written — timed in fresh processes, with the process's peak
resident memory; several builds of okfast interleaved, so a machine whose
speed drifts treats them alike.

    .venv/bin/python benches/cold_load.py PATH [--rounds 15] [--order paired|alternate]
        [--settle SECONDS] [LABEL=PYTHONPATH ...]

Without ``LABEL=PYTHONPATH`` pairs it times the okfast this interpreter
imports; with them, each label's process runs with that ``PYTHONPATH`` (an
unpacked wheel of another commit, say) and ``this=`` names this one. Prints
one JSON object per label: median, first quartile and least load time in
milliseconds, the largest peak in MiB, and the load's median user and system
CPU time in seconds (steadier than the wall time on a VM whose memory costs
vary by the hour, and what a change to the load's work moves).

Where a load's memory comes from moves its time more than any build does on
a VM that hands freed memory back to its host (docs/performance.md, "Cold
load: what the measurement measured"): a process started right after one
that freed more memory than it needs runs on memory still backed, one
started after a smaller one touches memory the host must supply again. So
``--order paired`` (the default) loads each build twice in a row and times
the second: every timed load follows a load of its own build, and the
builds' order turns round every round. ``--order alternate`` times every
load, the builds one after the other (how the figures before 2026-12-03
were taken: each build then ran on what the build before it left).
``--settle S`` waits S seconds before each timed load, long enough for the
memory the last process freed to go back to the host: every load then
starts from memory the host must supply.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = """
import resource, shutil, sys, tempfile, time
import okfast
d = tempfile.mkdtemp()
before = resource.getrusage(resource.RUSAGE_SELF)
t = time.perf_counter()
okfast.Bundle.load(sys.argv[1], cache_dir=d)
ms = (time.perf_counter() - t) * 1000
after = resource.getrusage(resource.RUSAGE_SELF)
shutil.rmtree(d)
user = after.ru_utime - before.ru_utime
system = after.ru_stime - before.ru_stime
print(ms, after.ru_maxrss // 1024, user, system)
"""


def one(path: str, pythonpath: str | None) -> tuple[float, int, float, float]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    else:
        env.pop("PYTHONPATH", None)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, path], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[0]), int(out[1]), float(out[2]), float(out[3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("builds", nargs="*", help="LABEL=PYTHONPATH (empty for this interpreter's)")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--order", choices=("paired", "alternate"), default="paired")
    ap.add_argument("--settle", type=float, default=0.0, help="seconds before each timed load")
    args = ap.parse_intermixed_args()
    builds = [b.partition("=")[::2] for b in args.builds] or [("this", "")]
    times: dict[str, list[float]] = {label: [] for label, _ in builds}
    peaks: dict[str, list[int]] = {label: [] for label, _ in builds}
    cpu: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in builds}
    paired = args.order == "paired"
    for r in range(args.rounds):
        for label, pythonpath in builds if not paired or r % 2 == 0 else builds[::-1]:
            if paired:
                one(args.path, pythonpath or None)  # what the timed load follows
            time.sleep(args.settle)
            ms, peak, user, system = one(args.path, pythonpath or None)
            times[label].append(ms)
            peaks[label].append(peak)
            cpu[label].append((user, system))
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
                    "median_user_s": round(statistics.median(u for u, _ in cpu[label]), 2),
                    "median_system_s": round(statistics.median(s for _, s in cpu[label]), 2),
                    "rounds": len(t),
                }
            )
        )


if __name__ == "__main__":
    main()
