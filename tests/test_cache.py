"""The persistent cache (docs/spec.md §9): reopening reads only what changed, gives
exactly the results of a load without cache, and never trusts a bad file."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from conftest import write_bundle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from okfast import BM25FParams, Bundle, CacheDamagedError, CacheWarning, InvalidArgumentTypeError
from strategies import bundle_files, concept_bytes

HOUR_AGO = time.time() - 3600


def age(root: Path, when: float = HOUR_AGO) -> None:
    """Backdate every file, so the cache trusts them (no racy window)."""
    for p in root.rglob("*"):
        if p.is_file():
            os.utime(p, (when, when))


def snapshot(b: Bundle, queries: tuple[str, ...] = ("a", "order", "ß", "x y")) -> Any:
    return (
        b.concept_ids,
        b.diagnostics,
        [b.concept(cid) for cid in b.concept_ids],
        [b.search(q) for q in queries],
        b.okf_version,
    )


def fresh(root: Path) -> Any:
    return snapshot(Bundle.load(root, cache=False))


def cached(root: Path, cache: Path) -> tuple[Bundle, Any]:
    b = Bundle.load(root, cache_dir=cache)
    return b, snapshot(b)


FILES = {
    "a.md": "---\ntype: T\ntitle: Alpha order\ntags: [x]\n---\nbody a\n",
    "sub/b.md": "---\ntype: T\ntitle: Beta\nsupersedes: [a]\n---\norder order\n",
    "bad.md": "---\ntitle: [unterminated\n---\n",
    "index.md": "---\nokf_version: '0.2'\n---\n",
}


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    root = write_bundle(tmp_path / "kb", dict(FILES))
    age(root)
    return root


def test_a_file_dated_before_1970_is_read_again_on_a_reopen(bundle: Path, tmp_path: Path) -> None:
    """docs/spec.md §9.4: a record is reused only for the same modification
    time; one before the epoch is never trusted, so a same-size edit from
    one such time to another is seen."""
    p = bundle / "a.md"
    os.utime(p, (-100, -100))
    first, _ = cached(bundle, tmp_path / "c")
    assert first.concept("a").title == "Alpha order"
    p.write_text(FILES["a.md"].replace("Alpha", "Omega"))
    os.utime(p, (-200, -200))
    b, got = cached(bundle, tmp_path / "c")
    assert b.concept("a").title == "Omega order"
    assert got == fresh(bundle)


def test_reopening_an_unchanged_bundle_reads_no_file(bundle: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first, snap1 = cached(bundle, cache)
    assert (
        first.cache_status == "miss" and first.cache_file is not None and first.cache_file.exists()
    )
    assert first.cache_file.read_bytes().startswith(b"OKFASTC\0")
    second, snap2 = cached(bundle, cache)
    assert second.cache_status == "hit" and second.cache_detail == ""
    assert snap1 == snap2 == fresh(bundle)
    assert list(cache.iterdir()) == [first.cache_file]  # nothing else, no temp files


def test_a_cold_load_records_every_file_it_stamped(tmp_path: Path) -> None:
    """A load that reads every file stamps each one as it reads it (the walk
    stats only files it will not open, such as one with an unusable id); all
    are recorded, so the reopen reads none of them again."""
    root = write_bundle(
        tmp_path / "kb",
        {"good.md": "---\ntype: T\ntitle: good\n---\nbody\n", "bad\x01.md": "---\ntype: T\n---\n"},
    )
    age(root)
    cache = tmp_path / "cache"
    first, snap1 = cached(root, cache)
    assert (first.cache_status, first.cache_reread) == ("miss", 2)
    again, snap2 = cached(root, cache)
    assert (again.cache_status, again.cache_reread) == ("hit", 0)
    assert snap1 == snap2 == fresh(root)
    assert [d.code for d in again.diagnostics] == ["InvalidConceptId"]


def test_changed_added_and_removed_files_are_reread(bundle: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cached(bundle, cache)
    (bundle / "a.md").write_text("---\ntype: T\ntitle: Alpha changed\n---\nnew body\n")
    (bundle / "sub" / "b.md").unlink()
    (bundle / "c.md").write_text("---\ntype: T\ntitle: Gamma\n---\norder\n")
    age(bundle, HOUR_AGO + 60)
    b, snap = cached(bundle, cache)
    assert b.cache_status == "partial" and snap == fresh(bundle)
    assert b.search("changed")[0].concept_id == "a"
    # A few files changed, long enough ago to be trusted: the saved index was
    # spliced and a new cache file written, so the next reopen reads nothing
    # again (docs/spec.md §9.5).
    assert b.made_by == "load, index spliced"
    again, snap2 = cached(bundle, cache)
    assert (again.cache_status, again.made_by, again.cache_reread) == ("hit", "load", 0)
    assert snap2 == snap


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_ino, a.st_mtime_ns) == (b.st_ino, b.st_mtime_ns)


def test_touched_files_are_read_again_and_the_saved_index_kept(
    bundle: Path, tmp_path: Path
) -> None:
    """A reopen after files were touched (content unchanged) reads those
    files again and, finding the text the index holds, uses the saved index
    and writes no new cache file (docs/spec.md §9.4)."""
    cache = tmp_path / "cache"
    first, _ = cached(bundle, cache)
    assert first.cache_file is not None
    written = first.cache_file.stat()
    age(bundle, HOUR_AGO + 60)  # every file touched
    b, snap = cached(bundle, cache)
    assert (b.cache_status, b.made_by, b.cache_reread) == ("partial", "load, index kept", 3)
    assert snap == fresh(bundle) and b.diagnostics == first.diagnostics
    assert _same_file(first.cache_file.stat(), written)  # not rewritten
    plain = Bundle.load(bundle, cache=False)
    for q in ("order", "alpha body", "beta"):
        assert b.search(q, scorer="bm25f") == plain.search(q, scorer="bm25f")
    # The same files are read again by the next load, which keeps it again.
    again = Bundle.load(bundle, cache_dir=cache)
    assert (again.cache_status, again.made_by, again.cache_reread) == (
        "partial",
        "load, index kept",
        3,
    )


def test_an_edit_outside_the_indexed_fields_keeps_the_index(bundle: Path, tmp_path: Path) -> None:
    """Fields the index does not read (type, stale_after, authority,
    governance) are taken from the file read again; the index is kept."""
    cache = tmp_path / "cache"
    cached(bundle, cache)
    (bundle / "a.md").write_text(
        "---\ntype: U\ntitle: Alpha order\ntags: [x]\nstale_after: 2001-01-01\n"
        "authority: canonical\nconflicts_with: [b]\n---\nbody a\n"
    )
    age(bundle, HOUR_AGO + 60)
    b, snap = cached(bundle, cache)
    assert (b.cache_status, b.made_by) == ("partial", "load, index kept")
    plain = Bundle.load(bundle, cache=False)
    assert snap == fresh(bundle) and b.concept("a").type == "U"
    assert b.stale_after_us().tolist() == plain.stale_after_us().tolist()
    assert b.authority_ranks().tolist() == plain.authority_ranks().tolist()

    def decls(x: Bundle) -> list[tuple[int, list[str], list[str], list[str]]]:
        return [
            (g.position, g.supersedes, g.superseded_by, g.conflicts_with) for g in x.governance()
        ]

    assert decls(b) == decls(plain) and len(decls(b)) == 2


@pytest.mark.parametrize(
    "edit",
    [
        "---\ntype: T\ntitle: Alpha changed\ntags: [x]\n---\nbody a\n",  # title
        "---\ntype: T\ntitle: Alpha order\ntags: [y]\n---\nbody a\n",  # tags
        "---\ntype: T\ntitle: Alpha order\ntags: [x]\n---\nbody b\n",  # body
        "---\ntitle: [broken\n---\n",  # no concept any more
    ],
)
def test_an_edit_of_indexed_text_splices_the_saved_index(
    bundle: Path, tmp_path: Path, edit: str
) -> None:
    cache = tmp_path / "cache"
    cached(bundle, cache)
    (bundle / "a.md").write_text(edit)
    age(bundle, HOUR_AGO + 60)
    b, snap = cached(bundle, cache)
    assert (b.cache_status, b.made_by) == ("partial", "load, index spliced")
    assert snap == fresh(bundle)
    plain = Bundle.load(bundle, cache=False)
    for q in ("order", "alpha body", "beta", "changed", "b"):
        assert bm25f_answers(b, q) == bm25f_answers(plain, q)


def bm25f_answers(b: Bundle, text: str) -> Any:
    """BM25F's statistics, ranking (score bits) and explanation of every
    concept for ``text``."""
    params = BM25FParams()
    query = b.bm25f_query(text, params)
    stats = b.bm25f_stats(query.tokens)
    positions, scores = b.search_bm25f(query, stats, params)
    explained = [
        [
            (t.token, t.idf, t.weighted_tf, t.score)
            + tuple((f.field, f.tf, f.length, f.weighted_tf, f.contribution) for f in t.fields)
            for t in b.explain_bm25f(p, query, stats, params)
        ]
        for p in range(len(b))
    ]
    return (stats.n, stats.totals, stats.df, positions.tolist(), scores.tobytes(), explained)


def test_frequencies_of_256_and_more_reopen_as_built(tmp_path: Path) -> None:
    """A token said 256 times or more in a concept keeps its frequencies in
    two bytes (the others in one): a reopen from the cache file, and a splice
    that makes a token wide or narrow, rank and explain as a fresh load."""
    files = {
        "a.md": "---\ntype: T\ntitle: Vacuum\n---\n" + "vacuum " * 300 + "\n",
        "b.md": "---\ntype: T\ntitle: Logs\n---\n" + "logs vacuum " * 255 + "\n",
        "c.md": "---\ntype: T\ntitle: Other\n---\nvacuum logs other\n",
    }
    root = write_bundle(tmp_path / "kb", files)
    age(root)
    cache = tmp_path / "cache"
    Bundle.load(root, cache_dir=cache)
    again = Bundle.load(root, cache_dir=cache)
    assert again.cache_status == "hit"
    plain = Bundle.load(root, cache=False)
    queries = ("vacuum", "logs", "vacuum logs other")
    for q in queries:
        assert bm25f_answers(again, q) == bm25f_answers(plain, q), q
    query = again.bm25f_query("vacuum", BM25FParams())
    [vacuum] = again.explain_bm25f(0, query, again.bm25f_stats(query.tokens), BM25FParams())
    assert [f.tf for f in vacuum.fields] == [1, 0, 0, 300]
    # "logs" becomes wide, "vacuum" narrow.
    (root / "a.md").write_text("---\ntype: T\ntitle: Vacuum\n---\nvacuum\n")
    (root / "c.md").write_text("---\ntype: T\ntitle: Other\n---\n" + "logs " * 400 + "\n")
    age(root, HOUR_AGO + 60)
    spliced = Bundle.load(root, cache_dir=cache)
    assert spliced.made_by == "load, index spliced"
    plain = Bundle.load(root, cache=False)
    for q in queries:
        assert bm25f_answers(spliced, q) == bm25f_answers(plain, q), q


def test_a_reopen_after_a_few_edits_splices_the_saved_index(tmp_path: Path) -> None:
    """Two bodies edited, one file added and one removed: the reopen takes
    the other files from the cache file and splices the saved index with the
    few read again (docs/spec.md §9.4), with exactly the results of a load
    without cache; the cache file is left as it was, so the next reopen does
    the same."""
    files = {
        f"{'sub/' if i % 4 == 0 else ''}c{i:02}.md": (
            "---\ntitle: [broken\n---\n"
            if i % 11 == 10
            else f"---\ntype: T\ntitle: Title {i} order\ntags: [k{i % 3}]\n"
            f"description: about {i % 5}\n---\nbody {i} w{i % 7} gone{i} order\n"
        )
        for i in range(40)
    }
    root = write_bundle(tmp_path / "kb", files)
    age(root)
    cache = tmp_path / "cache"
    first, _ = cached(root, cache)
    assert first.cache_status == "miss" and first.cache_file is not None
    written = first.cache_file.stat()
    (root / "c05.md").write_text("---\ntype: T\ntitle: Title 5\n---\nedited body w3 w3\n")
    (root / "sub" / "c08.md").write_text("---\ntype: T\ntitle: Title 8\ntags: [k2]\n---\nedited\n")
    (root / "c06b.md").write_text("---\ntype: T\ntitle: added\ntags: [k1]\n---\nadded order\n")
    (root / "c07.md").unlink()
    plain = Bundle.load(root, cache=False)
    queries = ("order", "edited", "w3 body", "added", "gone7", "gone5", "title 8", "about 2", "zzz")
    for _ in range(2):
        b = Bundle.load(root, cache_dir=cache)
        assert (b.cache_status, b.made_by, b.cache_reread) == ("partial", "load, index spliced", 3)
        assert b.concept_ids == plain.concept_ids and b.diagnostics == plain.diagnostics
        assert [b.concept(c) for c in b.concept_ids] == [
            plain.concept(c) for c in plain.concept_ids
        ]
        for q in queries:
            assert b.search(q) == plain.search(q), q
            assert b.search(q, tag="k2") == plain.search(q, tag="k2"), q
            assert b.search(q, scorer="bm25f") == plain.search(q, scorer="bm25f"), q
            assert bm25f_answers(b, q) == bm25f_answers(plain, q), q
        assert _same_file(first.cache_file.stat(), written)  # not rewritten


def test_a_part_has_its_own_cache_file_and_splices_it_after_edits(tmp_path: Path) -> None:
    """docs/spec.md §1.10, §9.4: a part of a bundle reopens through its own
    cache file; an edit in its range splices its saved index, an edit in
    another range is not even looked at."""
    files = {
        f"c{i:02}.md": f"---\ntype: T\ntitle: T{i}\n---\nbody {i} w{i % 3}\n" for i in range(30)
    }
    root = write_bundle(tmp_path / "kb", files)
    age(root)
    cache = tmp_path / "cache"
    whole = Bundle.load(root, cache_dir=cache)
    part = Bundle.load(root, id_range=(None, "c15"), cache_dir=cache)
    assert part.cache_status == "miss" and part.cache_file != whole.cache_file
    (root / "c05.md").write_text("---\ntype: T\ntitle: T5\n---\nedited w2 w2\n")
    (root / "c20.md").write_text("---\ntype: T\ntitle: T20\n---\nedited elsewhere\n")
    again = Bundle.load(root, id_range=(None, "c15"), cache_dir=cache)
    assert (again.cache_status, again.made_by, again.cache_reread) == (
        "partial",
        "load, index spliced",
        1,
    )
    plain = Bundle.load(root, id_range=(None, "c15"), cache=False)
    assert again.concept_ids == plain.concept_ids == tuple(f"c{i:02}" for i in range(15))
    for q in ("edited", "w2", "body", "elsewhere"):
        assert again.search(q) == plain.search(q), q
        assert bm25f_answers(again, q) == bm25f_answers(plain, q), q


def test_a_reopen_lists_only_the_directories_that_changed(bundle: Path, tmp_path: Path) -> None:
    """``cache_reread`` and ``cache_listed`` say what a load through the cache
    read from disk: an unchanged reopen lists no directory and reads no file;
    a file added to ``sub`` makes ``sub`` (only) listed and that file read."""
    time.sleep(2.1)  # a directory's ctime cannot be backdated: leave the racy window
    cache = tmp_path / "cache"
    plain = Bundle.load(bundle, cache=False)
    assert plain.cache_reread is None and plain.cache_listed is None
    first = Bundle.load(bundle, cache_dir=cache)
    assert (first.cache_status, first.cache_reread, first.cache_listed) == ("miss", 3, 2)
    again, snap = cached(bundle, cache)
    assert (again.cache_status, again.cache_reread, again.cache_listed) == ("hit", 0, 0)
    assert snap == fresh(bundle)
    (bundle / "sub" / "c.md").write_text("---\ntype: T\ntitle: Gamma\n---\norder\n")
    age(bundle)
    later, snap = cached(bundle, cache)
    assert (later.cache_status, later.cache_reread, later.cache_listed) == ("partial", 1, 1)
    assert snap == fresh(bundle) and "sub/c" in later.concept_ids


def test_a_recently_modified_file_is_never_trusted(bundle: Path, tmp_path: Path) -> None:
    """Same size, same modification time, new content, within the racy window:
    the cache must not serve the old content."""
    cache = tmp_path / "cache"
    (bundle / "a.md").write_text("---\ntype: T\ntitle: Alpha\n---\nbody one\n")
    st = (bundle / "a.md").stat()
    cached(bundle, cache)
    (bundle / "a.md").write_text("---\ntype: T\ntitle: Alpha\n---\nbody two\n")
    os.utime(bundle / "a.md", ns=(st.st_atime_ns, st.st_mtime_ns))
    b, snap = cached(bundle, cache)
    assert b.cache_status == "partial"
    assert b.search("two")[0].concept_id == "a" and snap == fresh(bundle)


def _damage(kind: str, data: bytes) -> bytes:
    if kind == "truncated":
        return data[: len(data) // 2]
    if kind == "empty":
        return b""
    if kind == "bit-flip":
        mid = len(data) - 10
        return data[:mid] + bytes([data[mid] ^ 0x40]) + data[mid + 1 :]
    if kind == "magic":
        return b"PICKLE\0\0" + data[8:]
    if kind == "version":
        i = data.index(b"0.1.0")
        return data[:i] + b"9.9.9" + data[i + 5 :]
    if kind == "trailing":
        return data + b"\0"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["truncated", "empty", "bit-flip", "magic", "version", "trailing"])
def test_a_bad_cache_file_is_reported_once_and_rebuilt(
    bundle: Path, tmp_path: Path, kind: str
) -> None:
    cache = tmp_path / "cache"
    first, want = cached(bundle, cache)
    assert first.cache_file is not None
    first.cache_file.write_bytes(_damage(kind, first.cache_file.read_bytes()))
    with pytest.warns(CacheWarning, match="rebuilt"):
        b, snap = cached(bundle, cache)
    assert b.cache_status == "rebuilt" and snap == want
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again, snap2 = cached(bundle, cache)
    assert again.cache_status == "hit" and snap2 == want


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_where_the_cache_file_belongs_is_rebuilt_not_waited_on(
    bundle: Path, tmp_path: Path
) -> None:
    """Opening a FIFO for reading waits for a writer: a load must not."""
    cache = tmp_path / "cache"
    first, want = cached(bundle, cache)
    assert first.cache_file is not None
    first.cache_file.unlink()
    os.mkfifo(first.cache_file)
    # In a child, so a regression hangs one process, bounded, not the suite.
    child = subprocess.run(
        [sys.executable, "-c", CHILD_LOAD, str(bundle), str(cache)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert child.stdout.split("\n")[0] == "rebuilt"
    assert "not a regular file" in child.stdout
    again, snap = cached(bundle, cache)
    assert again.cache_status == "hit" and snap == want


CHILD_LOAD = """
import sys, warnings
import okfast
with warnings.catch_warnings(record=True):
    warnings.simplefilter("always")
    b = okfast.Bundle.load(sys.argv[1], cache_dir=sys.argv[2])
