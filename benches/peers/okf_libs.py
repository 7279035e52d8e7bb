"""The OKF libraries from PyPI, each through its own public API.

Each runs in its own virtual environment, ``benches/.peers/<name>/venv``
(created and the pinned release installed on first use, recorded in
``<name>/installed.json`` so later runs skip pip), so that its dependencies
never meet the project's. The reporter starts that venv's interpreter in
isolated mode (``-I``) on ``benches/report.py --child``, which imports only
the standard library, ``corpus`` and ``peers`` before the library itself.

All three are pure Python and rank whole words with BM25 (corpus statistics,
top k), unlike okfast's exact weighted substring count (docs/spec.md §3): as
for the engines, this compares costs, not relevance. All three parse
frontmatter with ``yaml.safe_load`` (PyYAML's pure-Python loader, even where
libyaml is available), which dominates their load on bundles with large
frontmatter (databricks).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from corpus import Document

from peers.base import Peer, Process

PEERS_DIR = Path(__file__).resolve().parents[1] / ".peers"
#: brainpick's mirrors, inside an empty git repository of their own.
MIRRORS = PEERS_DIR / "brainpick" / "mirror"


class OkfLibrary(Peer):
    """An OKF library, run in its own virtual environment."""

    #: The distribution on PyPI and the release measured.
    dist: ClassVar[str] = ""
    pinned: ClassVar[str] = ""
    warm_up = False

    def __init__(self) -> None:
        self.built: Any = None
        #: Seconds per round of each step of a load.
        self.parts: dict[str, list[float]] = {}

    @classmethod
    def requirement(cls) -> str:
        return f"{cls.dist}=={cls.pinned}"

    @classmethod
    def process(cls) -> Process:
        # Only Brainpick.settings configure brainpick, never the caller's.
        env = {k: v for k, v in os.environ.items() if not k.startswith("BRAINPICK_")}
        return Process([str(ensure_venv(cls)), "-I"], cwd=PEERS_DIR / cls.name, env=env)

    def info(self) -> dict[str, Any]:
        from importlib.metadata import version  # not before the baseline: it is heavy

        return {"version": version(self.dist), "load_parts_s": self.parts}

    def close(self) -> None:
        self.built = None


class _TwoSteps(OkfLibrary):
    """A library whose load is ``Bundle.load(root)`` then one index-building
    constructor over the bundle; the two steps are also timed apart."""

    #: The constructor's name, for the timing of each step.
    step: ClassVar[str] = ""

    def __init__(self) -> None:
        super().__init__()
        # Imported here, before any timed load: import time is not load time.
        self._load_bundle, self._build = self.load_steps()

    def load_steps(self) -> tuple[Callable[[Path], Any], Callable[[Any], Any]]:
        """The library's ``Bundle.load`` and its index-building constructor."""
        raise NotImplementedError

    def load(self, root: Path, docs: Sequence[Document]) -> None:
        t0 = time.perf_counter()
        bundle = self._load_bundle(root)
        t1 = time.perf_counter()
        self.built = self._build(bundle)
        t2 = time.perf_counter()
        self.parts.setdefault("Bundle.load", []).append(t1 - t0)
        self.parts.setdefault(self.step, []).append(t2 - t1)


class Okflib(_TwoSteps):
    """okflib (Gwenlake, Apache-2.0; depends on PyYAML).

    load: ``okflib.Bundle.load(root)`` (``rglob("*.md")``, ``yaml.safe_load``
    per file, ``index.md``/``log.md`` skipped), then ``okflib.search.Index``
    over it: the BM25 index its README documents for ``okflib query``, built
    per call there, once per load here. query: ``Index.query(q, limit=k)``,
    ids ``Hit.concept_id`` (the path without ``.md``).

    Fields are weighted by repeating their tokens (id ×2, title ×3,
    description ×2, tags ×3, type ×1, body ×1); tokens are ``\\w+`` of two or
    more characters, NFKD accent-folded. A query scans every document's term
    dict once per query term (no postings). ``Bundle.load(strict=False)``
    silently drops files whose frontmatter does not parse or has no ``type``
    (compare ``concepts``), but any other error aborts the whole load: a
    ``stale_after`` holding a date-time (``"2025-02-01T00:00:00Z"``, as in
    the synthetic corpus) raises ``ValueError`` from ``date.fromisoformat``,
    so it cannot load the ``synth-*`` bundles (reported as an error).
    ``Bundle.search(text)`` is an unranked substring filter (the whole query
    as one needle, no top k), so it is not used.
    """

    name = "okflib"
    dist, pinned, step = "okflib", "0.5.0", "Index"

    def load_steps(self) -> tuple[Callable[[Path], Any], Callable[[Any], Any]]:
        from okflib import Bundle
        from okflib.search import Index

        return Bundle.load, Index

    def search(self, query: str, k: int | None) -> Any:
        return self.built.query(query, limit=k)

    def ids(self, result: Any) -> list[str]:
        return [h.concept_id for h in result]

    def count(self) -> int:
        return len(self.built._bundle)


