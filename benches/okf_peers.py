"""Third-party OKF libraries from PyPI, each run through its own public API in its
own virtual environment, so that their dependencies never touch the project's.

``ensure_venv(name)`` creates ``benches/.peers/<name>/venv`` and installs the
pinned release; ``run(name, bundle, queries)`` starts a fresh interpreter of that
venv (``python -I -c DRIVER``), which imports the library (import time is not
counted), times ``load_rounds`` loads of the bundle directory (each round a new
object, the previous one freed first), runs every query once for the top ``k``,
and prints one JSON object::

    {"library", "version", "api", "load_s": [per round], "load_parts_s": {step: [per round]},
     "query_ms": [per query], "hits_first_query": [ids], "n_docs", "peak_rss_kib", ...}

``peak_rss_kib`` is ``VmHWM`` (else ``ru_maxrss``) of the child at the end (interpreter + library +
all load rounds + queries). A library that fails on a bundle (exception, crash,
timeout) gives ``{"library": name, "error": ...}``; ``run`` never raises for it.

Everything created at runtime lives under ``benches/.peers/``: one venv per
library (``<name>/venv``, plus ``<name>/installed.json`` recording the pinned
requirement so later calls skip pip) and brainpick's bundle mirrors (below).

All three are pure Python and score whole words with BM25 (corpus statistics,
top-k), unlike okfast's exact weighted substring count (SPEC §3), so, as for
tantivy and bm25s in ``peers.py``, this compares costs, not relevance. All three
parse frontmatter with ``yaml.safe_load`` (PyYAML's pure-Python loader, even where
libyaml is available), which dominates their load time on bundles with large
frontmatter (databricks).

okflib 0.5.0 (Gwenlake, Apache-2.0; dependency: PyYAML)
    load  = ``okflib.Bundle.load(root)`` (``rglob("*.md")``, ``yaml.safe_load`` per
            file, ``index.md``/``log.md`` skipped) + ``okflib.search.Index(bundle)``
            (the BM25 index the README documents for ``okflib query``; built per
            call there, once per load here).
    query = ``Index.query(q, limit=k)`` -> ``Hit.concept_id`` (id = path without
            ``.md``).
    Notes: fields are weighted by repeating their tokens (id x2, title x3,
    description x2, tags x3, type x1, body x1); tokens are ``\\w+`` of length > 1,
    NFKD accent-folded. A query scans every document's term dict once per query
    term (no postings lists). ``Bundle.load(strict=False)`` silently drops files
    whose frontmatter does not parse or has no ``type`` (compare ``n_docs``), but
    any other error aborts the whole load: e.g. a ``stale_after`` holding a
    date-time string (``"2025-02-01T00:00:00Z"``, as in the synthetic corpus)
    raises ``ValueError`` from ``date.fromisoformat``, so okflib cannot load
    ``synth-*`` bundles (reported as an error).
    ``Bundle.search(text)`` also exists but is an unranked substring filter (the
    whole query as one needle, no top-k), so it is not used.

okf-retrieve 0.1.1 (imports as ``okf``; dependency: PyYAML)
    load  = ``okf.Bundle.load(root)`` + ``okf.StructuredRetriever(bundle)`` (the
            README's "Keyword (BM25) retrieval ... no embeddings needed").
    query = ``StructuredRetriever.search(q, limit=k)`` -> ``Hit.doc.path`` (path
            with ``.md``).
    Notes: one field (title, description, tags, body concatenated, no weights);
    ASCII-only tokens ``[A-Za-z0-9_]+``, so accented letters split words. Every
    query scores every document (a Python loop over all docs, then a full sort).
    ``index.md``/``log.md`` are loaded and ranked like concepts; a file with bad
    frontmatter is kept with its raw text as body (counted in
    ``load_errors``). Its ``SemanticRetriever`` (Voyage API or
    sentence-transformers) is the non-lexical option and is not used.

brainpick 0.8.7 (Benquemax, MIT; dependencies: PyYAML, mcp, starlette, uvicorn,
watchfiles, httpx)
    brainpick is a compile-then-serve tool: ``compile`` writes artifacts to
    ``<bundle>/.brainpick/`` and rewrites a managed section of ``<bundle>/index.md``,
    so it cannot run on a read-only bundle, and it must not modify ours. It runs on
    a mirror instead: ``benches/.peers/brainpick/mirror/<name>-<hash>/``, real
    directories whose files are symlinks to the bundle (brainpick only replaces
    files atomically, never writes through them). Before each round (untimed) the
    mirror is re-synced: ``.brainpick/`` deleted, generated files put back as
    symlinks, so every round is a cold compile. ``mirror/`` is an empty
    ``git init`` repository so that brainpick's git lookups (timeline, AGENTS.md
    report) stop there instead of reaching the okfast repository; the bundle is
    thus compiled as a non-git bundle.
    Configuration through its documented ``BRAINPICK_*`` variables: T2 vectors,
    T3 entity graph and similarity gaps off, update check (a PyPI request) off.
    load  = ``brainpick.compile.pipeline.run_compile(root, config=config)`` (what
            ``brainpick compile`` runs; T1 only: scan, frontmatter, link graph,
            index.md, artifacts as JSON) + ``ServeState(root, config)`` +
            ``.reload_artifacts()`` (what the query commands do to hold the
            compiled brain), with ``root, config =
            brainpick.config.resolve_bundle(mirror)``.
    query = ``brainpick.mcp_server.search_payload(state, q, mode="keyword",
            limit=k, budget_tokens=10**9)`` (the ``brain_search`` MCP tool and
            ``brainpick search --mode keyword``) -> ``hit["path"]``. A huge token
            budget so that the top k are not trimmed (the default is 1200 tokens);
            ``limit`` is clamped to 1..50.
    Notes: a cold compile of a bundle whose ``index.md`` lacks brainpick's
    managed section writes that section and then scans (reads + parses) the
    whole bundle a second time, so its load parses every file twice; a
    recompile of an unchanged, already compiled bundle would parse once and
    write nothing (not measured here). The BM25 of
    ``brainpick.query.keyword.search`` re-tokenizes and re-counts every document
    on every query (no index is kept between queries), so a query costs about one
    pass over the corpus text. Title x3, tags x2, description x2, body x1 by
    repetition; ``[^\\W_]+`` tokens plus a 4-letter prefix "stem" for tokens of
    5+ letters. Reserved files (index.md, log.md,
    skilltree.md) are not ranked. ``auto`` mode would add title matches and RRF
    with vectors; ``keyword`` is the purely lexical mode.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCHES = Path(__file__).resolve().parent
PEERS_DIR = BENCHES / ".peers"

#: name -> (distribution, pinned version)
LIBRARIES: dict[str, tuple[str, str]] = {
    "okflib": ("okflib", "0.5.0"),
    "okf-retrieve": ("okf-retrieve", "0.1.1"),
    "brainpick": ("brainpick", "0.8.7"),
}

DEFAULT_TIMEOUT_S = 900.0

# The per-library driver, run as ``<venv>/bin/python -I -c DRIVER '<json args>'``.
# Standard library + the library under test only. Prints exactly one JSON object
# on stdout (anything the library prints goes to stderr).
DRIVER = r'''
import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import time
import traceback
from importlib.metadata import version
from pathlib import Path

ARGS = json.loads(sys.argv[1])
LIB = ARGS["library"]
BUNDLE = Path(ARGS["bundle"])
QUERIES = ARGS["queries"]
K = int(ARGS["k"])
ROUNDS = max(1, int(ARGS["load_rounds"]))

_stdout = sys.stdout
sys.stdout = sys.stderr  # keep library chatter out of the JSON channel


class _TwoStep:
    """A library whose load is ``Bundle.load(root)`` then one index-building
    constructor over the bundle; both steps are timed apart."""

    step = ""  # the constructor's name, for the timing breakdown

    def before_round(self):
        pass

    def load(self, parts):
        t0 = time.perf_counter()
        bundle = self.Bundle.load(BUNDLE)
        t1 = time.perf_counter()
        built = self.Build(bundle)
        t2 = time.perf_counter()
        parts.setdefault("Bundle.load", []).append(t1 - t0)
        parts.setdefault(self.step, []).append(t2 - t1)
        return built


class Okflib(_TwoStep):
    dist = "okflib"
    api = (
        "load: b = okflib.Bundle.load(root); idx = okflib.search.Index(b) | "
        "query: idx.query(q, limit=k) -> [hit.concept_id]"
    )
    step = "Index"

    def __init__(self):
        from okflib import Bundle
        from okflib.search import Index

        self.Bundle, self.Build = Bundle, Index

    def query(self, index, q):
        return index.query(q, limit=K)

    def ids(self, hits):
        return [h.concept_id for h in hits]

    def info(self, index):
        return {"n_docs": len(index._bundle)}


class OkfRetrieve(_TwoStep):
    dist = "okf-retrieve"
    api = (
        "load: b = okf.Bundle.load(root); r = okf.StructuredRetriever(b) | "
        "query: r.search(q, limit=k) -> [hit.doc.path]"
    )
    step = "StructuredRetriever"

    def __init__(self):
        from okf import Bundle, StructuredRetriever

        self.Bundle, self.Build = Bundle, StructuredRetriever

    def query(self, retriever, q):
        return retriever.search(q, limit=K)

    def ids(self, hits):
        return [h.doc.path for h in hits]

    def info(self, retriever):
        return {
            "n_docs": retriever.n_docs,
            "load_errors": len(retriever.bundle.load_errors),
        }


class Brainpick:
    dist = "brainpick"
    api = (
        "load: root, config = brainpick.config.resolve_bundle(mirror); "
        "brainpick.compile.pipeline.run_compile(root, config=config); "
        "state = brainpick.serve.state.ServeState(root, config); state.reload_artifacts() | "
        "query: brainpick.mcp_server.search_payload(state, q, mode='keyword', limit=k, "
        "budget_tokens=10**9) -> [hit['path']] | "
        "env: BRAINPICK_MODULES_VECTORS=off BRAINPICK_MODULES_GRAPH=off "
        "BRAINPICK_MODULES_SIMILARITY_GAPS=off BRAINPICK_UPDATE_CHECK=false | "
        "on a symlink mirror of the bundle, reset (untimed) before each round"
    )

    def __init__(self):
        for key, value in {
            "BRAINPICK_MODULES_VECTORS": "off",
            "BRAINPICK_MODULES_GRAPH": "off",
            "BRAINPICK_MODULES_SIMILARITY_GAPS": "off",
            "BRAINPICK_UPDATE_CHECK": "false",
        }.items():
            os.environ[key] = value
        from brainpick.compile.pipeline import run_compile
        from brainpick.config import resolve_bundle
        from brainpick.mcp_server import search_payload
        from brainpick.serve.state import ServeState

        self.run_compile, self.resolve_bundle = run_compile, resolve_bundle
        self.search_payload, self.ServeState = search_payload, ServeState
        self.mirror = Path(ARGS["mirror"])
        self.warnings = []
        guard = self.mirror.parent
        guard.mkdir(parents=True, exist_ok=True)
        if not (guard / ".git").exists():
            # brainpick looks for the nearest .git above the bundle (timeline,
            # AGENTS.md report): stop it here, never at the okfast repository.
            subprocess.run(["git", "init", "-q", str(guard)], check=False)

    def before_round(self):
        sync_mirror(BUNDLE, self.mirror)

    def load(self, parts):
        t0 = time.perf_counter()
        root, config = self.resolve_bundle(self.mirror)
        result = self.run_compile(root, config=config)
        t1 = time.perf_counter()
        state = self.ServeState(root, config)
        state.reload_artifacts()
        t2 = time.perf_counter()
        parts.setdefault("run_compile", []).append(t1 - t0)
        parts.setdefault("ServeState.reload_artifacts", []).append(t2 - t1)
        self.warnings = list(result.warnings)
        return state

    def query(self, state, q):
        return self.search_payload(state, q, mode="keyword", limit=K, budget_tokens=10**9)

    def ids(self, payload):
        return [h["path"] for h in payload["hits"]]

    def info(self, state):
        return {
            "n_docs": sum(1 for r in state.records if not r["reserved"]),
            "tiers": state.manifest.get("tiers"),
            "compile_warnings": self.warnings,
        }


SKIP_DIRS = {".brainpick", ".git"}


def sync_mirror(src, dst):
    """Make dst a tree of real directories with one symlink per file of src
    (minus .brainpick/ and .git/), removing anything else: brainpick's artifacts
    and the files it generated. Never writes into src."""
    shutil.rmtree(dst / ".brainpick", ignore_errors=True)
    want_dirs, want_files = {"."}, {}
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        rel = os.path.relpath(dirpath, src)
        for d in dirnames:
            want_dirs.add(os.path.normpath(os.path.join(rel, d)))
        for f in filenames:
            want_files[os.path.normpath(os.path.join(rel, f))] = os.path.join(dirpath, f)
    dst.mkdir(parents=True, exist_ok=True)
    for dirpath, dirnames, filenames in os.walk(dst, topdown=True):
        rel = os.path.relpath(dirpath, dst)
        keep = []
        for d in dirnames:
            path = os.path.join(dirpath, d)
            if os.path.normpath(os.path.join(rel, d)) in want_dirs and not os.path.islink(path):
                keep.append(d)
            elif os.path.islink(path):
                os.unlink(path)
            else:
                shutil.rmtree(path)
        dirnames[:] = keep
        for f in filenames:
            path = os.path.join(dirpath, f)
            target = want_files.get(os.path.normpath(os.path.join(rel, f)))
            if target is None or not os.path.islink(path) or os.readlink(path) != target:
                os.unlink(path)
    for d in sorted(want_dirs):
        os.makedirs(dst / d, exist_ok=True)
    for rel, target in want_files.items():
        link = dst / rel
        if not os.path.lexists(link):
            os.symlink(target, link)


ADAPTERS = {"okflib": Okflib, "okf-retrieve": OkfRetrieve, "brainpick": Brainpick}

out = {"library": LIB}
try:
    adapter = ADAPTERS[LIB]()
    out["version"] = version(adapter.dist)
    out["api"] = adapter.api
    load_s, parts, obj = [], {}, None
    for _ in range(ROUNDS):
        obj = None
        gc.collect()
        adapter.before_round()
        t0 = time.perf_counter()
        obj = adapter.load(parts)
        load_s.append(time.perf_counter() - t0)
    out["load_s"] = load_s
    out["load_parts_s"] = parts
    out.update(adapter.info(obj))
    query_ms, first = [], None
    for q in QUERIES:
        t0 = time.perf_counter()
        hits = adapter.query(obj, q)
        query_ms.append((time.perf_counter() - t0) * 1000.0)
        if first is None:
            first = adapter.ids(hits)
    out["query_ms"] = query_ms
    out["hits_first_query"] = first or []
except BaseException as exc:  # noqa: BLE001 - reported, never raised
    out["error"] = f"{type(exc).__name__}: {exc}"[:2000]
    out["traceback"] = traceback.format_exc()[-4000:]
# VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec (the parent's
# high-water mark would show up here).
out["peak_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    with open("/proc/self/status") as _f:
        for _line in _f:
            if _line.startswith("VmHWM:"):
                out["peak_rss_kib"] = int(_line.split()[1])
except OSError:
    pass
_stdout.write(json.dumps(out) + "\n")
_stdout.flush()
'''


def venv_python(name: str) -> Path:
    return PEERS_DIR / name / "venv" / "bin" / "python"


def ensure_venv(name: str) -> Path:
    """Create ``benches/.peers/<name>/venv`` and install the pinned release once;
    return the venv's python. Quick (no subprocess) when already done."""
    if name not in LIBRARIES:
        raise ValueError(f"unknown library {name!r}; known: {', '.join(LIBRARIES)}")
    dist, pinned = LIBRARIES[name]
    requirement = f"{dist}=={pinned}"
    venv = PEERS_DIR / name / "venv"
    python = venv_python(name)
    marker = PEERS_DIR / name / "installed.json"
    try:
        if python.exists() and json.loads(marker.read_text())["requirement"] == requirement:
            return python
    except (OSError, ValueError, KeyError):
        pass
    if not python.exists():
        venv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", requirement],
        check=True,
    )
    got = subprocess.run(
        [
            str(python),
            "-I",
            "-c",
            f"from importlib.metadata import version; print(version({dist!r}))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if got != pinned:
        raise RuntimeError(f"{name}: installed {got}, expected {pinned}")
    marker.write_text(json.dumps({"requirement": requirement, "python": sys.version.split()[0]}))
    return python


def mirror_dir(bundle: Path) -> Path:
    """Where brainpick compiles ``bundle``: a per-bundle symlink mirror."""
    resolved = bundle.resolve()
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", resolved.name) or "bundle"
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
    return PEERS_DIR / "brainpick" / "mirror" / f"{slug}-{digest}"


def _tail(text: str, n: int = 2000) -> str:
    return text[-n:].strip()


def run(
    name: str,
    bundle: Path,
    queries: list[str],
    k: int = 10,
    load_rounds: int = 1,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> dict[str, Any]:
    """Load ``bundle`` ``load_rounds`` times and run each query once with library
    ``name`` in a fresh subprocess of its venv. Returns the driver's JSON as a
    dict, or ``{"library": name, "error": ...}`` on any library failure."""
    if name not in LIBRARIES:
        return {"library": name, "error": f"unknown library; known: {', '.join(LIBRARIES)}"}
    bundle = Path(bundle).resolve()
    if not bundle.is_dir():
        return {"library": name, "error": f"not a directory: {bundle}"}
    try:
        python = ensure_venv(name)
    except (OSError, subprocess.CalledProcessError, RuntimeError) as exc:
        return {"library": name, "error": f"install failed: {exc}"}
    args: dict[str, Any] = {
        "library": name,
        "bundle": str(bundle),
        "queries": list(queries),
        "k": k,
        "load_rounds": load_rounds,
    }
    if name == "brainpick":
        args["mirror"] = str(mirror_dir(bundle))
    env = {key: value for key, value in os.environ.items() if not key.startswith("BRAINPICK_")}
    try:
        proc = subprocess.run(
            [str(python), "-I", "-c", DRIVER, json.dumps(args)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=PEERS_DIR / name,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return {"library": name, "error": f"timeout after {timeout:g} s"}
    lines = proc.stdout.strip().splitlines()
    try:
        result: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, ValueError):
        return {
            "library": name,
            "error": f"driver exited with code {proc.returncode} without a result",
            "stderr": _tail(proc.stderr),
        }
    if "error" in result and proc.stderr:
        result["stderr"] = _tail(proc.stderr)
    return result


if __name__ == "__main__":
    import argparse
    import statistics

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("queries", nargs="+")
    parser.add_argument("--library", action="append", choices=list(LIBRARIES))
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--load-rounds", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S)
    ns = parser.parse_args()
    for lib in ns.library or list(LIBRARIES):
        res = run(lib, ns.bundle, ns.queries, ns.k, ns.load_rounds, ns.timeout)
        if "error" in res:
            print(f"{lib}: ERROR {res['error']}")
            continue
        print(
            f"{lib} {res['version']}: load {min(res['load_s']):.3f} s, "
            f"median query {statistics.median(res['query_ms']):.2f} ms, "
            f"n_docs {res.get('n_docs')}, peak RSS {res['peak_rss_kib'] / 1024:.0f} MiB"
        )
        print(f"  top hits of {ns.queries[0]!r}: {res['hits_first_query']}")
