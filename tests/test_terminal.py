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
from okfast.terminal import escape

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
    import pty  # POSIX only: imported where the test runs

    main, sub = pty.openpty()
    try:
        proc = subprocess.Popen(argv, stdout=sub, stderr=subprocess.DEVNULL, close_fds=True)
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
