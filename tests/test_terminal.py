"""What okfast prints to a terminal (docs/spec.md §10.1): control characters
from the data are shown escaped on a terminal and written as they are to a
pipe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_bundle
from okfast.terminal import escape, one_line

EVIL = "\x1b[2J\u202e"


def test_control_characters_are_escaped_and_the_rest_kept() -> None:
    assert escape("a\tb\nc") == "a\tb\nc"
    assert escape("é ß 漢 \u00a0") == "é ß 漢 \u00a0"
    assert escape(EVIL) == "\\x1b[2J\\u202e"
    assert escape("\x00\x7f\x85\x9f\u2066\u2069") == "\\x00\\x7f\\x85\\x9f\\u2066\\u2069"
    # Every code point below U+0100 but tab and newline that is a control.
    for c in [*range(0x20), *range(0x7F, 0xA0)]:
        if c not in (0x09, 0x0A):
            assert escape(chr(c)) == f"\\x{c:02x}"


def _validate(root: Path, *, tty: bool) -> str:
    argv = [sys.executable, "-m", "okfast", "validate", str(root)]
    if not tty:
        return subprocess.run(argv, capture_output=True, text=True, check=False).stdout
    return _on_a_terminal(argv)


def _on_a_terminal(argv: list[str], *, stream: str = "stdout") -> str:
    """What ``argv`` writes to ``stream`` when that is a terminal (the other
    stream goes nowhere)."""
    import pty  # POSIX only: imported where the test runs

    main, sub = pty.openpty()
    other = subprocess.DEVNULL
    out, err = (sub, other) if stream == "stdout" else (other, sub)
    try:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, close_fds=True)
        os.close(sub)
        chunks = []
        while True:
            try:
                data = os.read(main, 65536)
            except OSError:  # the other end closed (EIO on Linux)
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=60)
    finally:
        os.close(main)
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_a_file_name_cannot_drive_the_terminal(tmp_path: Path) -> None:
    root = write_bundle(
        tmp_path / "b",
        {"ok.md": "---\ntype: T\ntitle: Fine\n---\nx\n", f"bad{EVIL}.md": "---\ntype: T\n---\n"},
    )
    shown = _validate(root, tty=True)
    assert "InvalidConceptId" in shown and "bad\\x1b[2J\\u202e" in shown
    assert "\x1b" not in shown and "\u202e" not in shown
    piped = _validate(root, tty=False)
    assert f"bad{EVIL}" in piped  # a pipe gets the bytes as they are


def test_a_message_on_stderr_is_escaped_on_a_terminal_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A bad catalog's report quotes its paths; on a terminal they cannot
    drive it (docs/spec.md §10.1), in a pipe they are as written."""
    import io

    from okfast.cli import main

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    (tmp_path / "c.json").write_text(
        '{"version": 1, "sources": [{"id": "a", "path": "x\\u001b[2J\\u202eRED"}]}'
    )
    for stream, shown in ((Tty(), "x\\x1b[2J\\u202eRED"), (io.StringIO(), f"x{EVIL}RED")):
        monkeypatch.setattr(sys, "stderr", stream)
        assert main(["resolve", "--catalog", str(tmp_path / "c.json"), "q"]) == 2
        lines = stream.getvalue().splitlines()
        assert lines[0].startswith("okfast: bad catalog") and shown in lines[1]


