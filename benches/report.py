"""The benchmark reporter: measures okfast beside its peers, describes the
machine and writes the reports. Two reports, one command:

    python benches/report.py                  # the scale report: REPORT.md, report.png
    python benches/report.py --corpora synth-10000,databricks --quick
    python benches/report.py --render         # re-render from the raw data
    python benches/report.py suite            # the pytest-benchmark suite: RESULTS.md
    python benches/report.py suite --quick    # 10k concepts only, fewer rounds

The scale report runs every system on the synthetic corpus at 10k, 100k and
1M concepts and on two real corpora, each measurement in a fresh child
process (``--child``), so each system's peak RSS is its own and nothing is
shared through caches. The systems are the peers of ``benches/peers``:

- ``okfast``: the default cold load, through an empty cache directory (the
  cache file is written as part of the load); ``okfast-nocache``: the same
  with ``cache=False``; ``okfast-warm``: a reopen of the unchanged bundle
  from its persistent cache (primed, untimed, before its rounds);
- ``reference``: the pure-Python oracle (``tests/reference.py``);
- ``tantivy``, ``bm25s``, ``sqlite-fts5``: index built from the same
  documents in memory (extracted by okfast, untimed);
- ``okflib``, ``okf-retrieve``, ``brainpick``: the OKF libraries, each in
  its own virtual environment.

Load figures are medians over rounds, each okfast round a child of its own
after an ``os.sync`` (so none pays for an earlier one's write-back); query
figures are medians over distinct queries. Every file of a corpus is read
once, untimed, before its first measurement, so every round of every system
finds the file pages in the OS cache ("cold" means no okfast cache, not a
cold disk).

The suite report runs ``pytest benches --benchmark-only`` and renders its
groups as tables with ratios against okfast, beside okfast's peak RSS while
loading each corpus and a check that okfast and the reference return the
same full result lists.

The prose both reports carry lives in ``benches/report_notes.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import re
import shlex
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
import peers  # noqa: E402
import report_render as render  # noqa: E402

SHARED = Path(os.environ.get("OKFAST_CORPORA", REPO.parent / "shared" / "corpora"))
SCALE_DATA = corpus.CORPUS_DIR / "report.json"
SUITE_DATA = corpus.CORPUS_DIR / "bench-results.json"
SEED = 42
TOP_K = 10
WORD = re.compile(r"[^\W\d_]{4,}")

REAL = {
    "bgh-rechtsprechung": SHARED / "saschb2b" / "bgh-rechtsprechung",
    "databricks": SHARED / "databricks",
}
DEFAULT_CORPORA = ("synth-10000", "synth-100000", "synth-1000000", *REAL)
ONE_MILLION = 1_000_000
# KiB of files: below SMALL the OKF libraries run ten queries, not five;
# below FEW every okfast row takes nine rounds and each library three.
SMALL_KIB, FEW_KIB = 20_000, 50_000
CHECK_SIZE = 2000


# --- the machine -----------------------------------------------------------------


def machine() -> dict[str, str]:
    import sqlite3
    from importlib import metadata

    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    mem = ""
    try:
        import psutil

        mem = render.fmt_bytes(psutil.virtual_memory().total)
    except ImportError:
        pass
    versions = []
    for pkg in ("okfast", "tantivy", "bm25s", "numpy", "pytest-benchmark"):
        try:
            versions.append(f"{pkg} {metadata.version(pkg)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{pkg} (not installed)")
    versions.append(f"sqlite {sqlite3.sqlite_version}")
    return {
        "CPU": model,
        "cores": f"{os.cpu_count()} logical, {usable} usable",
        "memory": mem,
        "OS": f"{platform.system()} {platform.release()}",
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": ", ".join(versions),
    }


# --- one system in a child process -----------------------------------------------


def _status_kib(field: str) -> int:
    # VmHWM, not ru_maxrss, for the peak: Linux carries ru_maxrss across exec,
    # so a child would report its parent's high-water mark.
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _timed(search: Callable[[str], Any], queries: list[str]) -> tuple[list[float], Any]:
    """Milliseconds per query, and the first query's result."""
    times, first = [], None
    for q in queries:
        t = time.perf_counter()
        result = search(q)
        times.append((time.perf_counter() - t) * 1000)
        if first is None:
            first = result
    return times, first


