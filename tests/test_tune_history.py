"""The tune history (docs/spec.md §14.4): apply and revert restore what was
there, byte for byte; a line that is not an event is skipped; a history or
settings file that cannot be read or written is a clear error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from okfast import InvalidArgumentError, Scorer
from okfast.settings import Settings
from okfast.tune_history import apply, check_apply, history_path, revert


def test_apply_and_revert_keep_a_history(tmp_path: Path) -> None:
    target = tmp_path / "s.json"
    first, second = Settings(scorer=Scorer.BM25F), Settings(scorer=Scorer.FUSION, rrf_k=9)
    apply(first, target)
    apply(second, target)
    assert Settings.load(target) == second
    events = [json.loads(x) for x in history_path(target).read_text().splitlines()]
    assert [e["action"] for e in events] == ["apply", "apply"]
    assert events[1]["before"] == first.to_json() and events[1]["after"] == second.to_json()
    assert revert(target) and Settings.load(target) == first
    assert revert(target) and not target.exists()
    assert not revert(target)
    # A torn last line (a crash while appending) is not an event.
    with history_path(target).open("a") as f:
        f.write('{"action": "app')
    apply(second, target)
    assert revert(target) and not target.exists()


def test_a_revert_through_a_dangling_link_restores_the_link_alone(tmp_path: Path) -> None:
    """apply writes through a settings path that is a symbolic link (to its
    target, created); the revert removes that file and keeps the link, as it
    was before (docs/spec.md §14.4)."""
    (tmp_path / "real").mkdir()
    target = tmp_path / "s.json"
    target.symlink_to(tmp_path / "real" / "t.json")
    apply(Settings(scorer=Scorer.BM25F), target)
    assert (tmp_path / "real" / "t.json").is_file() and target.is_symlink()
    assert revert(target)
    assert target.is_symlink() and not (tmp_path / "real" / "t.json").exists()


def test_a_revert_restores_text_with_unicode_line_separators(tmp_path: Path) -> None:
    # JSON leaves U+0085, U+2028 and U+2029 unescaped; the history's lines
    # end at "\n" only (docs/spec.md §14.4).
    target = tmp_path / "s.json"
    hand = '{"version": 1, "provenance": {"by": "a\u0085b\u2028c\u2029d"}}\n'
    target.write_text(hand, encoding="utf-8")
    apply(Settings(scorer=Scorer.BM25F), target)
    assert revert(target)
    assert target.read_text(encoding="utf-8") == hand


def test_a_line_that_is_not_an_event_is_skipped(tmp_path: Path) -> None:
    target = tmp_path / "s.json"
    first = Settings(scorer=Scorer.BM25F)
    apply(first, target)
    apply(Settings(scorer=Scorer.FUSION), target)
    with history_path(target).open("ab") as f:
        f.write(b"\xff\xfe\n")  # not UTF-8
        f.write(b'{"action": "apply", "before": 5, "after": null}\n')  # wrong types
        f.write(b'{"action": "undo", "before": null, "after": "{}"}\n')  # no such action
        f.write(b"[" * 100_000 + b"\n")  # nested past the parser's depth
        f.write(b'{"action": "apply", "after": "{}"}\n')  # no before text
        f.write(b'{"action": "apply", "before": "\\ud800", "after": "{}"}\n')  # not UTF-8
        # Not JSON, though Python's json reads them: a NaN, a repeated key.
        f.write(b'{"action": "apply", "before": "X", "after": "{}", "time": NaN}\n')
        f.write(b'{"action": "apply", "before": null, "before": "X", "after": "{}"}\n')
    assert revert(target) and Settings.load(target) == first
    events = [json.loads(x) for x in history_path(target).read_bytes().split(b"\n")[-2:-1]]
    assert events[0]["action"] == "revert" and events[0]["after"] == first.to_json()


def test_unreadable_or_unwritable_files_are_clear_errors(tmp_path: Path) -> None:
    target = tmp_path / "s.json"
    history_path(target).mkdir()
    with pytest.raises(InvalidArgumentError, match="tune history .*: it is a directory"):
        revert(target)
    with pytest.raises(InvalidArgumentError, match="tune history .*: it is a directory"):
        apply(Settings(), target)
    history_path(target).rmdir()
    target.mkdir()
    with pytest.raises(InvalidArgumentError, match="settings file .*: it is a directory"):
        apply(Settings(), target)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("which", ["settings", "history"])
def test_a_fifo_is_refused_before_anything_is_written(
    tmp_path: Path, which: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/spec.md §14.4: a settings file or history that is not a regular
    file is refused before anything is written; a revert whose write fails
    is not recorded, so the apply can still be reverted (a FIFO blocked the
    revert forever, after it had recorded itself)."""
    target = tmp_path / "s.json"
    target.write_text('{"version": 1}\n')
    apply(Settings(scorer=Scorer.BM25F), target)
    history = history_path(target).read_bytes()
    fifo = target if which == "settings" else history_path(target)
    fifo.unlink()
    os.mkfifo(fifo)
    for act in (lambda: revert(target), lambda: check_apply(target)):
        with pytest.raises(InvalidArgumentError, match="not a regular file"):
            act()
    fifo.unlink()
    if which == "history":
        history_path(target).write_bytes(history)
    else:
        import okfast.tune_history as th

        def full(*args: object) -> None:
            raise OSError(28, "No space left on device")

        with monkeypatch.context() as m:
            m.setattr(th, "write_atomically", full)  # a write that fails: not recorded
            with pytest.raises(InvalidArgumentError, match="No space left"):
                revert(target)
    assert history_path(target).read_bytes() == history
    assert revert(target) and target.read_text() == '{"version": 1}\n'