def test_json_search_output_and_every_message_hold_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """docs/spec.md §10.1: on a terminal, --json stays JSON (DEL and C1 as
    \\u escapes, never the \\x7f no JSON reader takes); the search summary
    and a usage error quoting what was typed are escaped on stderr."""
    import io
    import json

    from okfast.cli import main

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    root = tmp_path / "b\x1b[31mX"
    write_bundle(
        root,
        {
            "a.md": '---\ntype: T\ntitle: "del \\x7f c1 \\x9b x"\n---\nalpha\n',
            "broken\x1bx.md": "---\ntitle: [\n---\nalpha\n",
        },
    )
    out, err = Tty(), Tty()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    assert main(["search", str(root), "alpha", "--json"]) == 0
    doc = json.loads(out.getvalue())
    assert [h["title"] for h in doc["hits"]] == ["del \x7f c1 \x9b x"]
    assert main(["search", str(root), "alpha"]) == 0
    assert "\x1b" not in err.getvalue() and "b\\x1b[31mX" in err.getvalue()
    with pytest.raises(SystemExit):
        main(["search", str(root), "alpha", "\x1b[2J"])
    assert "\x1b" not in err.getvalue() and "\\x1b[2J" in err.getvalue()


def test_the_bidirectional_marks_are_escaped_too() -> None:
    """docs/spec.md §10.1: every bidirectional control (Unicode's Bidi_Control
    set) reorders the text after it, the invisible marks included."""
    assert escape("a\u061cb\u200ec\u200fd") == "a\\u061cb\\u200ec\\u200fd"
    for c in [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]:
        assert escape(chr(c)) == f"\\u{c:04x}"
    # Their neighbours are not controls: shown as they are.
    assert escape("\u200d\u2028\u2065\u206a") == "\u200d\u2028\u2065\u206a"


def test_a_bidirectional_mark_in_a_title_is_escaped_on_a_terminal_and_in_json(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """docs/spec.md §10.1: a title holding U+200F is shown as \\u200f on a
    terminal; JSON writes it as that escape in a pipe too, and reads back."""
    import io
    import json

    from okfast.cli import main

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    root = write_bundle(
        tmp_path / "b", {"a.md": '---\ntype: T\ntitle: "a\\u200fb\\u061cc"\n---\nalpha\n'}
    )
    out = Tty()
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["search", str(root), "alpha"]) == 0
    assert "a\\u200fb\\u061cc" in out.getvalue() and "\u200f" not in out.getvalue()
    piped = io.StringIO()
    monkeypatch.setattr(sys, "stdout", piped)
    assert main(["search", str(root), "alpha", "--json"]) == 0
    assert "a\\u200fb\\u061cc" in piped.getvalue() and "\u200f" not in piped.getvalue()
    assert json.loads(piped.getvalue())["hits"][0]["title"] == "a\u200fb\u061cc"


def test_one_line_writes_line_ends_as_escapes() -> None:
    """docs/spec.md §10.1: a line feed or carriage return in a field of a
    one-problem-per-line listing is written as \\n or \\r."""
    assert one_line("a\nb\rc\r\nd\te") == "a\\nb\\rc\\r\\nd\te"
    assert one_line("é \x1b \u2028") == "é \x1b \u2028"  # the rest: escape()'s


@pytest.mark.skipif(sys.platform == "win32", reason="a file name holding ESC")
@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_a_cache_warning_is_escaped_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """docs/spec.md §9.2, §10.1: a CacheWarning quotes the cache file's path,
    which $OKFAST_CACHE_DIR names; on a terminal it cannot drive it, in a
    pipe it is as written."""
    root = write_bundle(tmp_path / "b", {"a.md": "---\ntype: T\ntitle: A\n---\nalpha\n"})
    cache = tmp_path / f"c{EVIL}"
    monkeypatch.setenv("OKFAST_CACHE_DIR", str(cache))
    argv = [sys.executable, "-m", "okfast", "validate", str(root)]
    for tty in (True, False):
        subprocess.run(argv, capture_output=True, check=True)  # writes the cache file
        for f in cache.iterdir():
            f.write_bytes(b"not a cache file")
        if tty:
            text = _on_a_terminal(argv, stream="stderr")
            assert "c\\x1b[2J\\u202e" in text and "\x1b" not in text and "\u202e" not in text
        else:
            text = subprocess.run(argv, capture_output=True, text=True, check=True).stderr
            assert f"c{EVIL}" in text
        assert "CacheWarning" in text and "wrong magic" in text