print(b.cache_status)
print(b.cache_detail)
"""


def test_another_bundles_cache_file_is_not_trusted(tmp_path: Path) -> None:
    a = write_bundle(tmp_path / "a", {"x.md": "---\ntype: T\ntitle: from a\n---\n"})
    b = write_bundle(tmp_path / "b", {"x.md": "---\ntype: T\ntitle: from b\n---\n"})
    age(a)
    age(b)
    cache = tmp_path / "cache"
    fa, _ = cached(a, cache)
    fb, _ = cached(b, cache)
    assert fa.cache_file and fb.cache_file and fa.cache_file != fb.cache_file
    fb.cache_file.write_bytes(fa.cache_file.read_bytes())
    with pytest.warns(CacheWarning, match="another bundle root"):
        got, snap = cached(b, cache)
    assert got.concept("x").title == "from b" and snap == fresh(b)


def test_never_written_inside_the_bundle(bundle: Path) -> None:
    b = Bundle.load(bundle, cache_dir=bundle / ".okfast")
    assert b.cache_status == "off" and "inside the bundle" in b.cache_detail
    assert not (bundle / ".okfast").exists()


def test_cache_can_be_turned_off(
    bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert Bundle.load(bundle, cache=False).cache_status == "off"
    monkeypatch.setenv("OKFAST_CACHE_DIR", "off")
    assert Bundle.load(bundle).cache_status == "off"
    monkeypatch.setenv("OKFAST_CACHE_DIR", str(tmp_path / "env-cache"))
    assert Bundle.load(bundle).cache_status == "miss" and (tmp_path / "env-cache").is_dir()


def test_a_home_that_cannot_be_found_loads_without_the_cache(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/spec.md §9.1: a cache directory that names no path runs the load
    without the cache, also when it is `~user` of no user, or `~/.cache`
    with no home to be found — not a RuntimeError from pathlib."""
    monkeypatch.setenv("OKFAST_CACHE_DIR", "~no-such-user-okfast/cache")
    b = Bundle.load(bundle)
    assert b.cache_status == "off" and len(b) > 0
    assert b.cache_detail.startswith(
        "cache directory $OKFAST_CACHE_DIR '~no-such-user-okfast/cache' is unusable ("
    )
    assert b.cache_detail.endswith("); not caching")
    monkeypatch.delenv("OKFAST_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def no_home(cls: type) -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", classmethod(no_home))
    b = Bundle.load(bundle)
    assert (b.cache_status, b.cache_detail) == (
        "off",
        "cache directory ~/.cache/okfast is unusable (Could not determine home directory.);"
        " not caching",
    )


