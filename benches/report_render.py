"""The rendering half of benches/report.py: REPORT.md and report.png from
the scale report's raw data, RESULTS.md from the suite's, and the machine
line both carry. The prose comes from ``benches/report_notes.md``; this
module lays out figures.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import corpus
import peers

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NOTES = HERE / "report_notes.md"
SUITE_ORDER = ["okfast", "okfast-warm", "okfast-hits", "tantivy", "bm25s", "reference"]
MEMORY_LIMIT_FACTOR = 3.0


# --- the texts -------------------------------------------------------------------


def notes() -> dict[str, str]:
    """The sections of ``report_notes.md`` by name."""
    sections: dict[str, list[str]] = {}
    lines: list[str] | None = None
    for line in NOTES.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            lines = sections.setdefault(line[2:].strip(), [])
        elif lines is not None:
            lines.append(line)
    return {name: "\n".join(body).strip() for name, body in sections.items()}


def note(name: str, **fields: object) -> str:
    return notes()[name].format_map(fields) if fields else notes()[name]


def describe_machine(m: dict[str, str]) -> str:
    return "Machine: " + "; ".join(f"{k}: {v}" for k, v in m.items()) + "."


# --- the scale report ------------------------------------------------------------


def _median(runs: list[dict[str, Any]], key: str) -> float | None:
    vals: list[float] = []
    for r in runs:
        v = r.get(key)
        if isinstance(v, list):
            vals += v
        elif isinstance(v, (int, float)):
            vals.append(v)
    return statistics.median(vals) if vals else None


def _mib(runs: list[dict[str, Any]], key: str) -> float | None:
    kib = _median(runs, key)
    return kib / 1024 if kib else None


def summarise(entry: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out = {}
    for system, runs in entry["systems"].items():
        row: dict[str, Any] = {}
        errors = [
            r.get("error") or r.get("skipped") for r in runs if "error" in r or "skipped" in r
        ]
        if errors and not any("load_s" in r for r in runs):
            row["note"] = str(errors[0])
        row["load_s"] = _median(runs, "load_s")
        row["top10_ms"] = _median(runs, "top10_ms")
        row["full_ms"] = _median(runs, "full_ms")
        row["peak_mib"] = _mib(runs, "peak_kib")
        row["resident_mib"] = _mib(runs, "resident_kib")
        row["baseline_mib"] = _mib(runs, "baseline_kib")
        out[system] = row
    return out


def _fmt(v: float | None, unit: str) -> str:
    """A scale-report figure: seconds, milliseconds or MiB."""
    if v is None:
        return "—"
    if unit == "s":
        return f"{v:.2f} s" if v < 100 else f"{v:.0f} s"
    if unit == "ms":
        return f"{v:.3f} ms" if v < 1 else f"{v:.2f} ms" if v < 100 else f"{v:.0f} ms"
    return f"{v:.0f} MiB"


def _ratio(peer: float | None, ours: float | None) -> str:
    if peer is None or not ours:
        return "—"
    return f"{peer / ours:.1f}×"


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def scale(results: dict[str, Any], data: Path) -> str:
    lines = [
        "# okfast scale report",
        "",
        f"Run {results.get('started', '?')} → {results.get('finished', '?')} with "
        f"`python benches/report.py` (raw data: `{_shown(data)}`).",
        "",
        describe_machine(results.get("machine", {})),
        "",
        note("intro"),
        "",
        "![load time and latency against corpus size](report.png)",
        "",
    ]
    for name, entry in results["corpora"].items():
        s = summarise(entry)
        ok = s.get("okfast", {})
        concepts = next(
            (
                r["concepts"]
                for runs in entry["systems"].values()
                for r in runs
                if r.get("concepts")
            ),
            "?",
        )
        lines += [
            f"## {name}",
            "",
            f"Measured {entry.get('measured', '?')}. "
            f"{entry['root']}: {entry['apparent_kib'] / 1024:.0f} MiB of files "
            f"({entry['allocated_kib'] / 1024:.0f} MiB allocated on disk), {concepts} concepts.",
            "",
            "| system | load / build | ÷ okfast | top-10 median | ÷ okfast | full list | peak RSS "
            "| resident after load | baseline RSS | note |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for system in peers.SYSTEMS:
            if system not in s:
                continue
            r = s[system]
            what = " (in-memory)" if system in peers.ENGINES else ""
            mine = system == "okfast"
            lines.append(
                f"| {system}{what} | {_fmt(r['load_s'], 's')} | "
                f"{'1×' if mine else _ratio(r['load_s'], ok.get('load_s'))} | "
                f"{_fmt(r['top10_ms'], 'ms')} | "
                f"{'1×' if mine else _ratio(r['top10_ms'], ok.get('top10_ms'))} | "
                f"{_fmt(r['full_ms'], 'ms')} | {_fmt(r['peak_mib'], 'MiB')} | "
                f"{_fmt(r['resident_mib'], 'MiB')} | {_fmt(r['baseline_mib'], 'MiB')} | "
                f"{r.get('note', '')[:120]} |"
            )
        if "refresh" in entry:
            rs = entry["refresh"]["refresh_s"]
            lines += [
                "",
                f"okfast `refresh()` after touching {entry['refresh']['touched']} files: "
                f"median {statistics.median(rs):.2f} s ({', '.join(f'{x:.2f}' for x in rs)}).",
            ]
        lines.append("")
    lines += ["## Targets", "", "| target | measured | met? |", "|---|---|---|"]
    for check, target, limit in targets():
        for fields, measured, met in CHECKS[check](results["corpora"], limit):
            label = target.format_map({"limit": f"{limit:g}", **fields})
            verdict = "yes" if met else "no" if met is not None else "—"
            lines.append(f"| {label} | {measured} | {verdict} |")
    lines += ["", note("margins"), ""]
    return "\n".join(lines) + "\n"


# --- the targets ---------------------------------------------------------------
# Each check yields (fields for the target's wording, measured, met) rows; the
# wording and the limits are in report_notes.md.

Rows = Iterator[tuple[dict[str, str], str, bool | None]]


def targets() -> list[tuple[str, str, float]]:
    """(check, wording, limit) rows of the notes' targets table."""
    rows = []
    for line in note("targets").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 3 or cells[0] in ("check", "---"):
            continue
        rows.append((cells[0], cells[1], float(cells[2])))
    return rows


