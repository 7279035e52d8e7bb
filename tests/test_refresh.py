"""``Bundle.refresh`` driven by the change queue (docs/spec.md §1.9): only the
files the queue names are looked at, the index is shared when no indexed
text changed and spliced when a few concepts changed, and the result is
always exactly a fresh load."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from conftest import write_bundle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from okfast import Bundle
from strategies import concept_bytes

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux-only")


def c(title: str, body: str = "", status: str = "stable") -> str:
    return f"---\ntype: T\ntitle: {title}\nstatus: {status}\n---\n{body}\n"


def same(a: Bundle, b: Bundle, queries: tuple[str, ...] = ("a", "order", "x", "new")) -> None:
    assert a.concept_ids == b.concept_ids
    assert a.diagnostics == b.diagnostics
    assert [a.concept(cid) for cid in a.concept_ids] == [b.concept(cid) for cid in b.concept_ids]
    for q in queries:
        assert a.search(q) == b.search(q), q
        assert a.search(q, scorer="bm25f") == b.search(q, scorer="bm25f"), q
    assert list(a.ordinal_ranks()) == list(b.ordinal_ranks())


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_bundle(
        tmp_path / "kb",
        {
            "a.md": c("Alpha order", "x"),
            "d/b.md": c("Beta", "order order"),
            "d/e/z.md": c("Zed", "a"),
        },
    )


def load(root: Path) -> Bundle:
    return Bundle.load(root, cache=False)


@linux
def test_an_edit_is_read_from_the_named_file_alone(root: Path) -> None:
    b = load(root)
    (root / "d" / "b.md").write_text(c("Beta", "new words here"))
    r = b.refresh()
    assert r is not None and r.made_by == "events, index spliced"
    same(r, load(root))
    assert r.refresh() is None


def test_an_edit_between_two_times_before_1970_is_seen(root: Path) -> None:
    """docs/spec.md §1.9: a file counts as changed when its modification
    time differs, before the epoch too (one stamp for every such time used
    to hide a same-size edit)."""
    p = root / "a.md"
    p.write_text(c("Alpha order", "x"))
    os.utime(p, (-100, -100))
    b = load(root)
    p.write_text(c("Omega order", "x"))
    os.utime(p, (-200, -200))
    r = b.refresh()
    assert r is not None and r.concept("a").title == "Omega order"
    same(r, load(root))


@linux
def test_touching_keeps_the_index(root: Path) -> None:
    b = load(root)
    os.utime(root / "a.md", (1_000_000, 1_000_000))
    r = b.refresh()
    assert r is not None and r.made_by == "events, index kept"
    same(r, load(root))
    assert r.search("order") == b.search("order")


@linux
def test_a_field_outside_the_index_keeps_the_index(root: Path) -> None:
    b = load(root)
    (root / "a.md").write_text(c("Alpha order", "x", status="deprecated"))
    r = b.refresh()
    assert r is not None and r.made_by == "events, index kept"
    assert r.concept("a").status == "deprecated"
    same(r, load(root))


@linux
def test_added_and_removed_files(root: Path) -> None:
    b = load(root)
    (root / "d" / "new.md").write_text(c("New", "order"))
    (root / "a.md").unlink()
    r = b.refresh()
    assert r is not None and r.made_by == "events, index spliced"
    same(r, load(root))


@linux
def test_many_new_files_build_the_index_again(root: Path) -> None:
    """More than a few concepts changed (docs/spec.md §9.4's 64): a build."""
    b = load(root)
    for i in range(70):
        (root / "d" / f"n{i:02d}.md").write_text(c(f"New {i}", "order new"))
    r = b.refresh()
    assert r is not None and r.made_by == "events"
    same(r, load(root))


@linux
@pytest.mark.parametrize(
    "change",
    [
        "mkdir",
        "root index",
        "symlink",
        "bad name",
        "link to a directory",
        "link to a file",
        "link named log.md",
        "link named index.md below the root",
    ],
)
def test_anything_else_walks(root: Path, change: str) -> None:
    b = load(root)
    if change == "link to a directory":
        (root / "d" / "sub").symlink_to(root / "d" / "e")
    elif change == "link to a file":
        (root / "notes").symlink_to(root / "a.md")
    elif change == "mkdir":
        write_bundle(root / "fresh", {"q.md": c("Q")})
    elif change == "root index":
        (root / "index.md").write_text("---\nokf_version: '0.2'\n---\n")
    elif change == "symlink":
        (root / "link.md").symlink_to(root / "a.md")
    elif change == "link named log.md":
        # Reported whatever its name (docs/spec.md §1.1), a reserved one too.
        (root / "d" / "log.md").symlink_to(root / "a.md")
    elif change == "link named index.md below the root":
        (root / "d" / "index.md").symlink_to(root / "a.md")
    else:
        (root / "bad\x01.md").write_text(c("bad"))
    r = b.refresh()
    assert r is not None and r.made_by == "walk"
    same(r, load(root))
    assert r.okf_version == load(root).okf_version


@linux
def test_a_link_that_goes_takes_its_diagnostic_with_it(root: Path) -> None:
    (root / "d" / "sub").symlink_to(root / "d" / "e")
    b = load(root)
    assert [d.code for d in b.diagnostics] == ["SymlinkSkipped"]
    (root / "d" / "sub").unlink()
    r = b.refresh()
    assert r is not None and r.diagnostics == ()
    same(r, load(root))


@linux
@pytest.mark.parametrize("then", ["removed", "replaced by a file"])
def test_a_link_named_like_a_concept_file_takes_its_diagnostic_with_it(
    root: Path, then: str
) -> None:
    # A link `l.md` is the walk's diagnostic, not a concept file: when it
    # goes, a refresh equals a fresh load (docs/spec.md §1.1, §1.9).
    (root / "l.md").symlink_to(root / "a.md")
    b = load(root)
    assert [(d.code, d.path) for d in b.diagnostics] == [("SymlinkSkipped", "l.md")]
    (root / "l.md").unlink()
    if then == "replaced by a file":
        (root / "l.md").write_text(c("Ell", "order"))
    r = b.refresh()
    assert r is not None
    same(r, load(root))
    assert r.diagnostics == ()


@linux
def test_changes_during_a_refresh_are_seen_by_the_next(root: Path) -> None:
    b = load(root)
    for i in range(5):
        (root / "a.md").write_text(c(f"Alpha {i}", "x" * i))
        r = b.refresh()
        assert r is not None and r.concept("a").title == f"Alpha {i}"
        same(r, load(root))
        b = r
    assert b.refresh() is None


def test_non_concept_files_change_nothing(root: Path) -> None:
    b = load(root)
    (root / "notes.txt").write_text("x")
    (root / ".hidden.md").write_text(c("hidden"))
    (root / "d" / "log.md").write_text("log")
    assert b.refresh() is None


OPS = st.lists(
    st.tuples(
        st.sampled_from(["edit", "touch", "remove", "add", "status"]),
        st.integers(0, 50),
        concept_bytes(),
    ),
    min_size=1,
    max_size=6,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rounds=st.lists(OPS, min_size=1, max_size=3))
def test_refresh_chains_equal_fresh_loads(
    tmp_path_factory: pytest.TempPathFactory, rounds: list[list[tuple[str, int, bytes]]]
) -> None:
    root = write_bundle(
        tmp_path_factory.mktemp("chain") / "kb",
        {f"d{i % 3}/c{i}.md": c(f"t{i} order", f"body {i} a") for i in range(12)},
    )
    b = load(root)
    for ops in rounds:
        for op, k, content in ops:
            files = sorted(root.rglob("*.md"))
            target = files[k % len(files)] if files else None
            if op == "add" or target is None:
                (root / f"d{k % 3}" / f"n{k}.md").write_bytes(content)
            elif op == "edit":
                target.write_bytes(content)
            elif op == "touch":
                os.utime(target, (k * 1000, k * 1000))
            elif op == "status":
                target.write_text(c("status only", "", status="draft"))
            else:
                target.unlink()
        r = b.refresh()
        fresh = load(root)
        if r is None:
            same(b, fresh)
        else:
            same(r, fresh)
            b = r


def test_refreshes_from_several_threads_miss_no_change(tmp_path: Path) -> None:
    """docs/spec.md §1.9: threads refreshing one snapshot while files change
    (an MCP server's workers, say): once the writes stop, a refresh of the
    last snapshot kept is exactly a fresh load."""
    import random
    import threading
    import time

    kb = write_bundle(tmp_path / "kb", {f"c{i}.md": c(f"t{i}", "orders") for i in range(30)})
    held = [Bundle.load(kb, cache=False)]
    stop = threading.Event()

    def refresher() -> None:
        while not stop.is_set():
            fresh = held[0].refresh()
            if fresh is not None:
                held[0] = fresh

    threads = [threading.Thread(target=refresher) for _ in range(4)]
    for t in threads:
        t.start()
    rnd = random.Random(7)
    for n in range(600):
        if n % 20 == 0:
            time.sleep(0.02)  # let the refreshers interleave with the writes
        i = rnd.randrange(34)
        if rnd.random() < 0.2:
            (kb / f"c{i}.md").unlink(missing_ok=True)
        else:
            (kb / f"c{i}.md").write_text(c(f"t{i}", "orders " * rnd.randrange(1, 30)))
    stop.set()
    for t in threads:
        t.join(60)
    last = held[0].refresh() or held[0]
    same(last, Bundle.load(kb, cache=False))


@linux
@pytest.mark.parametrize(
    ("edited", "removed", "made_by"),
    [(40, 0, "events, index spliced"), (64, 0, "events, index spliced"), (40, 30, "events")],
)
def test_an_edit_counts_once_against_the_few(
    tmp_path: Path, edited: int, removed: int, made_by: str
) -> None:
    """docs/spec.md §1.9, §9.4: an edited concept is one concept read again,
    not also one removed (33 edits of 100 rebuilt the index, as if 66 had
    changed); 40 edits and 30 removals are 70, past the 64."""
    root = write_bundle(
        tmp_path / "kb", {f"c{i:03}.md": c(f"T{i}", f"body {i} order") for i in range(100)}
    )
    b = load(root)
    for i in range(edited):
        (root / f"c{i:03}.md").write_text(c(f"T{i}", f"edited {i} new"))
    for i in range(99, 99 - removed, -1):
        (root / f"c{i:03}.md").unlink()
    r = b.refresh()
    assert r is not None and r.made_by == made_by
    same(r, load(root))


@pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="POSIX links")
def test_a_root_link_retargeted_is_seen_at_once(tmp_path: Path) -> None:
    """The directory watched stays quiet, but the root's path names another
    one: the next refresh walks it, not only after the 30 s comparison (§1.9)."""
    write_bundle(tmp_path / "a", {"old.md": c("Old")})
    write_bundle(tmp_path / "b", {"new.md": c("New")})
    (tmp_path / "root").symlink_to(tmp_path / "a")
    b = Bundle.load(tmp_path / "root", cache=False)
    assert b.refresh() is None
    (tmp_path / "next").symlink_to(tmp_path / "b")
    os.replace(tmp_path / "next", tmp_path / "root")
    fresh = b.refresh()
    assert fresh is not None and fresh.concept_ids == ("new",)
    same(fresh, Bundle.load(tmp_path / "b", cache=False))
    assert fresh.refresh() is None


@linux
def test_snapshots_hold_at_most_a_quarter_of_the_users_inotify_instances(tmp_path: Path) -> None:
    """docs/spec.md §1.9: the instances are shared by every process of the
    user; past a quarter of them a snapshot has no change watch, and its
    refresh compares the files (a walk), still exactly a fresh load."""
    import subprocess

    limit = int(Path("/proc/sys/fs/inotify/max_user_instances").read_text())
    cap = max(limit // 4, 1)
    root = write_bundle(tmp_path / "kb", {"a.md": c("Alpha order", "x")})
    program = f"""
import os, sys
from okfast import Bundle
kept = [Bundle.load(sys.argv[1], cache=False) for _ in range({cap} + 5)]
def target(fd):
    try:
        return os.readlink("/proc/self/fd/" + fd)
    except OSError:  # the listing's own descriptor, closed by now
        return ""
print(sum(target(fd) == "anon_inode:inotify" for fd in os.listdir("/proc/self/fd")))
open(os.path.join(sys.argv[1], "a.md"), "a").write("more\\n")
print(kept[-1].refresh().made_by)
"""
    out = subprocess.run(
        [sys.executable, "-c", program, str(root)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert int(out[0]) <= cap
    assert out[1] == "walk"
