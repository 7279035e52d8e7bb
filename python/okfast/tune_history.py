"""The tune history beside a settings file (docs/spec.md §14.4): ``okfast
tune --apply`` writes the proposal and appends what it replaced, ``--revert``
restores it. One JSON object a line, appended and synced before the settings
file is written, so a crash between the two leaves a revert that restores
what is still there rather than a change that cannot be undone.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from okfast import strict_json
from okfast.arguments import surrogate_in
from okfast.errors import InvalidArgumentError
from okfast.settings import Settings, write_atomically

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: one process at a time
    fcntl = None  # type: ignore[assignment]


def history_path(settings_path: Path) -> Path:
    """The tune history beside a settings file: one JSON object a line."""
    return settings_path.with_name(settings_path.name + ".history.jsonl")


def apply(settings: Settings, target: Path) -> None:
    """Write ``settings`` to ``target`` and append the change to the history
    (what was there before, so :func:`revert` can restore it). One apply or
    revert at a time: each holds the history's lock throughout."""
    _check_files(target)
    with _locked(history_path(target)):
        before = _current(target)
        after = settings.to_json()
        at = _append(history_path(target), {"action": "apply", "before": before, "after": after})
        try:
            _write(target, after)
        except InvalidArgumentError:
            # Not written (write_atomically raised before its rename), so
            # not recorded: a revert must not "undo" it.
            with contextlib.suppress(OSError):
                _truncate(history_path(target), at)
            raise


def _current(target: Path) -> str | None:
    """The settings file's text now, ``None`` when there is none."""
    try:
        # Bytes, decoded: read_text would turn CRLF into LF, and a revert
        # would then not restore the file as it was (docs/spec.md §14.4).
        return target.read_bytes().decode("utf-8") if target.exists() else None
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidArgumentError(f"cannot read the settings file {target}: {_why(e)}") from None


@contextlib.contextmanager
def _locked(history: Path) -> Iterator[None]:
    """An exclusive ``flock`` of the history file (made when missing): two
    applies or reverts at once would each record what the other replaced."""
    try:
        history.parent.mkdir(parents=True, exist_ok=True)
        # Through a link, as the appends write (a history kept elsewhere).
        fd = os.open(history, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as e:
        raise InvalidArgumentError(f"cannot write the tune history {history}: {_why(e)}") from None
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _truncate(history: Path, size: int) -> None:
    """The history cut back to ``size`` bytes, durably."""
    fd = os.open(history, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)


def check_apply(target: Path) -> None:
    """What would stop :func:`apply` after a search, checked before it: the
    settings file and its history must be files okfast can write (or make)."""
    _check_files(target)
    # The settings file is replaced through a new file beside it: its folder
    # must be writable, whether or not the file is; the history is appended.
    real = Path(os.path.realpath(target)) if target.is_symlink() else target
    history = history_path(target)
    for path, what, where in (
        (target, "settings file", _existing_parent(real)),
        (history, "tune history", history if history.exists() else _existing_parent(history)),
    ):
        if not os.access(where, os.W_OK):
            raise InvalidArgumentError(f"cannot write the {what} {path}: {where} is not writable")
    try:
        _current(target)
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"{e}; apply records the text it replaces") from None


def _check_files(target: Path) -> None:
    """The settings file and its history are regular files or absent: a
    directory cannot be written, and a FIFO or a device would block a read
    or a write (docs/spec.md §14.4). Checked before anything is written."""
    for path, what in ((target, "settings file"), (history_path(target), "tune history")):
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            continue
        except OSError as e:
            raise InvalidArgumentError(f"cannot read the {what} {path}: {_why(e)}") from None
        if stat.S_ISDIR(mode):
            raise InvalidArgumentError(f"cannot write the {what} {path}: it is a directory")
        if not stat.S_ISREG(mode):
            raise InvalidArgumentError(f"cannot use the {what} {path}: not a regular file")