def okfast_documents(root: Path) -> list[corpus.Document]:
    """The three scored fields of every concept, as okfast reads them."""
    import okfast

    b = okfast.Bundle.load(root, cache=False)
    docs = []
    for cid in b.concept_ids:
        c = b.concept(cid)
        tags_desc = " ".join(c.tags) + " " + (c.description or "")
        docs.append(corpus.Document(cid, c.title or "", tags_desc, c.body))
    return docs


def child(system: str, root: Path, queries: list[str], rounds: int, full: bool) -> dict[str, Any]:
    """Measure ``system`` in this process: ``rounds`` timed loads, then each
    query timed once (top 10, and the full list when ``full``)."""
    cls = peers.SYSTEMS[system]
    out: dict[str, Any] = {"system": system}
    peer = None
    try:
        docs = [] if cls.reads_files else okfast_documents(root)
        gc.collect()
        out["baseline_kib"] = _status_kib("VmRSS")
        peer = cls()
        out["imported_kib"] = _status_kib("VmRSS")
        loads = []
        for _ in range(rounds):
            peer.close()
            gc.collect()
            peer.before_load(root)
            t = time.perf_counter()
            peer.load(root, docs)
            loads.append(time.perf_counter() - t)
        out["load_s"] = loads
        gc.collect()
        out["resident_kib"] = _status_kib("VmRSS")
        out["peak_kib"] = _status_kib("VmHWM")
        out["concepts"] = peer.count()
        out.update(peer.info())
        if peer.warm_up:
            peer.search(queries[-1], TOP_K)
        if peer.has_top_k:
            out["top10_ms"], first = _timed(lambda q: peer.search(q, TOP_K), queries)
        if full or not peer.has_top_k:
            out["full_ms"], first_full = _timed(lambda q: peer.search(q, None), queries)
            if not peer.has_top_k:
                out["top10_ms"], first = out["full_ms"], first_full
        out["peak_end_kib"] = _status_kib("VmHWM")
        out["hits_first_query"] = peer.ids(first)[:TOP_K]
    except BaseException as exc:
        # Reported, never raised: a library that fails (or exits) on a corpus
        # is a result of the run.
        out["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        out["traceback"] = traceback.format_exc()[-4000:]
        out.setdefault("peak_kib", _status_kib("VmHWM"))
        out.setdefault("peak_end_kib", out["peak_kib"])
    if peer is not None:
        peer.close()
    return out


def run_child(
    system: str,
    root: Path,
    queries: list[str],
    timeout: float,
    rounds: int = 1,
    full: bool = False,
) -> dict[str, Any]:
    """``child`` in a fresh process of the interpreter ``system`` needs."""
    try:
        proc = peers.SYSTEMS[system].process()
    except (OSError, subprocess.CalledProcessError, RuntimeError) as exc:
        return {"system": system, "error": f"install failed: {exc}"}
    spec = {
        "system": system,
        "root": str(root.resolve()),
        "queries": queries,
        "rounds": rounds,
        "full": full,
    }
    cmd = [*proc.argv, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    try:
        p = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, cwd=proc.cwd, env=proc.env
        )
    except subprocess.TimeoutExpired:
        return {"system": system, "error": f"timeout after {timeout:.0f} s"}
    try:
        result: dict[str, Any] = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {"system": system, "error": p.stderr.strip()[-400:] or f"exit {p.returncode}"}
    if "error" in result and p.stderr:
        result["stderr"] = p.stderr.strip()[-2000:]
    return result


# --- the scale report: measuring -------------------------------------------------


def corpus_path(name: str) -> Path:
    n = corpus.synth_size(name)
    if n is not None:
        return corpus.ensure_corpus(n, SEED)
    return REAL[name]


def warm_page_cache(root: Path) -> None:
    """Read every file under ``root`` once, so no system's first round pays
    for the disk and the others not."""
    subprocess.run(
        ["find", str(root), "-type", "f", "-exec", "cat", "{}", "+"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )


def queries_for(name: str, root: Path, n: int) -> list[str]:
    """Seeded queries: from the synthetic vocabulary, or 1–3 words from the
    titles of a real corpus (words of 4+ letters, so every peer's tokenizer
    sees the same words okfast does)."""
    if corpus.synth_size(name) is not None:
        return corpus.sample_queries(n, SEED)
    import okfast

    b = okfast.Bundle.load(root, cache=False)
    ids = b.concept_ids
    rng = random.Random(SEED)
    words: list[str] = []
    for i in rng.sample(range(len(b)), min(len(b), 4000)):
        words += WORD.findall(b.concept(ids[i]).title or "")
    words = sorted({w.lower() for w in words})
    return [" ".join(rng.sample(words, rng.randint(1, 3))) for _ in range(n)]


def refresh_10_of(root: Path) -> dict[str, Any]:
    """okfast: refresh after touching 10 files of the bundle (content unchanged)."""
    import okfast

    b = okfast.Bundle.load(root, cache=False)
    files = sorted(root.glob("*/*.md"))[:: max(1, len(b) // 10)][:10]
    times = []
    for _ in range(3):
        for f in files:
            os.utime(f)
        t = time.perf_counter()
        fresh = b.refresh()
        times.append(time.perf_counter() - t)
        assert fresh is not None
        b = fresh
    return {"refresh_s": times, "touched": len(files)}


def _go(
    systems: dict[str, list[dict[str, Any]]],
    skip: set[str],
    system: str,
    times: int,
    root: Path,
    queries: list[str],
    timeout: float,
    rounds: int = 1,
    full: bool = False,
) -> None:
    """Run ``system`` in ``times`` fresh children; stop at the first error."""
    if system in skip:
        return
    runs = []
    for _ in range(times):
        print(f"[report]   {system} ...", file=sys.stderr, flush=True)
        os.sync()  # no round pays for an earlier round's (or system's) write-back
        r = run_child(system, root, queries, timeout, rounds, full)
        runs.append(r)
        if "error" in r:
            print(f"[report]   {system}: {r['error'][-200:]}", file=sys.stderr)
            break
    systems[system] = runs


def _skipped(names: tuple[str, ...], why: str) -> dict[str, list[dict[str, Any]]]:
    return {name: [{"system": name, "skipped": why}] for name in names}


def measure(names: list[str], quick: bool, skip: set[str], data: Path) -> dict[str, Any]:
    results: dict[str, Any] = {"corpora": {}}
    if data.exists():  # corpora measured in separate runs render together
        results = json.loads(data.read_text())
    results["started"] = time.strftime("%Y-%m-%d %H:%M:%S")
    for name in names:
        root = corpus_path(name)
        if not root.is_dir():
            print(f"[report] {name}: {root} missing, skipped", file=sys.stderr)
            continue
        n_q = 10 if quick else 40
        queries = queries_for(name, root, n_q)
        apparent, allocated = (n // 1024 for n in corpus.disk_usage(root))
        entry: dict[str, Any] = {
            "root": str(root),
            "apparent_kib": apparent,
            "allocated_kib": allocated,
        }
        big = (corpus.synth_size(name) or 0) >= ONE_MILLION
        # Rounds under a second vary widely on a shared 2-core VM (a cold load
        # also writes its cache file, and lands on fresh memory or not), so
        # small corpora take nine; a big corpus's single round is long enough.
        rounds = 1 if big or quick else 9 if apparent < FEW_KIB else 5
        print(f"[report] {name}: {apparent / 1024:.0f} MiB, {n_q} queries", file=sys.stderr)
        systems: dict[str, list[dict[str, Any]]] = {}
        warm_page_cache(root)
        entry["measured"] = time.strftime("%Y-%m-%d %H:%M:%S")

        _go(systems, skip, "okfast", rounds, root, queries, 1800, full=True)
        _go(systems, skip, "okfast-nocache", rounds, root, queries, 1800)
        if "okfast-warm" not in skip:
            peers.make("okfast-warm").prime(root)
            os.sync()  # the cache reaches the disk: no write-back in the timed rounds
        # A warm reopen takes seconds even at 1M: always three rounds.
        _go(systems, skip, "okfast-warm", 1 if quick else 3, root, queries, 1800)
        for engine in peers.ENGINES:
            if big and engine != "tantivy":
                # Their Python-side tokenising of the 1M corpus would take
                # longer than the rest of the report together.
                systems |= _skipped((engine,), "not run at 1M (time budget)")
                continue
            _go(systems, skip, engine, 1 if big or quick else 2, root, queries, 3600)
        if big:
            systems |= _skipped(("reference",), "hours at 1M concepts")
            systems |= _skipped(peers.OKF_LIBRARIES, "projected over an hour at 1M concepts")
        else:
            ref_q = queries[:1] if apparent > FEW_KIB else queries[:3]
            _go(systems, skip, "reference", 1, root, ref_q, 3600, full=True)
            # The ratio targets compare medians, and single rounds of these
            # libraries vary widely: three where a round is quick.
            lib_q = queries[: 10 if apparent < SMALL_KIB else 5]
            lib_rounds = 3 if apparent < FEW_KIB and not quick else 1
            for lib in peers.OKF_LIBRARIES:
                _go(systems, skip, lib, 1, root, lib_q, 1200, rounds=lib_rounds)
        if corpus.synth_size(name) == 100_000 and "refresh" not in skip:
            entry["refresh"] = refresh_10_of(root)
        entry["systems"] = systems
        results["corpora"][name] = entry
        data.write_text(json.dumps(results, indent=1))
    results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    results["machine"] = machine()
    data.write_text(json.dumps(results, indent=1))
    return results


# --- the suite report ------------------------------------------------------------


def run_suite(sizes: list[int], seed: int, data: Path, quick: bool, extra: list[str]) -> int:
    env = dict(os.environ)
    env["OKFAST_BENCH_SIZES"] = ",".join(map(str, sizes))
    env["OKFAST_BENCH_SEED"] = str(seed)
    if quick:
        env.setdefault("OKFAST_BENCH_QUERIES", "30")
        env.setdefault("OKFAST_BENCH_REF_QUERIES", "1")
        env.setdefault("OKFAST_BENCH_LOAD_ROUNDS", "3")
    data.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "benches",
        "-p",
        "no:cacheprovider",
        "--benchmark-only",
        f"--benchmark-json={data}",
        "--benchmark-columns=median,iqr,min,rounds",
        "-q",
        *extra,
    ]
    print("+", " ".join(cmd), file=sys.stderr)
    return subprocess.call(cmd, cwd=REPO, env=env)


def measure_memory(root: Path, query: str) -> dict[str, Any] | None:
    """okfast's load in a fresh process (``cache=False``), or None if it failed."""
    r = run_child("okfast-nocache", root, [query], timeout=3600, full=True)
    if "error" in r:
        print(f"[memory] okfast child failed: {r['error'][-300:]}", file=sys.stderr)
        return None
    return r


def agreement_check(root: Path, queries: list[str]) -> str:
    """Compare okfast's full results with the reference oracle's."""
    from peers.okfast import OkfastNoCache, Reference

    try:
        ok, ref = OkfastNoCache(), Reference()
    except ImportError as e:
        return f"skipped ({e})"
    ok.load(root, ())
    ref.load(root, ())
    bad = [q for q in queries if ok.scored_ids(q, None) != ref.scored_ids(q, None)]
    if bad:
        return f"**MISMATCH** on {len(bad)}/{len(queries)} queries, e.g. `{bad[0]}`"
    return f"identical (ids, scores, order) on {len(queries)} queries"


def _git_head() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


# --- the command line ------------------------------------------------------------


def scale_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="python benches/report.py",
        description="The scale report: REPORT.md and report.png. "
        "`python benches/report.py suite --help` for the suite report.",
    )
    ap.add_argument("--child", metavar="JSON", help=argparse.SUPPRESS)
    ap.add_argument(
        "--corpora",
        default=",".join(DEFAULT_CORPORA),
        help="comma separated: synth-N (any N) or " + ", ".join(REAL),
    )
    ap.add_argument("--quick", action="store_true", help="fewer queries and rounds")
    ap.add_argument("--skip", default="", help="systems to leave out, comma separated")
    ap.add_argument("--render", action="store_true", help="only re-render the raw data")
    ap.add_argument("--data", type=Path, default=SCALE_DATA, help="raw data, read and written")
    ap.add_argument("--out", type=Path, default=HERE, help="where REPORT.md and report.png go")
    args = ap.parse_args(argv)
    if args.child:
        spec = json.loads(args.child)
        stdout, sys.stdout = sys.stdout, sys.stderr  # keep library chatter off the result
        out = child(
            spec["system"], Path(spec["root"]), spec["queries"], spec["rounds"], spec["full"]
        )
        stdout.write(json.dumps(out) + "\n")
        return 0
    if args.render:
        results = json.loads(args.data.read_text())
    else:
        names = [n for n in args.corpora.split(",") if n]
        results = measure(names, args.quick, set(filter(None, args.skip.split(","))), args.data)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "REPORT.md").write_text(render.scale(results, args.data), encoding="utf-8")
    render.plot(results, args.out / "report.png")
    print(f"wrote {args.out / 'REPORT.md'} and {args.out / 'report.png'}", file=sys.stderr)
    return 0


def suite_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="python benches/report.py suite",
        description="Run the pytest-benchmark suite and write RESULTS.md.",
    )
    ap.add_argument("--sizes", default=os.environ.get("OKFAST_BENCH_SIZES", "10000,100000"))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("OKFAST_BENCH_SEED", "42")))
    ap.add_argument("--quick", action="store_true", help="10k only, fewer rounds")
    ap.add_argument("--render", action="store_true", help="render --data; do not run the suite")
    ap.add_argument("--data", type=Path, default=SUITE_DATA, help="pytest-benchmark's JSON")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--out", type=Path, default=HERE, help="where RESULTS.md goes")
    ap.add_argument("--note", default="", help="a caveat printed under the title")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = ap.parse_args(argv)

    sizes = [10_000] if args.quick else [int(s) for s in args.sizes.replace(",", " ").split()]
    for n in sizes:
        corpus.ensure_corpus(n, args.seed)
    rc = 0
    if not args.render:
        rc = run_suite(sizes, args.seed, args.data, args.quick, args.pytest_args)
    data = json.loads(args.data.read_text()) if args.data.exists() else None

    queries = corpus.sample_queries(8, args.seed)
    memory: dict[int, dict[str, Any] | None] = {}
    if not args.no_memory:
        for n in sizes:
            memory[n] = measure_memory(corpus.corpus_dir(n, args.seed), queries[0])
    check = "not run"
    if not args.no_check:
        # The oracle scans every concept in pure Python per query: a small corpus.
        check = agreement_check(corpus.ensure_corpus(CHECK_SIZE, args.seed), queries)
        check += f" (n = {CHECK_SIZE:,})"

    shown = list(argv)
    if "--note" in shown:  # the note is printed on its own
        i = shown.index("--note")
        del shown[i : i + 2]
    shown = [a for a in shown if not a.startswith("--note=")]
    command = shlex.join(["python", "benches/report.py", "suite", *shown])
    on_disk = {
        n: corpus.disk_usage(corpus.corpus_dir(n, args.seed))
        for n in sizes
        if corpus.corpus_dir(n, args.seed).is_dir()
    }
    text = render.suite(data, on_disk, args.seed, memory, check, command, machine(), _git_head())
    if args.note:
        title, _, rest = text.partition("\n\n")
        text = f"{title}\n\n> **Note:** {args.note}\n\n{rest}"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "RESULTS.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    print(f"\nwrote {args.out / 'RESULTS.md'}", file=sys.stderr)
    return rc


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["suite"]:
        return suite_main(args[1:])
    return scale_main(args)


if __name__ == "__main__":
    sys.exit(main())
