"""Pruning the cache directory (docs/spec.md §9.9): the files of bundle roots
that are gone go, with ``unused_days`` those no load used for that long, and
nothing else — not a live bundle's file, not a file okfast did not name."""

from __future__ import annotations

import errno
import math
import os
import shutil
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import write_bundle
from okfast import Bundle, InvalidArgumentError, InvalidArgumentTypeError, cache_prune
from okfast.cache_prune import _REPLACED, _judge, _remove, prune_cache

NOTE = "---\ntype: note\ntitle: One\n---\nbody text\n"
DAY = 86_400


def loaded(root: Path, cache: Path, **kw: object) -> Path:
    write_bundle(root, {"one.md": NOTE, "two.md": NOTE.replace("One", "Two")})
    for f in root.iterdir():
        age(f, 1)  # settled, so that a reopen is a hit (§9.4)
    b = Bundle.load(root, cache_dir=cache, **kw)  # type: ignore[arg-type]
    assert b.cache_file is not None
    return b.cache_file


def orphaned(root: Path, cache: Path, **kw: object) -> Path:
    """:func:`loaded`, then the bundle removed: the cache file of a root gone."""
    file = loaded(root, cache, **kw)
    shutil.rmtree(root)
    return file


def age(path: Path, days: float) -> None:
    then = time.time() - days * DAY
    os.utime(path, (then, then))


def test_the_files_of_roots_that_are_gone_are_removed_and_only_those(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    live = loaded(tmp_path / "live", cache)
    gone = orphaned(tmp_path / "gone", cache)
    part = orphaned(tmp_path / "gone2", cache, id_range=("one", None))
    german = orphaned(tmp_path / "filed", cache, language="german")
    (tmp_path / "filed").write_text("a file where the bundle was")
    # Not okfast's: another name, a directory and a link of its kind of name.
    (cache / "notes.txt").write_text("kept")
    (cache / f"{'a' * 32}.okfc").mkdir()
    (cache / f"{'b' * 32}.okfc").symlink_to(gone)
    sizes = {p: p.stat().st_size for p in (gone, part, german)}
    done = prune_cache(cache)
    assert {(f.path, f.reason, f.root, f.size) for f in done.removed} == {
        (gone, "root gone", str(tmp_path / "gone"), sizes[gone]),
        (part, "root gone", str(tmp_path / "gone2"), sizes[part]),
        (german, "root gone", str(tmp_path / "filed"), sizes[german]),
    }
    assert done.freed == sum(sizes.values())
    assert (done.kept, done.errors, done.dry_run) == (1, (), False)
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [live.name, "notes.txt", f"{'a' * 32}.okfc", f"{'b' * 32}.okfc"]
    )
    assert Bundle.load(tmp_path / "live", cache_dir=cache).cache_status == "hit"


def test_a_dry_run_lists_what_would_go_and_removes_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    gone = orphaned(tmp_path / "gone", cache)
    done = prune_cache(cache, dry_run=True)
    assert [f.path for f in done.removed] == [gone] and done.dry_run
    assert gone.exists()


@pytest.mark.parametrize("noatime", [True, False])
def test_unused_days_removes_the_files_no_load_used_for_that_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, noatime: bool
) -> None:
    """A prune's own reading of a header never counts as a use: opened with
    O_NOATIME, or (where that is refused) the access time put back."""
    if not noatime:
        monkeypatch.setattr(os, "O_NOATIME", 0, raising=False)
    cache = tmp_path / "cache"
    old = loaded(tmp_path / "old", cache)
    used = loaded(tmp_path / "used", cache)
    fresh = loaded(tmp_path / "fresh", cache)
    for f in (old, used):
        age(f, 10)
    # A load that uses a file marks it used (docs/spec.md §9.9).
    assert Bundle.load(tmp_path / "used", cache_dir=cache).cache_status == "hit"
    assert prune_cache(cache, unused_days=30).removed == ()
    done = prune_cache(cache, unused_days=7)
    assert [(f.path, f.reason) for f in done.removed] == [(old, "unused")]
    assert used.exists() and fresh.exists() and not old.exists()
    assert [f.path for f in prune_cache(cache, unused_days=0).removed] == sorted([used, fresh])


