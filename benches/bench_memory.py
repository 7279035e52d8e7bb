"""Scoped memory: capture throughput with fsync, and ``read`` over a
user scope holding a year of day files.

Groups:
- ``memory-capture``: 50 captures into one user's day file, every one durable
  (file fsync + rename + directory fsync) — by 1 process, and by 8 processes
  at once (400 captures per round; processes start untimed and wait for "go");
- ``memory-read-365x50``: ``store.read`` of one query over a user scope of 365
  day files × 50 exchanges, warm (the snapshot is cached; each read still
  checks the disk for changes).
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import corpus
import pytest
from conftest import SEED, query_rounds

NOW = datetime(2026, 11, 30, 9, 0, 0, tzinfo=timezone.utc)
PER_WRITER = 50

CHILD = r"""
import sys
from datetime import datetime, timezone
from okfast.memory import FileMemoryStore, Scope, Tier, capture
base, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = FileMemoryStore({Tier.USER: base})
now = datetime(2026, 11, 30, 9, 0, 0, tzinfo=timezone.utc)
print("ready", flush=True)
sys.stdin.readline()
for k in range(n):
    assert capture(store, Scope("bench", "alice"), f"question {who} {k} about sourdough",
                   f"answer {who} {k}: proof it longer", now=now).written
print("done", flush=True)
"""


def _tag(benchmark: Any, group: str, peer: str, measures: str) -> None:
    benchmark.group = group
    benchmark.extra_info.update({"peer": peer, "measures": measures})


@pytest.fixture
def scratch() -> Iterator[Path]:
    # On the same disk as the corpora, so fsync costs what it costs there.
    corpus.CORPUS_DIR.mkdir(parents=True, exist_ok=True)
    d = Path(tempfile.mkdtemp(prefix="memory-", dir=corpus.CORPUS_DIR))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_capture_one_process(benchmark: Any, scratch: Path) -> None:
    from okfast.memory import FileMemoryStore, Scope, Tier, capture

    _tag(benchmark, "memory-capture", "okfast", f"{PER_WRITER} durable captures, 1 process")
    rounds = iter(range(10**6))

    def setup() -> tuple[tuple[Any, Scope], dict[str, Any]]:
        root = scratch / f"r{next(rounds)}"
        root.mkdir()
        return (FileMemoryStore({Tier.USER: root}), Scope("bench", "alice")), {}

    def run(store: Any, scope: Any) -> None:
        for k in range(PER_WRITER):
            assert capture(store, scope, f"question {k} about rye", f"answer {k}", now=NOW).written

    benchmark.pedantic(run, setup=setup, rounds=5, warmup_rounds=0)


def test_capture_eight_processes(benchmark: Any, scratch: Path) -> None:
    _tag(
        benchmark,
        "memory-capture",
        "okfast ×8 processes",
        f"{8 * PER_WRITER} durable captures, 8 processes into one day file",
    )
    rounds = iter(range(10**6))

    def setup() -> tuple[tuple[list[subprocess.Popen[str]]], dict[str, Any]]:
        root = scratch / f"p{next(rounds)}"
        root.mkdir()
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", CHILD, str(root), f"w{i}", str(PER_WRITER)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for i in range(8)
        ]
        for p in procs:
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        return (procs,), {}

    def run(procs: list[subprocess.Popen[str]]) -> None:
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        for p in procs:
            assert p.stdout is not None and p.stdout.readline() == "done\n"
            p.communicate()  # waits, and closes both pipes (else a ResourceWarning)

    benchmark.pedantic(run, setup=setup, rounds=3, warmup_rounds=0)


@pytest.fixture(scope="module")
def year_of_memory() -> Path:
    """365 day files × 50 exchanges of synthetic words, written the way
    ``capture`` writes them (built directly: 18k fsyncs would only slow setup)."""
    from okfast.memory import Scope, Tier, memory_path
    from okfast.memory.capture import day_entry
    from okfast.memory.entry import appended, new_file

    root = corpus.CORPUS_DIR / f"memory-year-{SEED}"
    scope = Scope("bench", "alice")
    directory = root / memory_path(Tier.USER, scope)
    if (directory / ".complete").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    directory.mkdir(parents=True)
    vocab = corpus.vocabulary(SEED)
    rng = random.Random(SEED)
    for day in range(365):
        when = NOW - timedelta(days=day)
        data = b""
        for k in range(PER_WRITER):
            u = " ".join(vocab.draw_many(rng, rng.randint(5, 25)))
            a = " ".join(vocab.draw_many(rng, rng.randint(10, 60)))
            e = day_entry(u, a, when + timedelta(seconds=k))
            data = new_file(e, e.section) if not data else appended(data, e.section)
        (directory / f"{e.name}.md").write_bytes(data)
    (directory / ".complete").write_text("")
    return root


def test_read_year_warm(benchmark: Any, year_of_memory: Path) -> None:
    from okfast.memory import FileMemoryStore, Scope, Tier

    store = FileMemoryStore({Tier.USER: year_of_memory})
    scope = Scope("bench", "alice")
    queries = [" ".join(q.split()[:3]) for q in corpus.sample_queries(200, SEED)]
    store.read(scope, "warm")  # load and cache the snapshot once
    _tag(benchmark, "memory-read-365x50", "okfast", "read, 1 query, warm, all passages")
    it = iter(range(10**9))

    def setup() -> tuple[tuple[str], dict[str, Any]]:
        return (queries[next(it) % len(queries)],), {}

    def run(q: str) -> int:
        return len(store.read(scope, q).passages)

    benchmark.pedantic(run, setup=setup, rounds=query_rounds(), warmup_rounds=1)