def test_a_replaced_settings_file_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "s.json"
    target.write_text('{"version": 1}\n')
    target.chmod(0o640)
    apply(Settings(scorer=Scorer.BM25F), target)
    assert target.stat().st_mode & 0o777 == 0o640
    assert revert(target) and target.stat().st_mode & 0o777 == 0o640
    fresh = tmp_path / "new.json"
    apply(Settings(), fresh)
    umask = os.umask(0)
    os.umask(umask)
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_revert_restores_the_bytes_line_ends_included(tmp_path: Path) -> None:
    target = tmp_path / "s.json"
    hand = b'{\r\n  "version": 1,\r  "rrf_k": 7\r\n}\r\n'
    target.write_bytes(hand)
    apply(Settings(scorer=Scorer.BM25F), target)
    assert revert(target) and target.read_bytes() == hand


def test_a_settings_file_that_is_a_link_is_written_through_it(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text('{"version": 1}\n')
    link = tmp_path / "s.json"
    link.symlink_to(real)
    apply(Settings(scorer=Scorer.BM25F), link)
    assert link.is_symlink() and Settings.load(real) == Settings(scorer=Scorer.BM25F)
    assert revert(link) and link.is_symlink() and real.read_text() == '{"version": 1}\n'


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_settings_file_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    target = tmp_path / "s.json"
    os.mkfifo(target)
    with pytest.raises(InvalidArgumentError, match="not a regular file"):
        apply(Settings(), target)
    assert not history_path(target).exists()


def test_a_revert_refuses_to_lose_an_edit_made_since_the_apply(tmp_path: Path) -> None:
    """docs/spec.md §14.4: a file edited since the apply is not restored over
    (the edit is in no file and no history line); once moved aside, or put
    back as the apply wrote it, the revert goes on."""
    target = tmp_path / "s.json"
    first, second = Settings(scorer=Scorer.BM25F), Settings(scorer=Scorer.FUSION)
    apply(first, target)
    apply(second, target)
    edited = second.to_json().replace('"fusion"', '"weighted_count"')
    target.write_text(edited)
    with pytest.raises(InvalidArgumentError, match="was changed since okfast tune applied it"):
        revert(target)
    assert target.read_text() == edited
    target.rename(tmp_path / "aside.json")
    assert revert(target) and Settings.load(target) == first
    events = [json.loads(x) for x in history_path(target).read_text().splitlines()]
    # The revert records what it replaced: nothing (the file was aside).
    assert events[-1] == {**events[-1], "action": "revert", "before": None}


def test_an_apply_that_cannot_write_is_not_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/spec.md §14.4: the history never claims an apply that did not
    happen, so a revert undoes the last one that did."""
    import okfast.tune_history as history

    target = tmp_path / "s.json"
    first = Settings(scorer=Scorer.BM25F)
    apply(first, target)
    size = history_path(target).stat().st_size

    def full(path: Path, text: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(history, "write_atomically", full)
    with pytest.raises(InvalidArgumentError, match="No space left"):
        apply(Settings(scorer=Scorer.FUSION), target)
    assert history_path(target).stat().st_size == size
    monkeypatch.undo()
    assert Settings.load(target) == first
    assert revert(target) and not target.exists()


def test_check_apply_needs_the_folder_writable_and_the_file_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checked before a search (docs/spec.md §14.4): the file is replaced by
    a new one beside it, so its folder must be writable, not only the file;
    and its text is recorded, so it must read."""
    import okfast.tune_history as history

    folder = tmp_path / "ro"
    folder.mkdir()
    target = folder / "s.json"
    target.write_text('{"version": 1}\n')
    check_apply(target)
    # A folder this user cannot write (root writes any: the answer is faked).
    real = os.access
    monkeypatch.setattr(history.os, "access", lambda p, m: Path(p) != folder and real(p, m))
    with pytest.raises(InvalidArgumentError, match=f"{folder} is not writable"):
        check_apply(target)
    monkeypatch.undo()
    target.write_bytes(b'{"version": 1, "x": "\xe9"}\n')
    with pytest.raises(InvalidArgumentError, match="apply records the text it replaces"):
        check_apply(target)


def test_a_settings_file_of_the_longest_name_is_written(tmp_path: Path) -> None:
    # The temporary file beside it is not named after it (docs/spec.md §13.2).
    target = tmp_path / ("s" * 220 + ".json")
    apply(Settings(scorer=Scorer.BM25F), target)
    assert Settings.load(target) == Settings(scorer=Scorer.BM25F)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [target.name, history_path(target).name]
    )


