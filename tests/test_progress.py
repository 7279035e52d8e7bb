"""Progress reporting and Ctrl-C during a load (docs/spec.md §1.8)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CORPORA, requires_corpora, write_bundle
from okfast import Bundle, InvalidArgumentTypeError

PHASES = ["walk", "read", "index", "done"]


def test_progress_reports_phases_in_order_and_ends_done(tmp_path: Path) -> None:
    files = {
        f"d{i % 9}/c{i}.md": f"---\ntype: T\ntitle: t{i}\n---\nbody {i}\n" for i in range(2000)
    }
    root = write_bundle(tmp_path / "kb", files)
    calls: list[tuple[str, int, int]] = []
    b = Bundle.load(root, cache=False, progress=lambda *a: calls.append(a))
    assert len(b) == 2000
    assert calls and calls[-1][0] == "done"
    order = [PHASES.index(p) for p, _d, _t in calls]
    assert order == sorted(order)
    for phase, done, total in calls:
        if phase == "read":
            assert total == 2000 and 0 <= done <= total


def test_a_raising_callback_stops_the_load_and_propagates(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\n---\n"})

    class Stop(Exception):
        pass

    def stop(phase: str, done: int, total: int) -> None:
        raise Stop(phase)

    # A small bundle loads before the first poll: the final call raises.
    with pytest.raises(Stop, match="done"):
        Bundle.load(root, cache=False, progress=stop)


BIG = CORPORA / "saschb2b" / "bgh-rechtsprechung"

INTERRUPTED = """
import sys
from okfast import Bundle
def tick(phase, done, total):
    print("tick", phase, flush=True)
try:
    Bundle.load(sys.argv[1], cache=False, progress=tick)
    print("loaded", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


@requires_corpora
@pytest.mark.skipif(not BIG.is_dir(), reason=f"{BIG} not found")
def test_ctrl_c_interrupts_a_long_load_cleanly() -> None:
    p = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, str(BIG)], stdout=subprocess.PIPE, text=True
    )
    assert p.stdout is not None
    first = p.stdout.readline()
    assert first.startswith("tick"), first
    p.send_signal(signal.SIGINT)
    rest, _ = p.communicate(timeout=120)
    assert rest.split("\n")[-2] == "interrupted" and "loaded" not in rest
    assert p.returncode == 0


@requires_corpora
@pytest.mark.skipif(not BIG.is_dir(), reason=f"{BIG} not found")
def test_a_raising_callback_stops_a_long_load() -> None:
    seen: list[str] = []

    def stop(phase: str, done: int, total: int) -> None:
        seen.append(phase)
        raise LookupError("enough")

    with pytest.raises(LookupError, match="enough"):
        Bundle.load(BIG, cache=False, progress=stop)
    assert seen and seen[0] != "done"  # stopped mid-load, not at the end


def test_cli_is_silent_when_not_a_terminal(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\ntitle: x\n---\nx\n"})
    p = subprocess.run(
        [sys.executable, "-m", "okfast", "search", str(root), "x"], capture_output=True, text=True
    )
    assert p.returncode == 0 and p.stderr == ""


def test_the_end_is_reported_once_as_done_zero_of_zero(tmp_path: Path) -> None:
    # docs/spec.md §1.8: the last call is ('done', 0, 0) and comes once.
    root = write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\ntitle: a\n---\nbody\n"})
    calls: list[tuple[str, int, int]] = []
    Bundle.load(root, cache=False, progress=lambda *a: calls.append(a))
    assert calls[-1] == ("done", 0, 0)
    assert [c for c in calls if c[0] == "done"] == [("done", 0, 0)]


def test_a_callback_raising_at_done_leaves_the_whole_cache_file(tmp_path: Path) -> None:
    # docs/spec.md §1.8: the end is reported after the cache file is in place.
    root = write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\ntitle: a\n---\nbody\n"})
    cache = tmp_path / "cache"

    def stop_at_done(phase: str, done: int, total: int) -> None:
        if phase == "done":
            raise LookupError("stop")

    with pytest.raises(LookupError, match="stop"):
        Bundle.load(root, cache_dir=cache, progress=stop_at_done)
    assert len(list(cache.glob("*.okfc"))) == 1
    assert not [p for p in cache.iterdir() if p.suffix != ".okfc"]  # no temporary left
    again = Bundle.load(root, cache_dir=cache)
    # "partial": the file is too recent to trust yet (§9.4), read again.
    assert again.cache_status in ("hit", "partial") and again.concept_ids == ("a",)


@pytest.mark.parametrize("progress", [1, "bar", [print]])
def test_a_progress_that_cannot_be_called_is_refused_before_the_load(
    tmp_path: Path, progress: object
) -> None:
    """docs/spec.md §1.8: a wrong type is okfast's type error, raised before any
    file is read, not Python's "not callable" when the load first reports."""
    root = tmp_path / "kb"
    write_bundle(root, {"a.md": "---\ntype: T\ntitle: Alpha\n---\nalpha\n"})
    with pytest.raises(InvalidArgumentTypeError, match="progress must be a callable or None"):
        Bundle.load(root, cache=False, progress=progress)  # type: ignore[arg-type]