def _existing_parent(path: Path) -> Path:
    """The nearest folder above ``path`` that exists (apply makes the rest)."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent


def revert(target: Path) -> bool:
    """Restore the settings the last un-reverted ``apply`` replaced (removing
    the file when there was none); ``False`` when there is nothing to revert.
    The file is restored first and the revert recorded after: a revert that
    fails is not recorded (the apply can still be reverted), and one cut
    short between the two is done again, writing the same text."""
    _check_files(target)
    if not history_path(target).exists():
        return False
    with _locked(history_path(target)):
        return _revert(target)


def _revert(target: Path) -> bool:
    stack: list[dict[str, Any]] = []
    for e in _read_history(history_path(target)):
        if e["action"] == "apply":
            stack.append(e)
        elif stack:
            stack.pop()
    if not stack:
        return False
    last = stack[-1]
    before = last["before"]
    now = _current(target)
    if now is not None and now not in (last["after"], before):
        # Edited since the apply (docs/spec.md §14.4): restoring would lose
        # the edit, which no file or history line holds.
        raise InvalidArgumentError(
            f"the settings file {target} was changed since okfast tune applied it; "
            "a revert would lose that change: move the file aside to revert"
        )
    if before is None:
        # The file apply made: through a symbolic link, its target, as
        # write_atomically wrote it; the link stays, as it was before.
        made = Path(os.path.realpath(target)) if target.is_symlink() else target
        try:
            made.unlink(missing_ok=True)
        except OSError as e:
            raise InvalidArgumentError(
                f"cannot remove the settings file {made}: {_why(e)}"
            ) from None
    else:
        _write(target, before)
    _append(history_path(target), {"action": "revert", "before": now, "after": before})
    return True


def _why(e: Exception) -> str:
    return (e.strerror if isinstance(e, OSError) else None) or str(e)


def _write(target: Path, text: str) -> None:
    try:
        write_atomically(target, text)
    except OSError as e:
        raise InvalidArgumentError(f"cannot write the settings file {target}: {_why(e)}") from None


def _append(path: Path, event: dict[str, Any]) -> int:
    """Append ``event`` as one line, synced; the history's size before it."""
    event = {"time": datetime.now(timezone.utc).isoformat(timespec="seconds"), **event}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a+b") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            torn = f.tell() > 0 and (f.seek(-1, os.SEEK_END), f.read(1))[1] != b"\n"
            # A line torn by a crash is closed first, so this event is a line of its own.
            line = json.dumps(event, sort_keys=True, ensure_ascii=False) + "\n"
            f.write((b"\n" if torn else b"") + line.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise InvalidArgumentError(f"cannot write the tune history {path}: {_why(e)}") from None
    return size


def _read_history(path: Path) -> list[dict[str, Any]]:
    """The history's events; a line that is not one (torn by a crash mid-append,
    not UTF-8, not an apply or revert with texts or null) is skipped."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as e:
        raise InvalidArgumentError(f"cannot read the tune history {path}: {_why(e)}") from None
    out = []
    # Lines end at "\n" only: an event's JSON may hold U+0085, U+2028 or
    # U+2029 unescaped, where ``str.splitlines`` would also split.
    for raw in data.split(b"\n"):
        try:
            # Strict: NaN, Infinity or a repeated key is not JSON (§14.4).
            event = strict_json.loads(raw.decode("utf-8"))
        except ValueError:
            continue
        if _is_event(event):
            out.append(event)
    return out


def _is_event(e: object) -> bool:
    """An apply or revert with both texts present, each text (UTF-8 can
    write it: no lone surrogate) or null, an apply's after text."""
    return (
        isinstance(e, dict)
        and e.get("action") in ("apply", "revert")
        and all(k in e and _is_text_or_null(e[k]) for k in ("before", "after"))
        and (e["action"] == "revert" or isinstance(e["after"], str))
    )


def _is_text_or_null(value: object) -> bool:
    return value is None or (isinstance(value, str) and surrogate_in(value) is None)