def test_unused_days_is_any_real_number_and_a_time_ahead_is_now(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    old = loaded(tmp_path / "old", cache)
    age(old, 3)
    ahead = loaded(tmp_path / "ahead", cache)
    age(ahead, -10)  # copied with its times, or written while the clock was ahead
    for kept in (np.int64(4), np.float32(3.5), Fraction(7, 2), 10**400):
        assert prune_cache(cache, unused_days=kept, dry_run=True).removed == ()  # type: ignore[arg-type]
    done = prune_cache(cache, unused_days=Fraction(5, 2), dry_run=True)  # type: ignore[arg-type]
    assert [f.path for f in done.removed] == [old]
    assert sorted(f.path for f in prune_cache(cache, unused_days=0).removed) == sorted([old, ahead])


def test_only_a_header_that_names_the_file_is_judged(tmp_path: Path) -> None:
    """A root is judged when the file's name was made from it (§9.1): a
    forged header is not, and a root holding U+FFFD as a character is."""
    cache = tmp_path / "cache"
    odd = orphaned(tmp_path / "odd\ufffdname", cache)
    forged = cache / f"{'f' * 32}.okfc"
    forged.write_bytes(odd.read_bytes())  # a true header, under another name
    done = prune_cache(cache)
    assert [(f.path, f.root) for f in done.removed] == [(odd, str(tmp_path / "odd\ufffdname"))]
    assert forged.exists() and done.kept == 1


def test_a_file_that_goes_while_it_is_judged_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    a = loaded(tmp_path / "a", cache)
    b = orphaned(tmp_path / "b", cache)
    look = cache_prune._look

    def vanishing(path: Path) -> Any:
        if path == a:
            a.unlink()  # a load replacing it: no file for a moment
        return look(path)

    monkeypatch.setattr(cache_prune, "_look", vanishing)
    done = prune_cache(cache)
    assert ([f.path for f in done.removed], done.kept, done.errors) == ([b], 0, ())


def test_a_file_another_user_owns_is_judged_by_its_last_use_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only a file's owner may read it without touching its access time
    (O_NOATIME): for anyone else, reading its header would count as a use,
    so its root is not read, and it goes only as unused."""
    cache = tmp_path / "cache"
    gone = orphaned(tmp_path / "gone", cache)
    age(gone, 40)
    opened = os.open

    def not_the_owner(path: Any, flags: int, *args: Any) -> int:
        if flags & getattr(os, "O_NOATIME", 0):
            raise PermissionError(errno.EPERM, "Operation not permitted")
        return opened(path, flags, *args)

    monkeypatch.setattr(os, "O_NOATIME", 0o1000000, raising=False)
    monkeypatch.setattr(os, "open", not_the_owner)
    before = os.stat(gone).st_atime_ns
    assert prune_cache(cache).removed == ()
    done = prune_cache(cache, unused_days=30, dry_run=True)
    assert [(f.path, f.reason, f.root) for f in done.removed] == [(gone, "unused", None)]
    assert os.stat(gone).st_atime_ns == before


def test_a_file_whose_root_cannot_be_told_stays_unless_unused(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    foreign = cache / f"{'c' * 32}.okfc"
    foreign.write_bytes(b"not a cache file at all")
    cut = cache / f"{'d' * 32}.okfc"
    cut.write_bytes(b"OKFASTC\0\x0b\0\0\0\x05\0\0\0")  # truncated in the version
    odd = cache / f"{'e' * 32}.okfc"
    raw = b"/gone/\xff"  # a root not valid UTF-8: okfast wrote it as U+FFFD
    odd.write_bytes(
        b"OKFASTC\0\x0b\0\0\0"
        + len(b"0.1").to_bytes(4, "little")
        + b"0.1"
        + len(raw).to_bytes(4, "little")
        + raw
    )
    assert prune_cache(cache).removed == ()
    for f in (foreign, cut, odd):
        age(f, 3)
    done = prune_cache(cache, unused_days=2)
    assert sorted((f.path, f.root) for f in done.removed) == sorted(
        [(foreign, None), (cut, None), (odd, None)]
    )


def test_a_file_replaced_after_it_was_judged_stays(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    gone = orphaned(tmp_path / "gone", cache)
    judged = _judge(gone, time.time(), None)
    assert judged is not None
    # A load puts a new file in its place (by rename) before the removal.
    (cache / "new").write_bytes(gone.read_bytes())
    os.replace(cache / "new", gone)
    assert _remove(gone, judged[1]) is _REPLACED
    assert gone.exists()
    assert _remove(gone, os.stat(gone)) is None and not gone.exists()


def test_a_file_that_cannot_be_removed_is_reported_and_the_rest_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    a = orphaned(tmp_path / "a", cache)
    b = orphaned(tmp_path / "b", cache)
    unlink = Path.unlink

    def refused(self: Path, missing_ok: bool = False) -> None:
        if self == a:
            raise PermissionError(13, "Permission denied")
        unlink(self, missing_ok)

    monkeypatch.setattr(Path, "unlink", refused)
    done = prune_cache(cache)
    assert [f.path for f in done.removed] == [b]
    assert done.errors == (f"{a}: cannot be removed (Permission denied)",)
    assert done.kept == 1 and a.exists()


def test_bad_arguments_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for bad in (-1, math.nan, math.inf):
        with pytest.raises(InvalidArgumentError, match="unused_days"):
            prune_cache(tmp_path, unused_days=bad)
    for wrong in ("3", True, [1]):
        with pytest.raises(InvalidArgumentTypeError, match="unused_days"):
            prune_cache(tmp_path, unused_days=wrong)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentTypeError, match="dry_run"):
        prune_cache(tmp_path, dry_run="yes")  # type: ignore[arg-type]
    for unnamed in ("", "a\0b", "\ud800"):
        with pytest.raises(InvalidArgumentError, match="cache directory"):
            prune_cache(unnamed)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidArgumentError, match="cannot be listed"):
        prune_cache(tmp_path / "file")
    assert prune_cache(tmp_path / "file" / "below").removed == ()  # no cache there
    monkeypatch.setenv("OKFAST_CACHE_DIR", "~no-such-user-okfast/c")
    with pytest.raises(InvalidArgumentError, match="cache directory .* is unusable"):
        prune_cache()
    monkeypatch.setenv("OKFAST_CACHE_DIR", "off")
    with pytest.raises(InvalidArgumentError, match="the cache is disabled"):
        prune_cache()
    monkeypatch.setenv("OKFAST_CACHE_DIR", str(tmp_path / "never-made"))
    done = prune_cache()
    assert (done.cache_dir, done.removed, done.kept) == (tmp_path / "never-made", (), 0)
    assert not (tmp_path / "never-made").exists()