class OkfRetrieve(_TwoSteps):
    """okf-retrieve (imports as ``okf``; depends on PyYAML).

    load: ``okf.Bundle.load(root)`` then ``okf.StructuredRetriever`` over it
    (its README's "Keyword (BM25) retrieval ... no embeddings needed").
    query: ``StructuredRetriever.search(q, limit=k)``, ids ``Hit.doc.path``
    (the path with ``.md``).

    One field (title, description, tags and body concatenated, no weights);
    ASCII-only tokens ``[A-Za-z0-9_]+``, so accented letters split words.
    Every query scores every document (a Python loop, then a full sort).
    ``index.md``/``log.md`` are loaded and ranked like concepts; a file with
    bad frontmatter is kept with its raw text as body (``load_errors``). Its
    ``SemanticRetriever`` (an embeddings API or sentence-transformers) is the
    non-lexical option and is not used.
    """

    name = "okf-retrieve"
    dist, pinned, step = "okf-retrieve", "0.1.1", "StructuredRetriever"

    def load_steps(self) -> tuple[Callable[[Path], Any], Callable[[Any], Any]]:
        from okf import Bundle, StructuredRetriever

        return Bundle.load, StructuredRetriever

    def search(self, query: str, k: int | None) -> Any:
        return self.built.search(query, limit=k)

    def ids(self, result: Any) -> list[str]:
        return [h.doc.path for h in result]

    def count(self) -> int:
        return int(self.built.n_docs)

    def info(self) -> dict[str, Any]:
        return {**super().info(), "load_errors": len(self.built.bundle.load_errors)}