def _at(corpora: dict[str, Any], name: str) -> tuple[dict[str, dict[str, Any]], float] | None:
    """The summary of one corpus and its size on disk in MiB, if measured."""
    if name not in corpora:
        return None
    return summarise(corpora[name]), corpora[name]["apparent_kib"] / 1024


def _okfast_1m(corpora: dict[str, Any], key: str) -> tuple[float | None, float] | None:
    at = _at(corpora, "synth-1000000")
    return None if at is None else (at[0].get("okfast", {}).get(key), at[1])


def _within(v: float | None, limit: float) -> bool:
    return v is not None and v <= limit


def cold_load_1m(corpora: dict[str, Any], limit: float) -> Rows:
    if (m := _okfast_1m(corpora, "load_s")) is not None:
        yield {}, _fmt(m[0], "s"), _within(m[0], limit)


def warm_reopen_1m(corpora: dict[str, Any], limit: float) -> Rows:
    if (at := _at(corpora, "synth-1000000")) is not None:
        warm = at[0].get("okfast-warm", {}).get("load_s")
        yield {}, _fmt(warm, "s"), _within(warm, limit)


def peak_rss_1m(corpora: dict[str, Any], limit: float) -> Rows:
    if (m := _okfast_1m(corpora, "peak_mib")) is not None:
        peak, disk = m
        shown = f"{_fmt(peak, 'MiB')} = {peak / disk:.2f}× {disk:.0f} MiB" if peak else "—"
        yield {}, shown, peak is not None and peak <= limit * disk


def resident_1m(corpora: dict[str, Any], limit: float) -> Rows:
    if (m := _okfast_1m(corpora, "resident_mib")) is not None:
        res, disk = m
        shown = f"{_fmt(res, 'MiB')} = {res / disk:.2f}×" if res else "—"
        yield {}, shown, res is not None and res <= limit * disk


def top10_1m(corpora: dict[str, Any], limit: float) -> Rows:
    if (at := _at(corpora, "synth-1000000")) is not None:
        q = at[0].get("okfast", {}).get("top10_ms")
        tq = at[0].get("tantivy", {}).get("top10_ms")
        met = _within(q, limit) and (tq is None or q is not None and q <= tq)
        yield {}, f"{_fmt(q, 'ms')} (tantivy {_fmt(tq, 'ms')})", met


def databricks_vs_libraries(corpora: dict[str, Any], limit: float) -> Rows:
    if (at := _at(corpora, "databricks")) is None:
        return
    s = at[0]
    # The default load writes the cache as well; cache=False is the like-for-
    # like comparison (the libraries persist nothing). Both are shown.
    for who, mode in (("okfast", "default load"), ("okfast-nocache", "cache=False")):
        ours = s.get(who, {}).get("load_s")
        for lib in peers.OKF_LIBRARIES:
            theirs = s.get(lib, {}).get("load_s")
            shown = (
                f"{_ratio(theirs, ours)} ({_fmt(theirs, 's')} vs {_fmt(ours, 's')})"
                if theirs
                else s.get(lib, {}).get("note", "—")
            )
            met = theirs is not None and ours is not None and theirs / ours >= limit
            yield {"library": lib, "mode": mode}, shown, met


