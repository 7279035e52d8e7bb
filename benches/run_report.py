"""Run the benchmark suite and write ``benches/RESULTS.md``.

    python benches/run_report.py                 # sizes 10k and 100k (~20 min on 2 cores)
    python benches/run_report.py --quick         # 10k only, fewer rounds (~2 min)
    python benches/run_report.py --json F.json   # re-render from an earlier --benchmark-json

Steps: build the cached corpora (not timed), run
``pytest benches --benchmark-only --benchmark-json=…`` in a subprocess, then
render per-group tables of medians with ratios against okfast, okfast's peak
RSS while loading each corpus (measured in a fresh child process with
``getrusage(RUSAGE_SELF).ru_maxrss``), the corpus size on disk, a small
okfast-vs-reference agreement check, and the machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MAIN = HERE.parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402

DEFAULT_JSON = corpus.CORPUS_DIR / "bench-results.json"
PEER_ORDER = ["okfast", "okfast-warm", "okfast-hits", "tantivy", "bm25s", "reference"]
MEMORY_LIMIT_FACTOR = 3.0
CHECK_SIZE = 2000


# --- running ---------------------------------------------------------------------


def run_suite(sizes: list[int], seed: int, json_path: Path, quick: bool, extra: list[str]) -> int:
    env = dict(os.environ)
    env["OKFAST_BENCH_SIZES"] = ",".join(map(str, sizes))
    env["OKFAST_BENCH_SEED"] = str(seed)
    if quick:
        env.setdefault("OKFAST_BENCH_QUERIES", "30")
        env.setdefault("OKFAST_BENCH_REF_QUERIES", "1")
        env.setdefault("OKFAST_BENCH_LOAD_ROUNDS", "3")
    json_path.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "benches",
        "-p",
        "no:cacheprovider",
        "--benchmark-only",
        f"--benchmark-json={json_path}",
        "--benchmark-columns=median,iqr,min,rounds",
        "-q",
        *extra,
    ]
    print("+", " ".join(cmd), file=sys.stderr)
    return subprocess.call(cmd, cwd=MAIN, env=env)


_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    import okfast
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    b = okfast.Bundle.load(sys.argv[1], cache=False)
    load_s = time.perf_counter() - t
    after_load = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    b.search_arrays(sys.argv[2], limit=None)  # any lazily built index counts too
    after_query = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"n": len(b), "base_kib": base, "load_kib": after_load,
                      "query_kib": after_query, "load_s": load_s}))
    """
)