class Brainpick(OkfLibrary):
    """brainpick (Benquemax, MIT; depends on PyYAML, mcp, starlette, uvicorn,
    watchfiles, httpx): a compile-then-serve tool.

    ``compile`` writes artifacts to ``<bundle>/.brainpick/`` and rewrites a
    managed section of ``<bundle>/index.md``, so it cannot run on a read-only
    bundle and must not modify ours. It runs on a mirror instead (see
    ``mirror_dir``): real directories whose files are symlinks to the bundle
    (brainpick only replaces files atomically, never writes through them).
    Before each round the mirror is re-synced, untimed, so every round is a
    cold compile. The mirrors live in an empty ``git init`` repository, so
    its git lookups (timeline, AGENTS.md report) stop there and never reach
    the okfast repository: the bundle is compiled as a non-git bundle.

    Configured through its documented ``BRAINPICK_*`` variables: vectors (T2),
    the entity graph (T3), similarity gaps and the update check (a PyPI
    request) off.

    load: ``root, config = brainpick.config.resolve_bundle(mirror)``,
    ``brainpick.compile.pipeline.run_compile(root, config=config)`` (what
    ``brainpick compile`` runs: scan, frontmatter, link graph, index.md,
    artifacts as JSON), then ``ServeState(root, config).reload_artifacts()``
    (what its query commands do to hold the compiled brain). query:
    ``brainpick.mcp_server.search_payload(state, q, mode="keyword", limit=k,
    budget_tokens=10**9)`` (the ``brain_search`` MCP tool and ``brainpick
    search --mode keyword``), ids ``hit["path"]``; the huge token budget keeps
    the top k from being trimmed (the default is 1200 tokens), and ``limit``
    is clamped to 1..50.

    A cold compile of a bundle whose ``index.md`` lacks brainpick's managed
    section writes that section and then scans the whole bundle a second
    time, so its load parses every file twice (a recompile of an unchanged,
    compiled bundle would parse once: not measured). Its BM25 re-tokenizes
    and re-counts every document on every query (no index kept between
    queries), so a query costs about one pass over the corpus text. Title ×3,
    tags ×2, description ×2, body ×1 by repetition; ``[^\\W_]+`` tokens plus
    a four-letter prefix "stem" for tokens of five or more letters. Reserved
    files (index.md, log.md, skilltree.md) are not ranked. ``auto`` mode would
    add title matches and rank fusion with vectors; ``keyword`` is the purely
    lexical mode.
    """

    name = "brainpick"
    dist, pinned = "brainpick", "0.8.7"
    settings: ClassVar[dict[str, str]] = {
        "BRAINPICK_MODULES_VECTORS": "off",
        "BRAINPICK_MODULES_GRAPH": "off",
        "BRAINPICK_MODULES_SIMILARITY_GAPS": "off",
        "BRAINPICK_UPDATE_CHECK": "false",
    }

    def __init__(self) -> None:
        super().__init__()
        os.environ.update(self.settings)
        from brainpick.compile.pipeline import run_compile
        from brainpick.config import resolve_bundle
        from brainpick.mcp_server import search_payload
        from brainpick.serve.state import ServeState

        self._compile, self._resolve = run_compile, resolve_bundle
        self._search, self._state = search_payload, ServeState
        self.mirror: Path | None = None
        self.warnings: list[str] = []
        MIRRORS.mkdir(parents=True, exist_ok=True)
        if not (MIRRORS / ".git").exists():
            subprocess.run(["git", "init", "-q", str(MIRRORS)], check=False)

    def before_load(self, root: Path) -> None:
        self.mirror = mirror_dir(root)
        sync_mirror(root, self.mirror)

    def load(self, root: Path, docs: Sequence[Document]) -> None:
        t0 = time.perf_counter()
        mirror_root, config = self._resolve(self.mirror)
        result = self._compile(mirror_root, config=config)
        t1 = time.perf_counter()
        state = self._state(mirror_root, config)
        state.reload_artifacts()
        t2 = time.perf_counter()
        self.parts.setdefault("run_compile", []).append(t1 - t0)
        self.parts.setdefault("ServeState.reload_artifacts", []).append(t2 - t1)
        self.warnings = list(result.warnings)
        self.built = state

    def search(self, query: str, k: int | None) -> Any:
        return self._search(self.built, query, mode="keyword", limit=k, budget_tokens=10**9)

    def ids(self, result: Any) -> list[str]:
        return [h["path"] for h in result["hits"]]

    def count(self) -> int:
        return sum(1 for r in self.built.records if not r["reserved"])

    def info(self) -> dict[str, Any]:
        return {
            **super().info(),
            "tiers": self.built.manifest.get("tiers"),
            "compile_warnings": self.warnings,
        }


LIBRARIES: dict[str, type[OkfLibrary]] = {c.name: c for c in (Okflib, OkfRetrieve, Brainpick)}


def ensure_venv(lib: type[OkfLibrary]) -> Path:
    """Create ``benches/.peers/<name>/venv`` with the pinned release, once;
    return its python. Quick (no subprocess) when already done."""
    requirement = lib.requirement()
    venv = PEERS_DIR / lib.name / "venv"
    python = venv / "bin" / "python"
    marker = PEERS_DIR / lib.name / "installed.json"
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
            f"import importlib.metadata as m; print(m.version({lib.dist!r}))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if got != lib.pinned:
        raise RuntimeError(f"{lib.name}: installed {got}, expected {lib.pinned}")
    marker.write_text(json.dumps({"requirement": requirement, "python": sys.version.split()[0]}))
    return python


def mirror_dir(bundle: Path) -> Path:
    """Where brainpick compiles ``bundle``: a symlink mirror of its own."""
    import hashlib

    resolved = bundle.resolve()
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", resolved.name) or "bundle"
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
    return MIRRORS / f"{slug}-{digest}"


_NOT_MIRRORED = {".brainpick", ".git"}


def sync_mirror(src: Path, dst: Path) -> None:
    """Make ``dst`` a tree of real directories with one symlink per file of
    ``src`` (less .brainpick/ and .git/), removing anything else: brainpick's
    artifacts and the files it generated. Never writes into ``src``."""
    import shutil

    shutil.rmtree(dst / ".brainpick", ignore_errors=True)
    want_dirs, want_files = {"."}, {}
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d not in _NOT_MIRRORED)
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