LOADER = """
import sys
from okfast import Bundle
b = Bundle.load(sys.argv[1], cache_dir=sys.argv[2])
print(b.cache_status, len(b), len(b.search("order")))
"""


def test_concurrent_processes_share_one_cache(tmp_path: Path) -> None:
    files = {
        f"d{i % 7}/c{i}.md": f"---\ntype: T\ntitle: order {i}\n---\nbody {i}\n" for i in range(300)
    }
    root = write_bundle(tmp_path / "kb", files)
    age(root)
    cache = tmp_path / "cache"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LOADER, str(root), str(cache)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    outs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert {tuple(o[1:]) for o in outs} == {("300", "300")}
    assert {o[0] for o in outs} <= {"miss", "hit", "partial"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b, snap = cached(root, cache)
    assert b.cache_status == "hit" and snap == fresh(root)


KILLED_WHILE_WRITING = """
import os, signal, sys, threading, time, okfast
cache = sys.argv[2]
own = f".tmp-{os.getpid()}-"
def kill_once_writing():
    while True:
        if os.path.isdir(cache) and any(own in n for n in os.listdir(cache)):
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.0002)
threading.Thread(target=kill_once_writing, daemon=True).start()
okfast.Bundle.load(sys.argv[1], cache_dir=cache)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and flock are POSIX")
def test_a_temporary_file_a_killed_load_left_is_removed_by_the_next_write(tmp_path: Path) -> None:
    """A load killed while it writes its cache file runs no clean-up: the
    next load that writes a cache file in that directory removes what it
    left, and only that: a file another writer still holds stays
    (docs/spec.md §9.5)."""
    import fcntl
    import signal

    # Large enough that the load is still writing when the watcher sees its
    # temporary file (the native load runs without the GIL).
    files = {
        f"d{i % 13}/c{i}.md": f"---\ntype: T\ntitle: t{i}\n---\n{'body ' * 40}{i}\n"
        for i in range(4000)
    }
    root = write_bundle(tmp_path / "kb", files)
    other = write_bundle(tmp_path / "other", files)
    cache = tmp_path / "cache"
    for r in (root, other):
        p = subprocess.run([sys.executable, "-c", KILLED_WHILE_WRITING, str(r), str(cache)])
        assert p.returncode == -signal.SIGKILL
    left = sorted(p for p in cache.iterdir() if ".tmp-" in p.name)
    assert len(left) == 2 and not list(cache.glob("*.okfc"))
    # Settled, as they are once their writers' last writes are 2 s old.
    for p in left:
        os.utime(p, (HOUR_AGO, HOUR_AGO))
    held = open(left[1], "rb")  # noqa: SIM115 - held across the load below
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        b = Bundle.load(root, cache_dir=cache)
        assert b.cache_status == "miss"
        assert not left[0].exists() and left[1].exists()
    finally:
        held.close()
    assert Bundle.load(other, cache_dir=cache).cache_status == "miss"
    assert sorted(p.suffix for p in cache.iterdir()) == [".okfc", ".okfc"]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    before=bundle_files(),
    rounds=st.lists(
        st.tuples(
            st.lists(
                st.tuples(st.integers(0, 20), st.one_of(st.none(), concept_bytes())), max_size=5
            ),
            st.dictionaries(
                st.sampled_from(["n1.md", "new/n2.md", "z.md"]), concept_bytes(), max_size=2
            ),
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_cached_reopen_equals_a_fresh_load(
    tmp_path_factory: pytest.TempPathFactory,
    before: dict[str, bytes],
    rounds: list[tuple[list[tuple[int, bytes | None]], dict[str, bytes]]],
) -> None:
    """Rounds of edits, removals and additions, each reopened through the
    cache file the round before left (a spliced load writes one, docs/spec.md
    §9.5): every reopen answers as a fresh load."""
    base = tmp_path_factory.mktemp("cached")
    root = write_bundle(base / "kb", dict(before))
    age(root)
    cache = base / "cache"
    assert cached(root, cache)[1] == fresh(root)
    names = sorted(before)
    for r, (changes, added) in enumerate(rounds):
        # Only the files written are dated anew: the others keep the stamps
        # their records hold, so their records and texts are reused.
        written = [root / name for name in added]
        for i, content in changes:
            if not names:
                break
            p = root / names[i % len(names)]
            if content is None:
                p.unlink(missing_ok=True)
            elif p.parent.is_dir():
                p.write_bytes(content)
                written.append(p)
        write_bundle(root, dict(added))
        when = HOUR_AGO + 120 * (r + 1)
        for p in written:
            if p.is_file():
                os.utime(p, (when, when))
        b, snap = cached(root, cache)
        assert b.cache_status in ("hit", "partial") and snap == fresh(root)
    # Reopened unchanged: concepts and the saved index come from the cache
    # (a reopen that kept the index wrote no new file: it keeps it again).
    again = Bundle.load(root, cache_dir=cache)
    assert again.cache_status == "hit" or (
        again.cache_status == "partial"
        and again.made_by in ("load, index kept", "load, index spliced")
    )
    plain = Bundle.load(root, cache=False)
    words = {w for i in range(len(plain)) for w in plain.body_at(i).split()[:6]}
    words |= {w[1:4] for w in words if len(w) > 3} | {"a", "x", "é"}
    for q in sorted(words)[:40]:
        assert again.search(q) == plain.search(q), q
        assert again.search(q, scorer="bm25f") == plain.search(q, scorer="bm25f"), q
        for tag in ("x", "A"):
            assert again.search(q, tag=tag) == plain.search(q, tag=tag)


def test_texts_are_served_from_the_cache_file_not_memory(bundle: Path, tmp_path: Path) -> None:
    """Through the cache, bodies and frontmatter stay in the cache file (after
    the first load as after a reopen); without it they are in memory. Either
    way every text reads back exactly."""
    cache = tmp_path / "cache"
    plain = Bundle.load(bundle, cache=False)
    assert plain.stored_texts == 0
    first, snap = cached(bundle, cache)
    assert first.cache_status == "miss" and first.stored_texts == len(first) > 0
    age(bundle)
    cached(bundle, cache)  # rewritten once the files are old enough to trust
    again, snap2 = cached(bundle, cache)
    assert again.cache_status == "hit" and again.stored_texts == len(again)
    assert snap == snap2 == fresh(bundle)
    # A reopen that splices the saved index writes a new cache file and serves
    # every text from it, the file read again included; the old snapshot
    # keeps reading its own file, removed from the directory.
    (bundle / "a.md").write_text("---\ntype: T\ntitle: Alpha order\n---\nnew body\n")
    age(bundle)
    later, snap3 = cached(bundle, cache)
    assert (later.cache_status, later.made_by) == ("partial", "load, index spliced")
    assert later.stored_texts == len(later)
    assert snap3 == fresh(bundle)
    assert snapshot(again) == snap2
    # A file edited within the load's racy window (docs/spec.md §9.4) would
    # not be trusted from a new file: the splice then leaves the file, and
    # the file read again stays in memory.
    (bundle / "a.md").write_text("---\ntype: T\ntitle: Alpha order\n---\nnewer body\n")
    (file,) = cache.glob("*.okfc")
    before = file.stat()
    recent, snap4 = cached(bundle, cache)
    assert (recent.cache_status, recent.made_by) == ("partial", "load, index spliced")
    assert recent.stored_texts == len(recent) - 1
    assert snap4 == fresh(bundle)
    assert _same_file(file.stat(), before)


def _flip_text(cache: Path, needle: bytes) -> None:
    """Flip one byte inside a stored text of the only cache file in `cache`."""
    (file,) = cache.glob("*.okfc")
    data = bytearray(file.read_bytes())
    at = data.index(needle)
    data[at] ^= 0x01
    file.write_bytes(bytes(data))


def test_a_text_damaged_after_opening_is_an_error_and_the_file_is_rebuilt(
    bundle: Path, tmp_path: Path
) -> None:
    """Texts are checked when read: a damaged one is never returned, the error
    names the cache file, the file is removed, and the next load rebuilds it."""
    cache = tmp_path / "cache"
    age(bundle)
    cached(bundle, cache)
    b, _ = cached(bundle, cache)
    assert b.cache_status == "hit"
    _flip_text(cache, b"order order")
    pos = b.position("sub/b")
    assert pos is not None
    with pytest.raises(CacheDamagedError, match=r"cache file .* was changed after it was written"):
        b.body_at(pos)
    with pytest.raises(CacheDamagedError):
        b.search("order")
    assert b.concept("a").body == "body a"  # others still read
    assert not list(cache.glob("*.okfc"))
    again, snap = cached(bundle, cache)
    assert again.cache_status == "miss" and snap == fresh(bundle)


def test_a_damaged_text_of_a_replaced_file_says_so(bundle: Path, tmp_path: Path) -> None:
    """docs/spec.md §9.6: when another file has replaced the damaged one, the
    error says so (it said "it has been removed", naming the healthy file
    now at that path), and the new file is left in place."""
    cache = tmp_path / "cache"
    age(bundle)
    cached(bundle, cache)
    b, _ = cached(bundle, cache)
    (file,) = cache.glob("*.okfc")
    healthy = file.read_bytes()
    _flip_text(cache, b"order order")
    (tmp_path / "new.okfc").write_bytes(healthy)
    os.replace(tmp_path / "new.okfc", file)
    pos = b.position("sub/b")
    assert pos is not None
    with pytest.raises(CacheDamagedError, match="another file has already replaced it"):
        b.body_at(pos)
    assert file.read_bytes() == healthy


def test_a_damaged_text_met_while_rebuilding_is_reported_and_reread(
    bundle: Path, tmp_path: Path
) -> None:
    """A partial reopen that rebuilds the index reads the kept texts back; one
    that fails its checksum makes the load read that file instead and report
    the cache as rebuilt. (Here the rebuild is for a file too recent to trust
    when the cache file was written: neither kept nor spliced, docs/spec.md
    §9.4.)"""
    cache = tmp_path / "cache"
    (bundle / "a.md").write_text("---\ntype: T\ntitle: Alpha\n---\nchanged\n")
    cached(bundle, cache)
    _flip_text(cache, b"order order")
    with pytest.warns(CacheWarning, match="does not read back"):
        b, snap = cached(bundle, cache)
    assert b.cache_status == "rebuilt" and snap == fresh(bundle)


def test_a_damaged_text_of_a_touched_file_is_met_and_rebuilt(bundle: Path, tmp_path: Path) -> None:
    """docs/spec.md §9.6: a reopen that compares a touched file with its
    record (to keep the saved index, §9.4) and meets the record's damaged
    text reports `rebuilt` with one warning and writes a new cache file (it
    reported a spliced `partial` and left no cache file behind)."""
    cache = tmp_path / "cache"
    cached(bundle, cache)
    _flip_text(cache, b"order order")
    os.utime(bundle / "sub" / "b.md", (HOUR_AGO + 60, HOUR_AGO + 60))
    with pytest.warns(CacheWarning, match="is corrupt \\(a text or record does not read back\\)"):
        b, snap = cached(bundle, cache)
    assert (b.cache_status, b.made_by) == ("rebuilt", "load")
    assert snap == fresh(bundle)
    assert b.cache_file is not None and b.cache_file.exists()
    again, snap2 = cached(bundle, cache)
    assert again.cache_status == "hit" and snap2 == snap


@pytest.mark.parametrize("where", ["a\x00b", "\ud800", ""])
def test_a_cache_directory_that_names_no_path_loads_without_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """docs/spec.md §9.1: the empty path is no directory either, not the
    working directory."""
    write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\ntitle: Alpha\n---\nalpha\n"})
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    b = Bundle.load(tmp_path / "kb", cache_dir=where)
    assert (b.cache_status, len(b)) == ("off", 1)
    assert b.cache_detail.startswith(f"cache directory {where!r} is unusable")
    assert list((tmp_path / "cwd").iterdir()) == []


@pytest.mark.parametrize("where", [3, b"/tmp/x", ["/tmp/x"]])
def test_a_cache_directory_that_is_not_a_path_is_a_type_error(
    tmp_path: Path, where: object
) -> None:
    """docs/spec.md §9.1: a cache directory is a path (text or os.PathLike),
    like a bundle's; anything else is okfast's type error naming it."""
    write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\ntitle: Alpha\n---\nalpha\n"})
    with pytest.raises(InvalidArgumentTypeError, match="a cache directory is text, got"):
        Bundle.load(tmp_path / "kb", cache_dir=where)  # type: ignore[arg-type]


@pytest.mark.parametrize("flag", ["no", 0, None])
def test_cache_that_is_not_a_bool_is_refused(tmp_path: Path, flag: object) -> None:
    """docs/spec.md §9.1: ``cache`` is a switch; ``"no"`` was read as on."""
    write_bundle(tmp_path / "kb", {"a.md": "---\ntype: T\ntitle: Alpha\n---\nalpha\n"})
    with pytest.raises(InvalidArgumentTypeError, match="cache must be True or False"):
        Bundle.load(tmp_path / "kb", cache_dir=tmp_path / "c", cache=flag)  # type: ignore[arg-type]
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize(("edited", "made_by"), [(40, "load, index spliced"), (65, "load")])
def test_an_edited_file_counts_once_against_the_few(
    tmp_path: Path, edited: int, made_by: str
) -> None:
    """docs/spec.md §9.4: an edited file is one file read again, its record
    not also one that no file matches (33 edits of 200 rebuilt the index and
    wrote the cache file again, as if 66 had changed)."""
    root = write_bundle(
        tmp_path / "kb",
        {f"c{i:03}.md": f"---\ntype: T\ntitle: T{i}\n---\nbody {i}\n" for i in range(200)},
    )
    age(root)
    cache = tmp_path / "cache"
    Bundle.load(root, cache_dir=cache)
    for i in range(edited):
        p = root / f"c{i:03}.md"
        p.write_text(f"---\ntype: T\ntitle: edited {i}\n---\nnew {i}\n")
        os.utime(p, (HOUR_AGO + 60, HOUR_AGO + 60))
    b = Bundle.load(root, cache_dir=cache)
    assert (b.cache_status, b.made_by, b.cache_reread) == ("partial", made_by, edited)
    plain = Bundle.load(root, cache=False)
    for q in ("edited", "body", "new", "t1"):
        assert b.search(q) == plain.search(q), q
        assert bm25f_answers(b, q) == bm25f_answers(plain, q), q