def test_applies_and_reverts_take_turns(tmp_path: Path) -> None:
    """docs/spec.md §14.4: each holds the history's lock, so a second apply
    records as replaced what the first wrote."""
    import threading
    import time

    import okfast.tune_history as history

    target = tmp_path / "s.json"
    first, second = Settings(scorer=Scorer.BM25F), Settings(scorer=Scorer.FUSION)
    with history._locked(history_path(target)):
        late = threading.Thread(target=apply, args=(second, target))
        late.start()
        time.sleep(0.3)
        assert late.is_alive()  # waits for the lock
        assert not target.exists()
    late.join(30)
    apply(first, target)
    events = [json.loads(x) for x in history_path(target).read_text().splitlines()]
    assert [(e["before"], e["after"]) for e in events] == [
        (None, second.to_json()),
        (second.to_json(), first.to_json()),
    ]


def test_a_history_that_is_a_link_is_written_through(tmp_path: Path) -> None:
    # docs/spec.md §14.4: as the settings file is (a history kept elsewhere).
    target = tmp_path / "s.json"
    (tmp_path / "kept").mkdir()
    elsewhere = tmp_path / "kept" / "history.jsonl"
    history_path(target).symlink_to(elsewhere)
    check_apply(target)
    apply(Settings(scorer=Scorer.BM25F), target)
    assert history_path(target).is_symlink()
    assert [json.loads(x)["action"] for x in elsewhere.read_text().splitlines()] == ["apply"]
    assert revert(target) and not target.exists()
