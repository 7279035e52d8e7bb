"""pytest-benchmark setup for okfast's benchmarks (never part of the test suite).

Run from the repository root::

    python -m pytest benches -p no:cacheprovider --benchmark-only

Environment knobs (all optional):

- ``OKFAST_BENCH_SIZES``   corpus sizes, comma/space separated (default ``10000,100000``)
- ``OKFAST_BENCH_SEED``    corpus and query seed (default 42)
- ``OKFAST_BENCH_QUERIES`` rounds per fast query benchmark, one query per round (default 100)
- ``OKFAST_BENCH_REF_QUERIES`` rounds for the pure-Python reference scan (default 3; 1 at ≥100k)
- ``OKFAST_BENCH_LOAD_ROUNDS`` rounds per load/build benchmark (default 5; 3 at ≥100k;
  the reference loader always does 1 round at ≥100k unless this is set)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
import peers  # noqa: E402
from peers.okfast import TESTS  # noqa: E402

# The reference oracle lives in tests/: bench_resolve imports it as `reference`.
if str(TESTS) not in sys.path:
    sys.path.append(str(TESTS))

#: The suite's peers by the names its tables show. Its okfast is the load
#: without the cache: like the engines, it keeps nothing.
SUITE_PEERS = {
    "okfast": "okfast-nocache",
    "okfast-warm": "okfast-warm",
    "okfast-bm25f": "okfast-bm25f",
    "reference": "reference",
    "tantivy": "tantivy",
    "bm25s": "bm25s",
}


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw.replace("_", "")) if raw else default


def bench_sizes() -> list[int]:
    raw = os.environ.get("OKFAST_BENCH_SIZES", "10000,100000")
    return [int(s.replace("_", "")) for s in raw.replace(",", " ").split()]


SEED = _env_int("OKFAST_BENCH_SEED", 42)
N_QUERIES = 256  # the fixed query list; rounds cycle through it


def query_rounds() -> int:
    return _env_int("OKFAST_BENCH_QUERIES", 100)


def ref_query_rounds(n: int) -> int:
    # The oracle folds every field character by character for every term:
    # seconds per query at 10k concepts, minutes at 100k.
    return _env_int("OKFAST_BENCH_REF_QUERIES", 3 if n < 100_000 else 1)


def load_rounds(n: int, peer: str) -> int:
    if os.environ.get("OKFAST_BENCH_LOAD_ROUNDS", "").strip():
        return _env_int("OKFAST_BENCH_LOAD_ROUNDS", 1)
    if peer == "reference":
        return 3 if n < 100_000 else 1
    return 5 if n < 100_000 else 3


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    # pyproject's python_files is the default (test_*.py); collect bench_*.py here
    # so the benchmark files never look like tests to `pytest tests`.
    # A file named on the command line is collected by pytest itself already.
    if (
        file_path.suffix == ".py"
        and file_path.name.startswith("bench_")
        and not parent.session.isinitpath(file_path)
    ):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


# --- fixtures ---------------------------------------------------------------
# `size` is a session-scoped parameter: pytest groups the tests by size and
# tears the previous size's corpus/peers down before building the next one.


@pytest.fixture(scope="session", params=bench_sizes(), ids=lambda n: f"n={n}")
def size(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.fixture(scope="session")
def corpus_root(size: int) -> Path:
    return corpus.ensure_corpus(size, SEED)


@pytest.fixture(scope="session")
def documents(corpus_root: Path) -> list[corpus.Document]:
    return corpus.read_documents(corpus_root)


@pytest.fixture(scope="session")
def queries() -> list[str]:
    return corpus.sample_queries(N_QUERIES, SEED)


@pytest.fixture(scope="session")
def peer_cache(size: int) -> Iterator[dict[str, Any]]:
    """Ready peers for this size; the load benchmarks deposit their last result."""
    cache: dict[str, Any] = {}
    yield cache
    cache.clear()


def make_peer(name: str) -> peers.Peer:
    """A new peer, skipping the benchmark when its library is missing."""
    try:
        return peers.make(SUITE_PEERS[name])
    except ImportError as e:  # okfast not built yet / reference not written yet
        pytest.skip(f"{name} not importable: {e}")


@pytest.fixture(scope="session")
def ready_peer(
    peer_cache: dict[str, Any], corpus_root: Path, documents: list[corpus.Document]
) -> Any:
    """``ready_peer(name)`` → a loaded/built peer for the current size."""

    def get(name: str) -> Any:
        if name not in peer_cache:
            p = make_peer(name)
            p.prime(corpus_root)
            p.before_load(corpus_root)
            p.load(corpus_root, documents)
            peer_cache[name] = p
        return peer_cache[name]

    return get