def measure_memory(root: Path, query: str) -> dict[str, Any] | None:
    """okfast peak RSS (KiB, Linux ru_maxrss) in a fresh interpreter, or None."""
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(root), query],
        capture_output=True,
        text=True,
        cwd="/",
    )
    if proc.returncode != 0:
        print(f"[memory] okfast child failed: {proc.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def agreement_check(root: Path, queries: list[str]) -> str:
    """Compare okfast's full results with the reference oracle on a few queries."""
    import peers

    try:
        ok, ref = peers.OkfastPeer(), peers.ReferencePeer()
    except ImportError as e:
        return f"skipped ({e})"
    ok.load(root)
    ref.load(root)
    bad = [q for q in queries if ok.scored_ids(q, None) != ref.scored_ids(q, None)]
    if bad:
        return f"**MISMATCH** on {len(bad)}/{len(queries)} queries, e.g. `{bad[0]}`"
    return f"identical (ids, scores, order) on {len(queries)} queries"


# --- rendering -------------------------------------------------------------------


def fmt_time(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} µs"


def fmt_ratio(r: float) -> str:
    return f"{r:,.0f}×" if r >= 100 else f"{r:.2f}×"


def fmt_bytes(b: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if b < 1024 or unit == "GiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1024
    raise AssertionError


def machine() -> dict[str, str]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        model = platform.processor() or "unknown"
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    mem = ""
    try:
        import psutil

        mem = fmt_bytes(psutil.virtual_memory().total)
    except ImportError:
        pass
    versions = []
    for pkg in ("okfast", "tantivy", "bm25s", "numpy", "pytest-benchmark"):
        try:
            versions.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{pkg} (not installed)")
    return {
        "CPU": model,
        "cores": f"{os.cpu_count()} logical, {usable} usable",
        "memory": mem,
        "OS": f"{platform.system()} {platform.release()}",
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": ", ".join(versions),
    }


def group_tables(data: dict[str, Any]) -> list[str]:
    groups: dict[str, dict[str, dict[str, Any]]] = {}
    for b in data["benchmarks"]:
        peer = b.get("extra_info", {}).get("peer", b["name"])
        groups.setdefault(b["group"], {})[peer] = b

    def sort_key(g: str) -> tuple[int, str, int]:
        kind, _, n = g.rpartition("-")
        order = ["load", "query-top10", "query-full"]
        return (int(n) if n.isdigit() else 0, "", order.index(kind) if kind in order else 9)

    out: list[str] = []
    for g in sorted(groups, key=sort_key):
        rows = groups[g]
        ok = rows.get("okfast")
        out.append(f"### `{g}`\n")
        out.append("| peer | what | median | IQR | min | rounds | peer ÷ okfast |")
        out.append("|---|---|---:|---:|---:|---:|---:|")
        for peer in sorted(rows, key=lambda p: (PEER_ORDER + [p]).index(p)):
            b = rows[peer]
            st = b["stats"]
            what = b.get("extra_info", {}).get("measures", "")
            if not what:
                k = b.get("extra_info", {}).get("k", "")
                what = "top 10" if k == 10 else "all matches" if g.startswith("query-full") else ""
            ratio = (
                "—"
                if peer == "okfast"
                else (fmt_ratio(st["median"] / ok["stats"]["median"]) if ok else "n/a")
            )
            out.append(
                f"| {peer} | {what} | {fmt_time(st['median'])} | "
                f"{fmt_time(st['iqr']) if st['rounds'] > 1 else '—'} | "
                f"{fmt_time(st['min'])} | {st['rounds']} | {ratio} |"
            )
        if not ok:
            out.append("\n_okfast was not importable in this run: no ratios._")
        out.append("")
    return out


def render(
    data: dict[str, Any] | None,
    sizes: list[int],
    seed: int,
    memory: dict[int, dict[str, Any] | None],
    check: str,
    command: str,
) -> str:
    m = machine()
    lines = [
        "# okfast benchmark results",
        "",
        f"Generated {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M UTC} by "
        f"`{command}`" + (f" (repository at `{_git_head()}`)" if _git_head() else "") + ".",
        "",
        "## Machine",
        "",
        *[f"- **{k}**: {v}" for k, v in m.items() if v],
        "",
        "## Corpus",
        "",
        f"Synthetic OKF bundles from `benches/corpus.py` (seed {seed}, generator "
        f"v{corpus.GENERATOR_VERSION}): ~300-word bodies, Zipf(1.1) over a 50k pseudo-word "
        "vocabulary; queries are 2–4 terms (one frequent word plus frequent/mid-frequency "
        "words), one distinct query per timed round.",
        "",
        "| concepts | files on disk (apparent) | allocated on disk |",
        "|---:|---:|---:|",
    ]
    sizes_on_disk: dict[int, tuple[int, int]] = {}
    for n in sizes:
        root = corpus.corpus_dir(n, seed)
        if root.is_dir():
            sizes_on_disk[n] = corpus.disk_usage(root)
            a, d = sizes_on_disk[n]
            lines.append(f"| {n:,} | {fmt_bytes(a)} | {fmt_bytes(d)} |")
    lines += [
        "",
        "## Timings (medians; ratio = peer median ÷ okfast median, > 1 means okfast is faster)",
        "",
        "`load-*`: okfast and the reference read the bundle from files (walk, read, parse, "
        "index; OS page cache warm); tantivy and bm25s build their index from documents "
        "already in memory (reading files not counted). The engines do not compute the same "
        "score: okfast is the exact weighted substring count of SPEC §3, tantivy/bm25s are "
        "BM25 over lower-cased tokens.",
        "",
    ]
    lines += group_tables(data) if data else ["_No benchmark data._", ""]

    lines += ["## okfast memory while loading", ""]
    if any(v for v in memory.values()):
        lines += [
            "Peak RSS of a fresh `python -c 'import okfast; Bundle.load(...)'` process "
            "(`ru_maxrss`), after loading and after one full query; the baseline is the "
            "process after `import okfast` (interpreter + numpy). Limit checked: peak ≤ "
            f"{MEMORY_LIMIT_FACTOR:g}× the corpus's apparent size on disk.",
            "",
            "| concepts | corpus (apparent) | load time | baseline | peak after load "
            "| peak after query | peak − baseline | peak ÷ corpus | (peak − baseline) ÷ corpus "
            "| ≤ 3×? |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|",
        ]
        for n, mem in memory.items():
            if not mem or n not in sizes_on_disk:
                continue
            corpus_b = sizes_on_disk[n][0]
            base, peak = mem["base_kib"] * 1024, max(mem["load_kib"], mem["query_kib"]) * 1024
            ok = peak <= MEMORY_LIMIT_FACTOR * corpus_b
            ok_delta = peak - base <= MEMORY_LIMIT_FACTOR * corpus_b
            verdict = "yes" if ok else ("yes, net of baseline" if ok_delta else "**no**")
            lines.append(
                f"| {n:,} | {fmt_bytes(corpus_b)} | {fmt_time(mem['load_s'])} | "
                f"{fmt_bytes(base)} | "
                f"{fmt_bytes(mem['load_kib'] * 1024)} | {fmt_bytes(mem['query_kib'] * 1024)} | "
                f"{fmt_bytes(peak - base)} | {peak / corpus_b:.2f}× | "
                f"{(peak - base) / corpus_b:.2f}× | {verdict} |"
            )
    else:
        lines.append("_Not measured (okfast not importable, or --no-memory)._")
    lines += ["", "## okfast vs reference", "", f"Full result lists: {check}.", ""]
    return "\n".join(lines)


def _git_head() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=MAIN,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", default=os.environ.get("OKFAST_BENCH_SIZES", "10000,100000"))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("OKFAST_BENCH_SEED", "42")))
    ap.add_argument("--quick", action="store_true", help="10k only, fewer rounds")
    ap.add_argument("--json", type=Path, help="render from this benchmark JSON; do not run")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    ap.add_argument("--note", default="", help="a caveat printed under the title")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = ap.parse_args(argv)

    sizes = [10_000] if args.quick else [int(s) for s in args.sizes.replace(",", " ").split()]
    for n in sizes:
        corpus.ensure_corpus(n, args.seed)

    json_path = args.json or DEFAULT_JSON
    rc = 0
    if args.json is None:
        rc = run_suite(sizes, args.seed, json_path, args.quick, args.pytest_args)
    data = json.loads(json_path.read_text()) if json_path.exists() else None

    queries = corpus.sample_queries(8, args.seed)
    memory: dict[int, dict[str, Any] | None] = {}
    if not args.no_memory:
        for n in sizes:
            memory[n] = measure_memory(corpus.corpus_dir(n, args.seed), queries[0])
    check = "not run"
    if not args.no_check:
        # The oracle needs ~1 ms per concept per query: check on a small corpus.
        check = agreement_check(corpus.ensure_corpus(CHECK_SIZE, args.seed), queries)
        check += f" (n = {CHECK_SIZE:,})"

    shown = list(argv if argv is not None else sys.argv[1:])
    if "--note" in shown:  # the note is printed on its own
        i = shown.index("--note")
        del shown[i : i + 2]
    shown = [a for a in shown if not a.startswith("--note=")]
    command = "python benches/run_report.py " + " ".join(shown)
    text = render(data, sizes, args.seed, memory, check, command.strip())
    if args.note:
        title, _, rest = text.partition("\n\n")
        text = f"{title}\n\n> **Note:** {args.note}\n\n{rest}"
    args.out.write_text(text + "\n", encoding="utf-8")
    print(text)
    print(f"\nwrote {args.out}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
