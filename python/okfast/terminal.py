"""What okfast prints to a terminal (docs/spec.md §10.1): the data it shows —
file names, titles, excerpts, bodies, messages quoting them — comes from
files anyone may have written, so on a terminal its control characters are
shown escaped (``\\x1b``, ``\\u202e``) rather than sent: a file name cannot
move the cursor, recolour the screen or reverse the text after it. Output
to a file or a pipe is written as it is.
"""

from __future__ import annotations

import abc
import contextlib
import os
import re
import sys
import warnings
from collections.abc import Iterator
from typing import Any, TextIO

#: The bidirectional controls (Unicode's Bidi_Control property): the
#: embeddings, overrides and isolates of the "Trojan Source" set, and the
#: invisible marks U+061C, U+200E and U+200F, which reorder the text around
#: them as well (docs/spec.md §10.1).
BIDI_CONTROLS = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]

#: C0 controls but tab and newline, DEL, C1 controls, and the bidirectional
#: controls.
_UNSAFE = [c for c in range(0x20) if c not in (0x09, 0x0A)]
_UNSAFE += list(range(0x7F, 0xA0)) + BIDI_CONTROLS
_ESCAPES = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _UNSAFE}


def escape(text: str) -> str:
    """``text`` with every control character above written as an escape."""
    return text.translate(_ESCAPES)


def one_line(text: str) -> str:
    """``text`` with each line feed and carriage return written as ``\\n``
    and ``\\r``: a listing of one problem per line keeps a file name or a
    value holding one on its line, on a terminal and in a pipe alike
    (docs/spec.md §10.1)."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def score_text(score: int | float) -> str:
    """A weighted count as it is; a BM25F or fused score to four decimals
    (docs/spec.md §10.1)."""
    return f"{score:.4f}" if isinstance(score, float) else str(score)


#: A lone surrogate: how ``os.fsdecode`` spells a file name's byte that is not UTF-8.
SURROGATE = "\ud800-\udfff"
_SURROGATE = re.compile(f"[{SURROGATE}]")


def u_escaped(pattern: re.Pattern[str], text: str) -> str:
    """``text`` with each character ``pattern`` matches written as its JSON
    escape, ``\\udcff`` say: how JSON output and file names in text output
    spell what must not be written raw (docs/spec.md §10.1)."""
    return pattern.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def name_text(name: object) -> str:
    """A file name as text output shows it: a byte that is not UTF-8 (a lone
    surrogate) as its escape ``\\udcff``, as JSON output spells it, so the
    output stays UTF-8 whatever its error handler (docs/spec.md §10.1)."""
    return u_escaped(_SURROGATE, str(name))


def print_err(line: str) -> None:
    """``line`` on stderr, escaped when stderr is a terminal: messages quote
    file names and contents, which anyone may have written (§10.1)."""
    print(escape(line) if sys.stderr.isatty() else line, file=sys.stderr)


class _Wrapped(abc.ABC):
    """A text stream over ``inner`` whose subclasses change ``write``;
    everything else (``buffer``, ``fileno``, ``isatty``) is ``inner``'s."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    @abc.abstractmethod
    def write(self, text: str) -> int:
        """Write ``text`` as the subclass does; its length, as streams return."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Escaping(_Wrapped):
    """Writes to ``inner`` with :func:`escape` applied."""

    def write(self, text: str) -> int:
        self._inner.write(escape(text))
        return len(text)


@contextlib.contextmanager
def safe_stdout() -> Iterator[None]:
    """Within this block, ``sys.stdout`` escapes control characters when it
    is a terminal."""
    inner = sys.stdout
    if not inner.isatty():
        yield
        return
    sys.stdout = _Escaping(inner)
    try:
        yield
    finally:
        sys.stdout = inner


class _Dropping(_Wrapped):
    """Writes to ``inner`` and drops what cannot be written (a reader that
    went away, a full disk)."""

    def write(self, text: str) -> int:
        try:
            self._inner.write(text)
        except OSError:
            self._to_null()
        return len(text)

    def flush(self) -> None:
        try:
            self._inner.flush()
        except OSError:
            self._to_null()

    def _to_null(self) -> None:
        # The unwritten rest stays in the stream's buffer: sent to the null
        # device, it cannot fail again at the next write or at exit.
        with contextlib.suppress(OSError, ValueError):
            fd = self._inner.fileno()
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, fd)
            os.close(null)


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Within this block, a message ``sys.stderr`` cannot take is dropped:
    a stderr whose reader went away (``2>&1 | head -0``) is as a closed one,
    and leaves the command's status alone (docs/spec.md §10.4)."""
    inner = sys.stderr
    sys.stderr = _Dropping(inner)
    try:
        yield
    finally:
        sys.stderr = inner


@contextlib.contextmanager
def safe_warnings() -> Iterator[None]:
    """Within this block, a warning Python shows on ``sys.stderr`` is escaped
    when stderr is a terminal: a ``CacheWarning`` quotes the cache file's
    path, which the environment names (docs/spec.md §9.2, §10.1)."""
    if not sys.stderr.isatty():
        yield
        return
    shown = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if file is not None and file is not sys.stderr:
            shown(message, category, filename, lineno, file, line)
            return
        text = warnings.formatwarning(message, category, filename, lineno, line)
        # As Python's own display: a stderr that cannot be written loses it.
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(escape(text))

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown
