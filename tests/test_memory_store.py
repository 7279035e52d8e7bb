"""``FileMemoryStore`` (SPEC §6.3): isolation, refusal of links and bad names,
malformed files left alone, deletion, and the knowledge scorer on memory."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import okfast
import pytest
from okfast.memory import (
    FileMemoryStore,
    MemoryConcept,
    MemoryDeleteResult,
    MemoryEntry,
    Scope,
    Tier,
    capture,
    files,
    memory_path,
)

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=timezone.utc)
DAY = "2026-11-30"

SCOPES = {
    "local": Scope.local(),
    "A": Scope("A"),
    "B": Scope("B"),
    "A/alice": Scope("A", "alice"),
    "A/bob": Scope("A", "bob"),
    "B/alice": Scope("B", "alice"),
    "A/alice/s1": Scope("A", "alice", "s1"),
    "A/alice/s2": Scope("A", "alice", "s2"),
}


def make_store(base: Path) -> FileMemoryStore:
    roots = {}
    for t in Tier:
        (base / t.value).mkdir(parents=True, exist_ok=True)
        roots[t] = base / t.value
    return FileMemoryStore(roots)


def entry(word: str, name: str = "note") -> MemoryEntry:
    return MemoryEntry(
        name=name,
        frontmatter={"type": "Note", "title": f"Note {word}", "description": "A test note."},
        section=f"The marker {word} is here.\n",
    )


def _level(tier: Tier, s: Scope) -> tuple[str | None, ...]:
    """The ids a tier's directory is keyed by, written out independently of memory_path."""
    return {
        Tier.TENANT: (s.tenant,),
        Tier.USER: (s.tenant, s.user),
        Tier.SESSION: (s.tenant, s.user, s.session),
    }[tier]


def _has_tier_id(tier: Tier, s: Scope) -> bool:
    return s.is_local or _level(tier, s)[-1] is not None


def expected_visible(writer: Scope, tier: Tier, reader: Scope) -> bool:
    """A reader sees a write when the tier applies to it and both scopes key that
    tier's directory by the same ids: its own memory and its ancestors'."""
    return _has_tier_id(tier, reader) and _level(tier, writer) == _level(tier, reader)


WRITES = [(wname, tier) for wname, w in SCOPES.items() for tier in Tier if _has_tier_id(tier, w)]


@pytest.mark.parametrize(("wname", "tier"), WRITES, ids=[f"{w}-{t.value}" for w, t in WRITES])
def test_isolation_matrix(tmp_path: Path, wname: str, tier: Tier) -> None:
    store = make_store(tmp_path)
    writer = SCOPES[wname]
    word = f"zq{wname.replace('/', 'x')}{tier.value}"
    assert store.write(writer, entry(word), tier).written
    for rname, reader in SCOPES.items():
        seen = store.read(reader, word)
        listed = [c.concept_id for c in store.enumerate(reader)]
        want = expected_visible(writer, tier, reader)
        assert (len(seen.passages) == 1) is want, (wname, tier, rname)
        assert (memory_path(tier, writer) + "/note" in listed) is want, (wname, tier, rname)
        assert not seen.diagnostics
    # The directory written belongs to the writer cut down to the tier's level
    # (tenant memory written from A/alice is tenant A's). It survives every
    # other scope's deletion, descendants' and ancestors' included ...
    owner = Scope(*_level(tier, writer))
    for other in SCOPES.values():
        if other != owner:
            assert store.delete_scope(other).error is None
    assert len(store.read(writer, word).passages) == 1
    # ... and goes with its owner's.
    assert tier in store.delete_scope(owner).tiers_deleted
    assert store.read(writer, word).passages == ()


def test_isolation_facts_spelled_out(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    s1, s2 = SCOPES["A/alice/s1"], SCOPES["A/alice/s2"]
    assert store.write(s1, entry("sessionword"), Tier.SESSION).written
    assert store.write(s1, entry("userword"), Tier.USER).written
    assert store.write(SCOPES["A"], entry("tenantword"), Tier.TENANT).written
    assert store.read(s2, "sessionword").passages == ()
    assert len(store.read(s2, "userword").passages) == 1  # the user's memory spans sessions
    assert store.read(SCOPES["A/bob"], "userword").passages == ()
    assert store.read(SCOPES["B/alice"], "userword").passages == ()
    assert len(store.read(SCOPES["A/bob"], "tenantword").passages) == 1
    assert store.read(SCOPES["B"], "tenantword").passages == ()
    assert store.read(SCOPES["local"], "tenantword").passages == ()


def test_read_order_is_session_user_tenant(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    s = Scope("A", "alice", "s1")
    for tier in (Tier.TENANT, Tier.USER, Tier.SESSION):
        assert store.write(s, entry("shared"), tier).written
    got = store.read(s, "shared").passages
    assert [p.source_id for p in got] == ["memory:session", "memory:user", "memory:tenant"]
    assert [p.concept_id for p in got] == [memory_path(t, s) + "/note" for t in Tier]


def test_case_distinct_users_are_separate(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    assert store.write(Scope("A", "Alice"), entry("capital"), Tier.USER).written
    assert store.read(Scope("A", "alice"), "capital").passages == ()
    assert len(store.read(Scope("A", "Alice"), "capital").passages) == 1


def _tree(base: Path) -> list[str]:
    return sorted(str(p.relative_to(base)) for p in base.rglob("*"))


@pytest.mark.parametrize(
    "name", ["..", "a/b", "a\\b", "", "_x/..", "\x00", ".hidden", "index", "log", "n" * 253]
)
def test_bad_entry_names_touch_nothing(tmp_path: Path, name: str) -> None:
    store = make_store(tmp_path)
    before = _tree(tmp_path)
    r = store.write(Scope("A", "alice"), entry("w", name=name), Tier.USER)
    assert not r.written and r.error
    assert _tree(tmp_path) == before


@pytest.mark.parametrize(
    "frontmatter",
    [
        {"title": "t", "description": "d"},
        {"type": " ", "title": "t", "description": "d"},
        {"type": "T", "title": 3, "description": "d"},
        {"type": "T", "title": "t", "description": "d", "bad key": "x"},
        {"type": "T", "title": "t", "description": "d", "when": datetime(2020, 1, 1)},
        {"type": "T", "title": "t", "description": "d", "f": 1.5},
        {"type": "T", "title": "\ud800", "description": "d"},
        {"type": "T", "title": "t", "description": "d", "tags": ["ok", "\udc80"]},
        {"type": "T", "title": "t", "description": "d", "n": {"k": "a\udfff"}},
    ],
)
def test_producer_validation_before_any_byte(
    tmp_path: Path, frontmatter: dict[str, object]
) -> None:
    store = make_store(tmp_path)
    before = _tree(tmp_path)
    r = store.write(Scope("A", "u"), MemoryEntry("n", frontmatter, "text\n"), Tier.USER)
    assert not r.written and r.error
    assert _tree(tmp_path) == before


def test_frontmatter_with_hostile_text_reads_back_exactly(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    title = 'a: b # c\n---\n"quoted" \\ \u2028 \x7f end'
    fm = {"type": "T", "title": title, "description": "d", "tags": ["x", 'y"z'], "n": {"k": 1}}
    assert store.write(Scope("A", "u"), MemoryEntry("n", fm, "body\n"), Tier.USER).written
    directory = Path(store.roots[Tier.USER]) / memory_path(Tier.USER, Scope("A", "u"))
    c = okfast.Bundle.load(directory).concept("n")
    assert c.title == title and c.tags == ("x", 'y"z') and c.frontmatter["n"] == {"k": "1"}


def test_unconfigured_or_inapplicable_tier_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "u").mkdir()
    store = FileMemoryStore({Tier.USER: tmp_path / "u"})
    r = store.write(Scope("A", "u"), entry("x"), Tier.SESSION)
    assert not r.written and "not configured" in (r.error or "")
    r = store.write(Scope("A"), entry("x"), Tier.USER)
    assert not r.written and "does not apply" in (r.error or "")
    r = store.write(Scope("A", "u"), entry("x"), "galaxy")
    assert not r.written and "unknown memory tier" in (r.error or "")
    assert _tree(tmp_path) == ["u"]


@pytest.mark.parametrize(
    "content",
    [
        b"---\ntype: T\ntitle: \xff\xfe broken utf-8\n---\nbody\n",
        b"---\ntype: T\ntitle: never closed\nbody\n",
        b"---\ntitle: [unterminated\n---\n",
    ],
    ids=["invalid-utf8", "unterminated", "bad-yaml"],
)
def test_malformed_existing_file_is_never_overwritten(tmp_path: Path, content: bytes) -> None:
    store = make_store(tmp_path)
    scope = Scope("A", "alice")
    directory = tmp_path / "user" / memory_path(Tier.USER, scope)
    directory.mkdir(parents=True)
    day = directory / f"{DAY}.md"
    day.write_bytes(content)
    r = capture(store, scope, "hello", "hi", now=NOW)
    assert not r.written and "does not parse" in (r.error or "")
    assert day.read_bytes() == content
    assert sorted(p.name for p in directory.iterdir()) == [".lock", f"{DAY}.md"]


def test_an_append_that_would_make_the_file_unreadable_is_refused(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    big = MemoryEntry("big", entry("x").frontmatter, "y" * (16 * 1024 * 1024) + "\n")
    r = store.write(Scope("A", "u"), big, Tier.USER)
    assert not r.written and "16 MiB" in (r.error or "")


# -- symbolic links ---------------------------------------------------------------


def _plant(tmp_path: Path, where: str) -> tuple[FileMemoryStore, Scope, Path]:
    """A link inside the user tier pointing at an outside directory holding a
    concept that would match; ``where`` says how deep."""
    store = make_store(tmp_path / "mem")
    scope = Scope("A", "alice")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("---\ntype: T\ntitle: secret\n---\nsecret marker\n")
    parts = memory_path(Tier.USER, scope).split("/")
    root = tmp_path / "mem" / "user"
    depth = {"tier-dir": 1, "tenant-dir": 2, "scope-dir": 3}[where]
    parent = root.joinpath(*parts[: depth - 1])
    parent.mkdir(parents=True, exist_ok=True)
    parent.joinpath(parts[depth - 1]).symlink_to(outside, target_is_directory=True)
    return store, scope, outside


@pytest.mark.parametrize("where", ["tier-dir", "tenant-dir", "scope-dir"])
def test_planted_symlink_is_refused_everywhere(tmp_path: Path, where: str) -> None:
    store, scope, outside = _plant(tmp_path, where)
    before = _tree(outside)
    read = store.read(scope, "secret")
    assert read.passages == ()
    assert [d.code for d in read.diagnostics] == ["SourceUnavailable"]
    assert "symbolic link" in read.diagnostics[0].message
    assert read.diagnostics[0].source_id == "memory:user"
    listing = store.enumerate(scope)
    assert list(listing) == [] and [d.code for d in listing.diagnostics] == ["SourceUnavailable"]
    w = capture(store, scope, "u", "a", now=NOW)
    assert not w.written and "symbolic link" in (w.error or "")
    d = store.delete_scope(scope)
    assert d.tiers_deleted == () and "symbolic link" in (d.error or "")
    assert _tree(outside) == before  # nothing written, nothing deleted out there


def test_tier_root_that_is_a_link_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    store = FileMemoryStore({Tier.USER: tmp_path / "link"})
    w = store.write(Scope("A", "u"), entry("x"), Tier.USER)
    assert not w.written and "symbolic link" in (w.error or "")
    assert [d.code for d in store.read(Scope("A", "u"), "x").diagnostics] == ["SourceUnavailable"]
    assert list(real.iterdir()) == []


def test_a_missing_tier_root_is_an_error_for_a_delete_as_for_a_read_and_a_write(
    tmp_path: Path,
) -> None:
    # An erasure that found no root (an unmounted volume) proves nothing.
    (tmp_path / "s").mkdir()
    store = FileMemoryStore({Tier.USER: tmp_path / "absent", Tier.SESSION: tmp_path / "s"})
    scope = Scope("A", "u")
    d = store.delete_scope(scope, cascade=True)
    assert d.tiers_deleted == ()
    assert d.error == f"user: refused: memory tier root {tmp_path / 'absent'} is missing"
    assert not store.write(scope, entry("x"), Tier.USER).written
    assert [x.code for x in store.read(scope, "x").diagnostics] == ["SourceUnavailable"]
    assert not (tmp_path / "absent").exists()


def test_day_file_that_is_a_link_is_refused(tmp_path: Path) -> None:
    store = make_store(tmp_path / "mem")
    scope = Scope("A", "alice")
    directory = tmp_path / "mem" / "user" / memory_path(Tier.USER, scope)
    directory.mkdir(parents=True)
    target = tmp_path / "target.md"
    target.write_text("---\ntype: T\ntitle: x\n---\nlinked marker\n")
    (directory / f"{DAY}.md").symlink_to(target)
    w = capture(store, scope, "u", "a", now=NOW)
    assert not w.written and "symbolic link" in (w.error or "")
    assert target.read_text().endswith("linked marker\n")
    read = store.read(scope, "linked")
    assert read.passages == () and [d.code for d in read.diagnostics] == ["SymlinkSkipped"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_at_a_concepts_path_is_refused_without_waiting(tmp_path: Path) -> None:
    """docs/spec.md §6.3: a FIFO where the concept's file goes is refused at
    once; a blocking open would wait for a writer, holding the scope's lock."""
    import threading

    store = make_store(tmp_path / "mem")
    scope = Scope("A", "alice")
    assert store.write(scope, entry("first", name="first"), Tier.USER).written
    directory = tmp_path / "mem" / "user" / memory_path(Tier.USER, scope)
    os.mkfifo(directory / "pipe.md")
    done: list[Any] = []
    worker = threading.Thread(
        target=lambda: done.append(store.write(scope, entry("x", name="pipe"), Tier.USER)),
        daemon=True,
    )
    worker.start()
    worker.join(30)
    assert done, "the write waited on the FIFO"
    assert not done[0].written and "not a regular file" in (done[0].error or "")
    assert store.write(scope, entry("other", name="other"), Tier.USER).written


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_at_a_scopes_lock_file_blocks_nothing(tmp_path: Path) -> None:
    """docs/spec.md §6.3: a FIFO planted where a scope's lock file is does
    not block a read, a write or a delete (a blocking open would wait for a
    writer forever); it is locked as the lock file was."""
    import threading

    store = make_store(tmp_path / "mem")
    scope = Scope("A", "alice")
    assert store.write(scope, entry("first"), Tier.USER).written
    locks = sorted((tmp_path / "mem" / "user").rglob(files.LOCK_NAME))
    assert len(locks) == 2
    for lock in locks:
        lock.unlink()
        os.mkfifo(lock)
    done: list[Any] = []

    def work() -> None:
        done.append([p.concept_id for p in store.read(scope, "first").passages])
        done.append(store.write(scope, entry("second"), Tier.USER).written)
        done.append(store.delete_scope(scope).error)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(30)
    assert done == [[f"{memory_path(Tier.USER, scope)}/note"], True, None], done


# -- deletion -------------------------------------------------------------------


def test_a_cascade_delete_waits_for_a_write_below_it(tmp_path: Path) -> None:
    """docs/spec.md §6.3: a writer holds the directories above its own
    shared, so a tenant's erasure cannot rename them aside mid-write (the
    write would land in the renamed copy: lost, and left on disk)."""
    import contextlib
    import threading
    import time

    from okfast.memory import files

    store = make_store(tmp_path / "mem")
    parts = memory_path(Tier.USER, Scope("A", "alice")).split("/")
    root_fd = files.open_root(str(tmp_path / "mem" / "user"))
    assert root_fd is not None
    deleted: list[Any] = []
    with contextlib.ExitStack() as held:
        held.callback(os.close, root_fd)
        fd = files.lock_chain(root_fd, parts, held)
        assert fd is not None
        eraser = threading.Thread(
            target=lambda: deleted.append(store.delete_scope(Scope("A"), cascade=True))
        )
        eraser.start()
        time.sleep(0.3)
        assert not deleted, "the erasure did not wait for the write"
        files.replace_file(fd, "n.md", b"---\ntype: T\ntitle: n\n---\nwritten first\n")
    eraser.join(30)
    assert deleted and deleted[0].error is None and Tier.USER in deleted[0].tiers_deleted
    assert list((tmp_path / "mem" / "user").rglob("*.md")) == []


def test_writes_racing_a_cascade_delete_are_kept_or_erased_whole(tmp_path: Path) -> None:
    """Writers below a tenant while it is erased again and again: no error,
    nothing left renamed aside, and every write begun after the last erasure
    returned is read back (docs/spec.md §6.3, §9.8)."""
    import threading
    import time

    store = make_store(tmp_path / "mem")
    stop = threading.Event()
    began: list[tuple[float, int, int]] = []
    errors: list[str] = []
    last_erasure = [0.0]

    def writer(k: int) -> None:
        mine = FileMemoryStore(store.roots)
        for i in range(10**9):
            if stop.is_set():
                return
            t0 = time.monotonic()
            r = mine.write(Scope("t", f"u{k}"), entry(f"w{k}x{i}"), Tier.USER)
            (began.append((t0, k, i)) if r.written else errors.append(r.error or "?"))

    def eraser() -> None:
        mine = FileMemoryStore(store.roots)
        while not stop.is_set():
            r = mine.delete_scope(Scope("t"), cascade=True)
            last_erasure[0] = time.monotonic()
            if r.error:
                errors.append(r.error)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
    threads.append(threading.Thread(target=eraser))
    for t in threads:
        t.start()
    time.sleep(1.5)
    stop.set()
    for t in threads:
        t.join(60)
    assert errors == []
    aside = [p for p in (tmp_path / "mem").rglob(".deleted-*")]
    assert aside == []
    for t0, k, i in began:
        if t0 > last_erasure[0]:
            bodies = store.enumerate(Scope("t", f"u{k}"), bodies=True).concepts
            assert any(f"w{k}x{i}" in (c.body or "") for c in bodies)


def test_delete_scope_removes_only_what_the_scope_owns(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    a, alice, s1 = Scope("A"), Scope("A", "alice"), Scope("A", "alice", "s1")
    assert store.write(a, entry("tenantmark"), Tier.TENANT).written
    assert store.write(alice, entry("usermark"), Tier.USER).written
    assert store.write(s1, entry("sessionmark"), Tier.SESSION).written
    r = store.delete_scope(alice)
    assert r.tiers_deleted == (Tier.USER,) and r.error is None
    assert store.read(s1, "tenantmark").passages and store.read(s1, "sessionmark").passages
    assert store.read(alice, "usermark").passages == ()
    # An ancestor's tier is not the scope's to delete.
    r = store.delete_scope(alice, Tier.TENANT)
    assert r.tiers_deleted == () and "owns user memory" in (r.error or "")
    # Erasure of the user with cascade takes the sessions too, not the tenant's memory.
    assert store.write(alice, entry("usermark"), Tier.USER).written
    r = store.delete_scope(alice, cascade=True)
    assert r.tiers_deleted == (Tier.SESSION, Tier.USER)
    assert store.read(s1, "sessionmark").passages == () and store.read(s1, "tenantmark").passages
    # Nothing is left behind, hidden or not, but the tenant directory's empty
    # lock file, which writers below it hold shared (docs/spec.md §6.3).
    user_dir = tmp_path / "user" / memory_path(Tier.USER, alice)
    assert not user_dir.exists()
    assert [p.name for p in user_dir.parent.iterdir()] == [".lock"]
    assert (user_dir.parent / ".lock").stat().st_size == 0


def _left_aside(parent: Path, locked: bool) -> tuple[Path, int | None]:
    """A scope directory a delete renamed aside and did not finish removing:
    killed (its lock free), or still at work (its lock held, fd returned)."""
    aside = parent / ".deleted-0123456789abcdef"
    (aside / "sub").mkdir(parents=True)
    (aside / "note.md").write_text("erased words")
    (aside / "sub" / "x.md").write_text("erased words")
    (aside / ".lock").write_text("")
    fd = None
    if locked:
        import fcntl

        fd = os.open(aside / ".lock", os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
    return aside, fd


@pytest.mark.parametrize("then", ["delete", "write"])
def test_what_a_killed_delete_left_aside_is_removed(tmp_path: Path, then: str) -> None:
    """docs/spec.md §6.3: nothing a delete renamed aside is left behind, even
    when the delete was killed; one still at work is left to it."""
    store = make_store(tmp_path)
    alice, bob = Scope("A", "alice"), Scope("A", "bob")
    assert store.write(alice, entry("usermark"), Tier.USER).written
    parent = (tmp_path / "user" / memory_path(Tier.USER, alice)).parent
    killed, _ = _left_aside(parent, locked=False)
    if then == "delete":
        assert store.delete_scope(alice) == MemoryDeleteResult((Tier.USER,), None)
    else:
        assert store.write(bob, entry("bobmark"), Tier.USER).written
    assert not killed.exists()
    # A delete at work holds its lock: its directory is its own to remove.
    working, fd = _left_aside(parent, locked=True)
    assert fd is not None
    try:
        store.delete_scope(bob)
        assert store.write(alice, entry("again"), Tier.USER).written
        assert working.exists()
    finally:
        os.close(fd)
    store.delete_scope(bob)
    assert not working.exists()


def test_a_parent_with_nothing_aside_is_listed_again_only_once_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/spec.md §6.3: a write beside a killed delete's leftover removes it,
    but a parent whose times have not moved since a look found nothing aside
    is not listed again (a tenant of many users listed at every write)."""
    from okfast.memory import files

    store = make_store(tmp_path)
    alice, bob = Scope("A", "alice"), Scope("A", "bob")
    assert store.write(alice, entry("one"), Tier.USER).written
    parent = (tmp_path / "user" / memory_path(Tier.USER, alice)).parent
    listed: list[int] = []
    scandir = os.scandir

    def counted(fd: Any) -> Any:
        listed.append(os.fstat(fd).st_ino)
        return scandir(fd)

    monkeypatch.setattr(files.os, "scandir", counted)
    ino = parent.stat().st_ino
    # Changed within the last 2 s: listed at every write.
    assert store.write(alice, entry("two"), Tier.USER).written
    assert store.write(alice, entry("three"), Tier.USER).written
    assert listed.count(ino) == 2
    old = parent.stat().st_mtime - 10
    os.utime(parent, (old, old))
    assert store.write(alice, entry("four"), Tier.USER).written  # looks, finds nothing
    assert store.write(alice, entry("five"), Tier.USER).written  # nothing moved
    assert listed.count(ino) == 3
    assert store.write(bob, entry("six"), Tier.USER).written  # makes bob's directory
    assert store.write(bob, entry("seven"), Tier.USER).written
    assert listed.count(ino) == 5
    os.utime(parent, (old, old))
    assert store.write(alice, entry("eight"), Tier.USER).written
    assert store.write(alice, entry("nine"), Tier.USER).written
    assert listed.count(ino) == 6
    killed, _ = _left_aside(parent, locked=False)
    os.utime(parent, (old + 1, old + 1))  # settled still, but moved
    assert store.write(alice, entry("ten"), Tier.USER).written
    assert not killed.exists() and listed.count(ino) == 7


def test_a_lock_of_a_removed_directory_is_not_taken(tmp_path: Path) -> None:
    """A delete removed the directory while its lock was awaited: the caller
    starts again rather than failing on the lock file (docs/spec.md §6.3)."""
    d = tmp_path / "gone"
    d.mkdir()
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        d.rmdir()
        for shared in (False, True):
            with files.locked(fd, shared=shared) as held:
                assert held is False
    finally:
        os.close(fd)


def test_a_scope_swapped_for_a_link_during_a_read_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/spec.md §6.3: a link put at a scope's name between the link-free
    check and the load (the worst moment of the race) leads nowhere: the
    read loads the directory it checked, never another scope's."""
    from okfast.memory import store as store_module

    store = make_store(tmp_path)
    alice, bob = Scope("A", "alice"), Scope("A", "bob")
    assert store.write(alice, entry("alicemark"), Tier.USER).written
    assert store.write(bob, entry("bobmark"), Tier.USER).written
    alice_dir = tmp_path / "user" / memory_path(Tier.USER, alice)
    bob_dir = tmp_path / "user" / memory_path(Tier.USER, bob)
    real = store_module.Bundle.load

    def swapped(path: str, **kwargs: Any) -> Any:
        if alice_dir.exists() and not alice_dir.is_symlink():
            alice_dir.rename(alice_dir.with_name("moved"))
            alice_dir.symlink_to(bob_dir)
        return real(path, **kwargs)

    monkeypatch.setattr(store_module.Bundle, "load", staticmethod(swapped))
    got = store.read(alice, "mark")
    assert [p.body for p in got.passages if "bobmark" in (p.body or "")] == []
    assert store.read(alice, "bobmark").passages == ()


@pytest.mark.parametrize(
    ("read", "tier", "erased", "cascade"),
    [
        (Scope("A", "alice"), Tier.USER, Scope("A", "alice"), False),
        (Scope("A", "alice", "s1"), Tier.SESSION, Scope("A", "alice"), True),
        (Scope("A", "alice"), Tier.USER, Scope("A"), True),
    ],
    ids=["own", "user-cascade", "tenant-cascade"],
)
def test_a_read_waits_for_no_delete_to_finish_half_way(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    read: Scope,
    tier: Tier,
    erased: Scope,
    cascade: bool,
) -> None:
    """A delete that starts while a read loads the scope waits for the read:
    the reader sees the whole scope, then the delete erases it — a cascade
    delete of a scope above it too (docs/spec.md §6.3)."""
    import threading
    import time

    from okfast.memory import store as store_module

    store = make_store(tmp_path)
    for k in range(20):
        assert store.write(read, entry("mark", f"n{k}"), tier).written
    real = store_module.Bundle.load
    deleter = threading.Thread(
        target=lambda: make_store(tmp_path).delete_scope(erased, cascade=cascade)
    )

    def load_while_deleting(path: str, **kwargs: Any) -> Any:
        deleter.start()
        time.sleep(0.3)
        assert deleter.is_alive()  # held off by the read's lock
        return real(path, **kwargs)

    monkeypatch.setattr(store_module.Bundle, "load", staticmethod(load_while_deleting))
    r = store.read(read, "mark", limit=100)
    assert len(r.passages) == 20 and r.diagnostics == ()
    deleter.join(timeout=60)
    assert not deleter.is_alive()
    monkeypatch.setattr(store_module.Bundle, "load", staticmethod(real))
    assert store.read(read, "mark").passages == ()


def test_lock_only_directories_are_no_tier_deleted(tmp_path: Path) -> None:
    """docs/spec.md §6.3: what writers below leave above them (directories
    holding a lock file) is removed by a cascade but is no memory deleted."""
    store = make_store(tmp_path)
    assert store.write(Scope("A", "alice", "s1"), entry("x"), Tier.SESSION).written
    assert store.write(Scope("A", "alice"), entry("x"), Tier.USER).written
    assert store.delete_scope(Scope("A", "alice", "s1")).tiers_deleted == (Tier.SESSION,)
    assert store.delete_scope(Scope("A", "alice")).tiers_deleted == (Tier.USER,)
    assert store.delete_scope(Scope("A"), cascade=True).tiers_deleted == ()
    assert not (
        tmp_path
        / "session"
        / "memory-session"
        / memory_path(Tier.SESSION, Scope("A", "alice", "s1")).split("/")[1]
    ).exists()
    # A file put there by hand is something that existed.
    assert store.write(Scope("A", "bob", "s1"), entry("x"), Tier.SESSION).written
    bob = tmp_path / "session" / memory_path(Tier.SESSION, Scope("A", "bob", "s1"))
    (bob.parent / "by-hand.txt").write_text("x")
    assert store.delete_scope(Scope("A", "bob", "s1")).tiers_deleted == (Tier.SESSION,)
    assert store.delete_scope(Scope("A"), cascade=True).tiers_deleted == (Tier.SESSION,)


def test_a_scope_erased_by_another_store_is_dropped_from_memory(tmp_path: Path) -> None:
    """docs/spec.md §6.3: a store that read a scope keeps nothing of it once
    a read has seen it erased by another store (or process)."""
    reader, deleter = make_store(tmp_path), make_store(tmp_path)
    alice = Scope("A", "alice")
    assert reader.write(alice, entry("secret"), Tier.USER).written
    assert reader.read(alice, "secret").passages
    assert len(reader._cache) == 1
    assert deleter.delete_scope(alice).tiers_deleted == (Tier.USER,)
    assert reader.read(alice, "secret").passages == ()
    assert len(reader._cache) == 0


def test_a_read_racing_a_delete_does_not_keep_what_it_erased(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/spec.md §6.3: a snapshot loaded while a delete of the same store
    ran is served to its read, not kept after the delete cleared the rest."""
    store = make_store(tmp_path)
    alice = Scope("A", "alice")
    assert store.write(alice, entry("secret"), Tier.USER).written
    real = files.read_locked
    erased: list[bool] = []

    @contextlib.contextmanager
    def then_erased(fd: int) -> Iterator[None]:
        with real(fd):
            yield
        # The delete runs once the read let go of the lock, before the read
        # keeps its snapshot: the window a concurrent delete can fall in.
        if not erased:
            erased.append(store.delete_scope(alice).tiers_deleted == (Tier.USER,))

    monkeypatch.setattr(files, "read_locked", then_erased)
    assert store.read(alice, "secret").passages
    assert erased == [True]
    assert len(store._cache) == 0
    monkeypatch.undo()
    assert store.read(alice, "secret").passages == ()


def test_a_scope_made_by_a_racing_writer_is_fsynced_before_a_write_below_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/spec.md §6.3: a directory another writer made while this one was
    making it (and may not have made durable yet) is fsynced into its
    parent before the write is acknowledged, as one this writer made is."""
    store = make_store(tmp_path)
    synced: list[str] = []
    real_fsync, real_mkdir = os.fsync, os.mkdir

    def spy(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    def raced(name: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        real_mkdir(name, mode, dir_fd=dir_fd)  # the other writer's
        raise FileExistsError(17, "File exists", name)

    monkeypatch.setattr(files.os, "fsync", spy)
    monkeypatch.setattr(files.os, "mkdir", raced)
    assert store.write(Scope("A", "alice"), entry("y"), Tier.USER).written
    user_dir = tmp_path / "user" / memory_path(Tier.USER, Scope("A", "alice"))
    assert str(user_dir.parent) in synced and str(user_dir.parent.parent) in synced


def test_a_lock_that_is_no_file_does_not_stop_an_erasure(tmp_path: Path) -> None:
    """docs/spec.md §6.3: a cascade delete locks each scope below; a lock
    name that is a directory or a link (no reader can hold it) is removed
    with the rest, not an error that leaves the memory renamed aside."""
    store = make_store(tmp_path)
    for k, s in enumerate((Scope("A", "alice", "s1"), Scope("A", "bob", "s2"))):
        assert store.write(s, entry("m"), Tier.SESSION).written
        d = tmp_path / "session" / memory_path(Tier.SESSION, s)
        (d / files.LOCK_NAME).unlink()
        if k == 0:
            (d / files.LOCK_NAME).mkdir()
        else:
            (d / files.LOCK_NAME).symlink_to(tmp_path / "elsewhere")
    r = store.delete_scope(Scope("A"), cascade=True)
    assert (r.tiers_deleted, r.error) == ((Tier.SESSION,), None)
    assert [p.name for p in (tmp_path / "session" / "memory-session").iterdir()] == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_process_forked_during_a_write_holds_no_lock_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/spec.md §6.3: a child forked while a thread writes does not keep
    the scope locked (its copy of the lock file closed) and its own write
    does not wait for the parent's thread, which it does not have."""
    import multiprocessing
    import subprocess
    import sys
    import threading

    store = make_store(tmp_path)
    alice = Scope("A", "alice")
    assert store.write(alice, entry("first"), Tier.USER).written
    real = files.replace_file
    inside, go_on = threading.Event(), threading.Event()

    parent = os.getpid()

    def slow(*args: Any, **kwargs: Any) -> Any:
        if os.getpid() == parent:  # the forked child writes at once
            inside.set()
            assert go_on.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(files, "replace_file", slow)
    writer = threading.Thread(target=lambda: store.write(alice, entry("parent"), Tier.USER))
    writer.start()
    assert inside.wait(30)
    ctx = multiprocessing.get_context("fork")
    done, release = ctx.Event(), ctx.Event()
    child = ctx.Process(target=_write_in_child, args=(tmp_path, done, release), daemon=True)
    child.start()
    go_on.set()
    writer.join(30)
    monkeypatch.setattr(files, "replace_file", real)
    try:
        assert done.wait(30), "the forked child's own write waited forever"
        # The child lives on, holding its copies of the parent's files.
        script = (
            "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[2]);"
            "from test_memory_store import make_store, entry; from okfast.memory import Scope, Tier;"
            "print(make_store(Path(sys.argv[1])).write(Scope('A', 'alice'),"
            " entry('other', 'other'), Tier.USER).written)"
        )
        here = str(Path(__file__).parent)
        out = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path), here],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.stdout.strip() == "True", out.stderr
    finally:
        release.set()
        child.join(30)
    assert child.exitcode == 0


def _write_in_child(base: Path, done: Any, release: Any) -> None:
    ok = make_store(base).write(Scope("A", "alice"), entry("child", "child"), Tier.USER).written
    if ok:
        done.set()
    release.wait(60)


def test_tenant_cascade_removes_every_user_and_session(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    for s in (Scope("A", "alice", "s1"), Scope("A", "bob", "s9")):
        assert store.write(s, entry("m"), Tier.SESSION).written
        assert store.write(s, entry("m"), Tier.USER).written
    assert store.write(Scope("B", "carol", "s1"), entry("m"), Tier.SESSION).written
    r = store.delete_scope(Scope("A"), cascade=True)
    assert r.tiers_deleted == (Tier.SESSION, Tier.USER)
    assert store.enumerate(Scope("A", "alice", "s1")).concepts == ()
    assert len(store.enumerate(Scope("B", "carol", "s1"))) == 1


def test_delete_of_nothing_reports_nothing(tmp_path: Path) -> None:
    r = make_store(tmp_path).delete_scope(Scope("A", "ghost"))
    assert r.tiers_deleted == () and r.error is None


def test_a_read_after_a_delete_by_another_store_sees_nothing(tmp_path: Path) -> None:
    reader, deleter = make_store(tmp_path), make_store(tmp_path)
    scope = Scope("A", "alice")
    assert capture(reader, scope, "remember the zebra", "ok", now=NOW).written
    assert len(reader.read(scope, "zebra").passages) == 1  # now cached and watched
    assert deleter.delete_scope(scope).tiers_deleted == (Tier.USER,)
    assert reader.read(scope, "zebra").passages == ()
    assert capture(deleter, scope, "a giraffe", "ok", now=NOW).written
    assert [p.excerpt for p in reader.read(scope, "giraffe").passages] == ["> a giraffe"]
    assert reader.read(scope, "zebra").passages == ()


def test_a_scope_whose_last_file_went_reads_as_empty(tmp_path: Path) -> None:
    # A store that read the scope before: its cached snapshot is refreshed
    # to the empty bundle, never kept because the empty one is falsy.
    store = make_store(tmp_path)
    scope = Scope("A", "alice")
    assert store.write(scope, entry("alpha", "mine"), Tier.USER).written
    assert len(store.read(scope, "alpha").passages) == 1
    directory = Path(store.roots[Tier.USER]) / memory_path(Tier.USER, scope)
    (directory / "mine.md").unlink()
    assert store.read(scope, "alpha").passages == ()
    assert store.enumerate(scope).concepts == ()


def test_the_longest_names_are_written(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    for n in (229, 230, 252):
        r = store.write(Scope("A", "u"), entry("alpha", "x" * n), Tier.USER)
        assert r.written, r.error
    too_long = store.write(Scope("A", "u"), entry("alpha", "x" * 253), Tier.USER)
    assert not too_long.written and "252 bytes" in (too_long.error or "")


# -- reading --------------------------------------------------------------------


def test_read_scores_equal_bundle_search(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    scope = Scope("A", "alice")
    texts = ["refund policy for bread", "the oven runbook", "refund refund sourdough"]
    for day, t in enumerate(texts, start=1):
        now = NOW.replace(day=day)
        assert capture(store, scope, t, "noted: " + t, now=now).written
    directory = tmp_path / "user" / memory_path(Tier.USER, scope)
    prefix = memory_path(Tier.USER, scope) + "/"
    for q in ["refund", "oven bread", "Refund Sourdough", "nothing-matches"]:
        got = [(p.concept_id, p.score, p.excerpt) for p in store.read(scope, q).passages]
        want = [
            (prefix + h.concept_id, h.score, h.excerpt)
            for h in okfast.Bundle.load(directory).search(q)
        ]
        assert got == want and (q == "nothing-matches") is (got == [])


def test_missing_directories_read_as_empty(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    r = store.read(Scope("A", "alice", "s1"), "anything")
    assert r.passages == () and r.diagnostics == ()


def test_from_catalog_uses_enabled_memory_sources(tmp_path: Path) -> None:
    for d in ("kb", "mu", "mt"):
        (tmp_path / d).mkdir()
    (tmp_path / "catalog.json").write_text(
        json.dumps(
            {
                "version": 1,
                "sources": [
                    {"id": "kb", "path": "kb"},
                    {"id": "mu", "path": "mu", "role": "memory", "tier": "user"},
                    {
                        "id": "mt",
                        "path": "mt",
                        "role": "memory",
                        "tier": "tenant",
                        "enabled": False,
                    },
                ],
            }
        )
    )
    store = FileMemoryStore.from_catalog(okfast.Catalog.load(tmp_path / "catalog.json"))
    assert store.roots == {Tier.USER: (tmp_path / "mu").resolve()} or store.roots == {
        Tier.USER: tmp_path / "mu"
    }


def test_memory_files_are_private(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    scope = Scope("A", "alice")
    assert capture(store, scope, "x", "y", now=NOW).written
    d = tmp_path / "user" / memory_path(Tier.USER, scope)
    assert (d / f"{DAY}.md").stat().st_mode & 0o777 == 0o600
    assert d.stat().st_mode & 0o077 == 0
    assert os.listdir(d) == [".lock", f"{DAY}.md"] or sorted(os.listdir(d)) == [
        ".lock",
        f"{DAY}.md",
    ]


def test_enumerate_is_a_list_with_diagnostics(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    scope = Scope("A", "alice")
    assert store.enumerate(scope) == [] and store.enumerate(scope).diagnostics == ()
    assert capture(store, scope, "x", "y", now=NOW).written
    listing = store.enumerate(scope)
    assert isinstance(listing, list)
    assert listing == [
        MemoryConcept(Tier.USER, memory_path(Tier.USER, scope) + f"/{DAY}", f"Agent memory {DAY}")
    ]


def test_an_integer_too_long_to_spell_is_a_refused_write(tmp_path: Path) -> None:
    # Python spells at most sys.get_int_max_str_digits() digits (4300 by
    # default): a longer integer is a frontmatter value that cannot be
    # written, refused like the other bad values (docs/spec.md §6.3).
    store = make_store(tmp_path)
    before = _tree(tmp_path)
    fm = {"type": "T", "title": "t", "description": "d", "n": 10**4300}
    for value in (10**4300, [1, 10**4300], {"k": -(10**4300)}):
        fm["n"] = value
        r = store.write(Scope("t", "u"), MemoryEntry("n", fm, "x"), Tier.USER)
        assert not r.written and "too large" in (r.error or "")
        assert _tree(tmp_path) == before
    fm["n"] = 10**4299
    assert store.write(Scope("t", "u"), MemoryEntry("n", fm, "x"), Tier.USER).written


def test_read_checks_its_arguments_before_looking_for_memory(tmp_path: Path) -> None:
    # The same bad argument raises the same error whether or not the scope
    # has memory yet (docs/spec.md §6.3, §8).
    store = make_store(tmp_path)
    full = Scope("A", "alice")
    assert store.write(full, entry("hi"), Tier.USER).written
    bad_calls: list[tuple[dict[str, object], type[Exception], str]] = [
        ({"limit": 1.5}, okfast.InvalidArgumentTypeError, "limit"),
        ({"limit": True}, okfast.InvalidArgumentTypeError, "limit"),
        ({"limit": -1}, okfast.InvalidArgumentError, "limit"),
        ({"scorer": "nope"}, okfast.InvalidArgumentError, "unknown scorer"),
        ({"scorer": "bm25f", "bm25f": 5}, okfast.InvalidArgumentTypeError, "BM25FParams"),
        ({"scorer": "bm25f", "bm25f": {}}, okfast.InvalidArgumentTypeError, "BM25FParams"),
        ({"bm25f": {}}, okfast.InvalidArgumentTypeError, "BM25FParams"),
    ]
    for scope in (Scope("nobody"), Scope("A", "nobody"), full):
        for kwargs, error, match in bad_calls:
            with pytest.raises(error, match=match):
                store.read(scope, "hi", **kwargs)  # type: ignore[arg-type]
        with pytest.raises(okfast.InvalidArgumentTypeError):
            store.read(scope, None)  # type: ignore[arg-type]
    assert store.read(full, "hi", scorer="bm25f", bm25f=okfast.BM25FParams()).passages


def test_a_wrong_type_of_scope_or_entry_is_an_argument_error(tmp_path: Path) -> None:
    store = make_store(tmp_path)
    before = _tree(tmp_path)
    calls: list[Callable[[Any], object]] = [
        lambda bad: store.read(bad, "x"),
        lambda bad: store.write(bad, entry("x"), Tier.USER),
        lambda bad: store.enumerate(bad),
        lambda bad: store.delete_scope(bad),
        lambda bad: capture(store, bad, "u", "a", now=NOW),
    ]
    for bad in ("t1", None, ("t1",)):
        for call in calls:
            with pytest.raises(okfast.InvalidArgumentTypeError, match="must be a Scope"):
                call(bad)
    for wrong in (None, "note", {"name": "n"}):
        with pytest.raises(okfast.InvalidArgumentTypeError, match="must be a MemoryEntry"):
            store.write(Scope("A"), wrong, Tier.TENANT)  # type: ignore[arg-type]
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("root", ["/tmp/\x00", "/tmp/a\x00b", "/tmp/\ud800", "\udfff"])
def test_a_tier_root_that_names_no_path_is_refused_when_made(root: str) -> None:
    # Such a root can never name a directory on any disk: a property of the
    # argument, refused up front as the catalog refuses it (docs/spec.md §6.3),
    # instead of a raw ValueError/UnicodeEncodeError from every operation.
    with pytest.raises(okfast.InvalidArgumentError, match="root"):
        FileMemoryStore({"user": root})
    with pytest.raises(okfast.InvalidArgumentError, match="root"):
        FileMemoryStore({Tier.TENANT: Path(root)})


def test_a_tier_root_of_the_wrong_type_is_an_argument_error(tmp_path: Path) -> None:
    for bad in (5, None, b"/tmp"):
        with pytest.raises(okfast.InvalidArgumentTypeError, match="root"):
            FileMemoryStore({"user": bad})  # type: ignore[dict-item]
    with pytest.raises(okfast.InvalidArgumentTypeError, match="roots"):
        FileMemoryStore(None)  # type: ignore[arg-type]
    # A surrogate-escaped byte (what os.fsdecode gives for non-UTF-8 names) is
    # a real path and stays accepted.
    store = FileMemoryStore({"user": str(tmp_path) + "/\udcff"})
    r = store.read(Scope("A", "u"), "x")
    assert r.passages == () and [d.code for d in r.diagnostics] == ["SourceUnavailable"]


def test_a_read_filters_by_tag_as_a_search_does(tmp_path: Path) -> None:
    """docs/spec.md §6.3, §3.6: ``tag`` keeps the memory concepts carrying it
    (folded), before the limit; a tag of the wrong type is refused."""
    store = make_store(tmp_path / "mem")
    scope = Scope("A", "alice")
    for name, tags in (("plain", []), ("kept", ["Bread", "x"]), ("also", ["BREAD"])):
        e = entry("crumb", name=name)
        fm = {**e.frontmatter, "tags": tags}
        assert store.write(scope, MemoryEntry(e.name, fm, e.section), Tier.USER).written
    every = store.read(scope, "crumb")
    assert len(every.passages) == 3
    tagged = store.read(scope, "crumb", tag="bread", limit=1)
    assert [p.concept_id.rsplit("/", 1)[1] for p in tagged.passages] == ["also"]
    both = store.read(scope, "crumb", tag="bread", scorer="bm25f")
    assert sorted(p.concept_id.rsplit("/", 1)[1] for p in both.passages) == ["also", "kept"]
    with pytest.raises(okfast.InvalidArgumentTypeError):
        store.read(scope, "crumb", tag=3)  # type: ignore[arg-type]


def test_a_scope_id_too_long_for_a_directory_has_no_memory(tmp_path: Path) -> None:
    """docs/spec.md §6.3: a scope whose directory name cannot exist (an id of
    239–255 bytes) is a missing scope directory: silently empty, nothing to
    delete — whether or not other scopes have memory in the tier; its write
    is refused, naming the concept."""
    store = make_store(tmp_path / "mem")
    assert store.write(Scope("B"), entry("other"), Tier.TENANT).written
    long = Scope("a" * 239)
    read = store.read(long, "marker")
    assert (read.passages, read.diagnostics) == ((), ())
    listing = store.enumerate(long)
    assert (list(listing.concepts), list(listing.diagnostics)) == ([], [])
    deleted = store.delete_scope(long)
    assert (deleted.tiers_deleted, deleted.error) == ((), None)
    w = store.write(long, entry("x"), Tier.TENANT)
    assert not w.written and "too long" in (w.error or "")
    assert w.concept_id == memory_path(Tier.TENANT, long) + "/note"


def test_blank_is_the_readers_white_space(tmp_path: Path) -> None:
    """docs/spec.md §6.3: only text a reader trims to nothing is blank;
    U+001C–001F, which Python's ``str.strip`` removes, are text to a reader."""
    store = make_store(tmp_path / "mem")
    scope = Scope("A")
    e = entry("x")
    assert store.write(scope, MemoryEntry("n", e.frontmatter, "\x1c"), Tier.TENANT).written
    fm = {**e.frontmatter, "type": "\x1f"}
    assert store.write(scope, MemoryEntry("m", fm, "text"), Tier.TENANT).written
    for blank in (" \u2003\n", "\u3000"):
        w = store.write(scope, MemoryEntry("k", e.frontmatter, blank), Tier.TENANT)
        assert not w.written and "empty" in (w.error or "")


def test_frontmatter_nests_sixteen_levels_counting_its_own_mapping(tmp_path: Path) -> None:
    # The frontmatter mapping is the first of the 16 levels (docs/spec.md §6.3).
    def nested(levels: int) -> object:
        v: object = "leaf"
        for _ in range(levels):
            v = {"k": v}
        return v

    store = make_store(tmp_path)
    fm: dict[str, object] = {"type": "T", "title": "t", "description": "d"}
    fm["n"] = nested(15)
    assert store.write(Scope("t", "u"), MemoryEntry("ok", fm, "x"), Tier.USER).written
    fm["n"] = nested(16)
    r = store.write(Scope("t", "u"), MemoryEntry("deep", fm, "x"), Tier.USER)
    assert not r.written and "nested deeper than 16 levels" in (r.error or "")


@pytest.mark.parametrize("flag", ["false", 0, 1, None])
def test_a_switch_that_is_not_a_bool_is_refused_before_anything_is_deleted(
    tmp_path: Path, flag: object
) -> None:
    """docs/spec.md §6.3: arguments are checked first; ``cascade="false"``
    was read as true and removed the user's sessions."""
    store = make_store(tmp_path)
    session = SCOPES["A/alice/s1"]
    assert store.write(session, entry("kept"), Tier.SESSION).written
    with pytest.raises(okfast.InvalidArgumentTypeError, match="cascade must be True or False"):
        store.delete_scope(SCOPES["A/alice"], cascade=flag)  # type: ignore[arg-type]
    with pytest.raises(okfast.InvalidArgumentTypeError, match="bodies must be True or False"):
        store.enumerate(session, bodies=flag)  # type: ignore[arg-type]
    assert [c.concept_id.rsplit("/", 1)[-1] for c in store.enumerate(session)] == ["note"]


def test_a_section_that_is_not_text_says_so(tmp_path: Path) -> None:
    """docs/spec.md §6.3: the error says what is wrong, not "empty"."""
    store = make_store(tmp_path)
    fm = {"type": "Note", "title": "T"}
    for section, words in [(3, "not text: int"), (None, "not text: NoneType"), (" ", "empty")]:
        w = store.write(Scope("A"), MemoryEntry("n", fm, section), Tier.TENANT)  # type: ignore[arg-type]
        assert not w.written and f"the section to append is {words}" in (w.error or "")


@pytest.mark.parametrize("planted", ["directory", "link"])
def test_a_scopes_lock_name_that_is_no_file_is_refused_but_to_its_erasure(
    tmp_path: Path, planted: str
) -> None:
    """docs/spec.md §6.3: no one can lock through a directory or a link at a
    scope's lock name; a read and a write say so, and the erasure, which
    removes it with the rest, goes on."""
    store = make_store(tmp_path)
    scope = Scope("A", "alice")
    assert store.write(scope, entry("first"), Tier.USER).written
    d = tmp_path / "user" / memory_path(Tier.USER, scope)
    (d / files.LOCK_NAME).unlink()
    if planted == "directory":
        (d / files.LOCK_NAME).mkdir()
        kind = "a directory"
    else:
        (d / files.LOCK_NAME).symlink_to(tmp_path / "elsewhere")
        kind = "a symbolic link (never followed)"
    said = f"the scope's lock file .lock is {kind}"
    r = store.read(scope, "first")
    assert r.passages == () and [x.code for x in r.diagnostics] == ["SourceUnavailable"]
    assert said in r.diagnostics[0].message
    w = store.write(scope, entry("second"), Tier.USER)
    assert not w.written and w.error == f"refused: {said}"
    gone = store.delete_scope(scope)
    assert (gone.tiers_deleted, gone.error) == ((Tier.USER,), None)
    assert not d.exists() and not (tmp_path / "elsewhere").exists()
    assert store.write(scope, entry("third"), Tier.USER).written