def refresh_100k(corpora: dict[str, Any], limit: float) -> Rows:
    if "refresh" in corpora.get("synth-100000", {}):
        med = statistics.median(corpora["synth-100000"]["refresh"]["refresh_s"])
        yield {}, f"{med:.2f} s", med <= limit


CHECKS: dict[str, Callable[[dict[str, Any], float], Rows]] = {
    f.__name__: f
    for f in (
        cold_load_1m,
        warm_reopen_1m,
        peak_rss_1m,
        resident_1m,
        top10_1m,
        databricks_vs_libraries,
        refresh_100k,
    )
}


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    synth = sorted(
        (n, name) for name in results["corpora"] if (n := corpus.synth_size(name)) is not None
    )
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))
    for system in peers.SYSTEMS:
        xs, loads, lat = [], [], []
        for n, name in synth:
            r = summarise(results["corpora"][name]).get(system)
            if r and r["load_s"]:
                xs.append(n)
                loads.append(r["load_s"])
                lat.append(r["top10_ms"])
        if xs:
            a.plot(xs, loads, marker="o", label=system)
            pts = [(x, y) for x, y in zip(xs, lat, strict=True) if y]
            if pts:
                b.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=system)
    for ax, title, unit in (
        (a, "load / index build", "seconds"),
        (b, "query, top 10 (median)", "ms"),
    ):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks([n for n, _ in synth])
        ax.set_xlabel("synthetic concepts")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    a.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


# --- the suite report ------------------------------------------------------------


def fmt_time(s: float) -> str:
    """A suite figure (pytest-benchmark's seconds): s, ms or µs."""
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
        for peer in sorted(rows, key=lambda p: (SUITE_ORDER + [p]).index(p)):
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


def memory_table(
    memory: dict[int, dict[str, Any] | None], on_disk: dict[int, tuple[int, int]]
) -> list[str]:
    lines = [
        note("suite-memory", factor=f"{MEMORY_LIMIT_FACTOR:g}"),
        "",
        "| concepts | corpus (apparent) | load time | baseline | peak after load "
        "| peak after query | peak − baseline | peak ÷ corpus | (peak − baseline) ÷ corpus "
        "| ≤ 3×? |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for n, mem in memory.items():
        if not mem or n not in on_disk:
            continue
        corpus_b = on_disk[n][0]
        base = mem["imported_kib"] * 1024
        after_load, after_query = mem["peak_kib"] * 1024, mem["peak_end_kib"] * 1024
        peak = max(after_load, after_query)
        if peak <= MEMORY_LIMIT_FACTOR * corpus_b:
            verdict = "yes"
        elif peak - base <= MEMORY_LIMIT_FACTOR * corpus_b:
            verdict = "yes, net of baseline"
        else:
            verdict = "**no**"
        lines.append(
            f"| {n:,} | {fmt_bytes(corpus_b)} | {fmt_time(mem['load_s'][0])} | "
            f"{fmt_bytes(base)} | {fmt_bytes(after_load)} | {fmt_bytes(after_query)} | "
            f"{fmt_bytes(peak - base)} | {peak / corpus_b:.2f}× | "
            f"{(peak - base) / corpus_b:.2f}× | {verdict} |"
        )
    return lines


def suite(
    data: dict[str, Any] | None,
    on_disk: dict[int, tuple[int, int]],
    seed: int,
    memory: dict[int, dict[str, Any] | None],
    check: str,
    command: str,
    machine: dict[str, str],
    head: str,
) -> str:
    """RESULTS.md: ``on_disk`` maps each corpus size to its apparent and
    allocated bytes, ``head`` is the repository's commit (or empty)."""
    lines = [
        "# okfast benchmark results",
        "",
        f"Generated {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M UTC} by `{command}`"
        + (f" (repository at `{head}`)" if head else "")
        + ".",
        "",
        describe_machine(machine),
        "",
        "## Corpus",
        "",
        note("suite-corpus", seed=seed, generator=corpus.GENERATOR_VERSION),
        "",
        "| concepts | files on disk (apparent) | allocated on disk |",
        "|---:|---:|---:|",
    ]
    for n, (apparent, allocated) in on_disk.items():
        lines.append(f"| {n:,} | {fmt_bytes(apparent)} | {fmt_bytes(allocated)} |")
    lines += [
        "",
        "## Timings (medians; ratio = peer median ÷ okfast median, > 1 means okfast is faster)",
        "",
        note("suite-timings"),
        "",
    ]
    lines += group_tables(data) if data else ["_No benchmark data._", ""]
    lines += ["## okfast memory while loading", ""]
    if any(memory.values()):
        lines += memory_table(memory, on_disk)
    else:
        lines.append("_Not measured (okfast not importable, or --no-memory)._")
    lines += ["", "## okfast vs reference", "", f"Full result lists: {check}.", ""]
    return "\n".join(lines)
