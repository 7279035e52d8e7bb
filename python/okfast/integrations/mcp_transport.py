"""How ``okfast mcp`` talks: stdio, or streamable HTTP on a loopback address.

The server has no authentication and may serve a user's memory, so HTTP
listens on this machine only; to serve others, put an authenticating proxy
in front of it.

Over stdio the SDK's transport reads each line and writes each answer on a
worker thread (three thread switches per call); on a pipe or socket this
module waits for it on the event loop instead (:func:`serve_stdio`), the
same JSON-RPC lines through the same SDK session.
"""

from __future__ import annotations

import collections
import contextlib
import ipaddress
import json
import os
import re
import select
import signal
import socket
import stat
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import IO, Any, Literal, TextIO

import anyio
from anyio import wait_readable, wait_writable
from mcp import types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params

from okfast import strict_json
from okfast.arguments import of_type, surrogate_in, text_of
from okfast.errors import InvalidArgumentError, InvalidArgumentTypeError
from okfast.scoring import whole_of

Transport = Literal["stdio", "streamable-http"]
TRANSPORTS: tuple[Transport, ...] = ("stdio", "streamable-http")

AddrInfo = tuple[socket.AddressFamily, socket.SocketKind, int, str, Any]


def loopback_addresses(host: str, port: int = 0) -> Sequence[AddrInfo]:
    """What ``host`` resolves to; ``ValueError`` unless every address is a
    loopback address (see :func:`loopback_socket`)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        raise InvalidArgumentError(f"cannot resolve host {host!r}: {e}") from None
    addresses = {str(info[4][0]).split("%")[0] for info in infos}
    if not infos or not all(ipaddress.ip_address(a).is_loopback for a in addresses):
        raise InvalidArgumentError(
            f"--host {host} is not a loopback address: okfast mcp serves this machine only "
            "(127.0.0.1, ::1 or localhost)"
        )
    return infos


def loopback_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port`` 0: any free port);
    ``ValueError`` unless ``host`` is a loopback address (see the module's doc)."""
    family, kind, proto, _, addr = loopback_addresses(host, port)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def serve(
    server: MCPServer[Any],
    transport: Transport = "stdio",
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    announce: TextIO | None = None,
) -> OSError | None:
    """Run ``server`` until its client goes away (stdio) or it is interrupted
    (streamable HTTP, at ``http://host:port/mcp``; the address is written to
    ``announce``, stderr by default, once the socket listens). Over stdio,
    the error that stopped its output being written, if one did (the
    command reports it with status 1, docs/spec.md §10.4). Its arguments are
    checked first: okfast's errors, not the socket's (docs/spec.md §8)."""
    of_type("server", server, MCPServer)
    text_of("host", host)
    if announce is not None and not callable(getattr(announce, "write", None)):
        raise InvalidArgumentTypeError(f"announce must be a text stream, got {announce!r}")
    n = whole_of(port)
    if n is None or not 0 <= n <= 65535:
        # A larger one would be taken modulo 65536 by the socket, silently.
        raise InvalidArgumentError(
            f"port must be a whole number 0-65535 (0: any free port), got {port!r}"
        )
    if transport == "stdio":
        # serve_stdio runs the SDK's low-level server, which MCPServer holds
        # privately: without it (another SDK version), the SDK's own transport.
        if hasattr(server, "_lowlevel_server"):
            return anyio.run(serve_stdio, server)
        server.run("stdio")
        return None
    if transport != "streamable-http":
        raise InvalidArgumentError(
            f"unknown transport {transport!r} (one of {', '.join(TRANSPORTS)})"
        )
    sock = loopback_socket(host, n)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    out = announce if announce is not None else sys.stderr
    out.write(f"okfast mcp: streamable HTTP on http://{shown}:{bound_port}/mcp\n")
    out.flush()
    anyio.run(_serve_http, server, sock, host)
    return None


async def _serve_http(server: MCPServer[Any], sock: socket.socket, host: str) -> None:
    # Imported here: stdio does not need the HTTP server.
    import uvicorn

    app = server.streamable_http_app(host=host, transport_security=_rebinding_guard(host))
    config = uvicorn.Config(app, log_level="warning")
    with sock:
        await uvicorn.Server(config).serve(sockets=[sock])


def _rebinding_guard(host: str) -> TransportSecuritySettings:
    """DNS-rebinding protection, whatever loopback spelling ``host`` is: a
    request's Host and Origin must name a loopback address (the SDK switches
    its own on only for ``127.0.0.1``, ``localhost`` and ``::1``, so a server
    started on ``127.1`` answered a page of any site)."""
    names = ["127.0.0.1", "localhost", "[::1]"]
    for spelled in (host, host.lower()):
        shown = f"[{spelled}]" if ":" in spelled else spelled
        if shown not in names:
            names.append(shown)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{n}:*" for n in names],
        allowed_origins=[f"http://{n}:*" for n in names],
    )


# -- stdio on the event loop ----------------------------------------------------------


def _pollable(fd: int) -> bool:
    """Whether the event loop can wait on ``fd``: a pipe or a socket, on POSIX
    (not a file or a terminal, and not Windows, whose loop cannot wait on pipes)."""
    if sys.platform == "win32":
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.contextmanager
def _claimed_stdio() -> Iterator[tuple[int, int]]:
    """Private duplicates of stdin and stdout for the protocol. Meanwhile fd 0
    reads the null device and fd 1 writes to stderr, as in the SDK's own stdio
    transport, so a stray ``print`` or a child process cannot corrupt the
    wire; both are restored on exit."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        yield wire_in, wire_out
    finally:
        sys.stdout.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        for fd in (null, wire_in, wire_out):
            os.close(fd)


async def _read(fd: int, polled: bool) -> bytes:
    """What has arrived on ``fd``: after the event loop says it is there (a
    pipe or a socket, see :func:`_pollable`), else read in a worker thread (a
    file or a terminal, which the loop cannot wait on)."""
    if polled:
        await wait_readable(fd)
        return os.read(fd, 1 << 16)
    return await anyio.to_thread.run_sync(os.read, fd, 1 << 16)


class _Outstanding:
    """The requests handed to the SDK and not answered yet, by id: at the end
    of stdin the reader waits for their answers before it reports the end,
    which closes the session (the SDK would drop the answers of requests
    still running)."""

    def __init__(self) -> None:
        self._ids: collections.Counter[int | str] = collections.Counter()
        self._idle = anyio.Event()
        self._idle.set()

    def __bool__(self) -> bool:
        return bool(self._ids)

    def asked(self, request_id: object) -> None:
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            return
        if not self._ids:
            self._idle = anyio.Event()
        self._ids[_key(request_id)] += 1

    def answered(self, request_id: object) -> None:
        # True is no id (the SDK refuses it), never the 1 it equals in Python.
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            return
        key = _key(request_id)
        left = self._ids.pop(key, 0) - 1
        if left > 0:
            self._ids[key] = left
        if not self._ids:
            self._idle.set()

    async def settled(self) -> None:
        await self._idle.wait()


def _key(request_id: int | str) -> int | str:
    # The SDK's own correlation: "7" and 7 are one id to it (a cancellation
    # naming either cancels the request), so they are one here too.
    return coerce_request_id(request_id)


class _LineReader(anyio.AsyncFile[str]):
    """The lines of stdin, read as :func:`_read` says. The descriptor stays
    blocking (it may be shared with other processes): a read after a
    readiness wait returns what has arrived."""

    def __init__(
        self,
        fd: int,
        fp: IO[str],
        answer: Callable[[str], Awaitable[None]],
        outstanding: _Outstanding,
    ) -> None:
        super().__init__(fp)
        self._fd = fd
        self._polled = _pollable(fd)
        self._pending = bytearray()
        #: How much of ``_pending`` holds no newline: each byte is searched once.
        self._scanned = 0
        self._eof = False
        self._answer = answer
        self._outstanding = outstanding

    async def readline(self) -> str:
        while True:
            end = self._pending.find(b"\n", self._scanned)
            while end < 0 and not self._eof:
                self._scanned = len(self._pending)
                chunk = await _read(self._fd, self._polled)
                self._eof = not chunk
                self._pending += chunk
                end = self._pending.find(b"\n", self._scanned)
            cut = len(self._pending) if end < 0 else end + 1
            line = bytes(self._pending[:cut])
            del self._pending[:cut]
            self._scanned = 0
            # Bytes that are not UTF-8 become lone surrogates, which the SDK's
            # parser refuses and refusal() answers (never U+FFFD, which would
            # let a corrupted text through as if it had been sent).
            text = line.decode("utf-8", errors="surrogateescape")
            if not text:
                # The end of stdin: every request read gets its answer first.
                await self._outstanding.settled()
                return ""
            reply, tracked = screen(text)
            if reply is None:
                self._track(tracked)
                return text
            # A message the SDK's parser would drop unanswered, leaving the
            # client waiting: answered here, and the next line read instead.
            if reply:
                await self._answer(reply + "\n")

    def _track(self, tracked: tuple[str, object] | None) -> None:
        if tracked is None:
            return
        what, request_id = tracked
        if what == "asked":
            self._outstanding.asked(request_id)
        else:
            # A cancelled request may never be answered (MCP's cancellation).
            self._outstanding.answered(request_id)


def refusal(line: str) -> str | None:
    """``None`` when the SDK reads ``line`` as a JSON-RPC message; else the
    JSON-RPC error that answers it (docs/integrations.md), or ``""`` when
    nothing may answer it (a notification, a client's response)."""
    return screen(line)[0]


def screen(line: str) -> tuple[str | None, tuple[str, object] | None]:
    """:func:`refusal`'s answer, and for a message the SDK reads, what the
    end-of-stdin wait tracks: ``("asked", id)`` for a request,
    ``("cancelled", id)`` for a cancellation, else ``None``. The SDK's parser
    refuses a line that is not JSON, a string holding a lone surrogate
    (``"\\ud800"``, or bytes that are not UTF-8), an integer of more digits
    than Python converts and a message nested deeper than it reads, and
    drops the message without a word; it reads a request whose id is
    ``null``, a float, a boolean or an object as a notification, never
    answered. A line the SDK reads as a request is parsed once here."""
    if not line.strip():
        return None, None
    refused = ""
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as e:  # noqa: BLE001 (whatever the SDK's parser raises, it drops the line)
        refused = str(e)
    else:
        if isinstance(message, types.JSONRPCRequest):
            return None, ("asked", message.id)
        if not isinstance(message, types.JSONRPCNotification):
            return None, None
        # A notification, as the SDK reads it; so is a request whose id is
        # none (null, a float, …): the line is read again to tell them apart
        # (its own keys, however spelled, not the text "id" anywhere in it).
    try:
        doc = json.loads(line, parse_int=strict_json.integer)
    except RecursionError:
        return _error(None, -32700, "Parse error: the line nests too deeply to read"), None
    except ValueError:
        return _error(None, -32700, "Parse error: the line is not JSON"), None
    if isinstance(doc, dict) and "method" in doc and "id" in doc:
        given = doc["id"]
        if isinstance(given, bool) or not isinstance(
            given, int | str | strict_json.OversizedInteger
        ):
            shown = json.dumps(given)[:40]
            return _error(
                None, -32600, f"Invalid Request: the id must be a string or an integer, got {shown}"
            ), None
    if not refused:
        if isinstance(doc, dict) and doc.get("method") == "notifications/cancelled":
            # Read as the SDK reads it: "7" cancels 7, true cancels nothing.
            params = doc.get("params")
            cancelled = cancelled_request_id_from_params(
                params if isinstance(params, dict) else None
            )
            return None, ("cancelled", cancelled)
        return None, None
    if not isinstance(doc, dict) or "method" not in doc:
        # A client's response, or not a message at all: answered with its
        # id when that is readable (docs/integrations.md).
        if isinstance(doc, dict) and ("result" in doc or "error" in doc):
            return "", None
        given = doc.get("id") if isinstance(doc, dict) else None
        return _error(_readable(given), -32600, "Invalid Request: not a JSON-RPC message"), None
    if "id" not in doc:
        return "", None  # a notification: never answered
    given = doc["id"]
    why = _why(doc) or (
        "it nests deeper than the parser reads"
        if "recursion limit" in refused
        else "not a valid JSON-RPC request"
    )
    return _error(_readable(given), -32600, f"Invalid Request: {why}"), None


def _readable(given: object) -> int | str | None:
    """An id an answer can carry: an integer (not a bool) or a string that
    is UTF-8; else ``None``."""
    if isinstance(given, int) and not isinstance(given, bool):
        return given
    if isinstance(given, str) and surrogate_in(given) is None:
        return given
    return None


def _why(doc: object) -> str | None:
    """What in a parsed message its reader refuses, when it is in a value."""
    stack = [doc]
    while stack:
        v = stack.pop()
        if isinstance(v, strict_json.OversizedInteger):
            return f"an integer of {v.digits} digits"
        if isinstance(v, str) and surrogate_in(v) is not None:
            return "a string holds a lone surrogate (not UTF-8)"
        if isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return None


#: How the SDK writes an answer's head (its model's fields in order): the
#: id is read from it without parsing a result that may be large.
_ANSWER_HEAD = re.compile(r'\{"jsonrpc":"2\.0","id":(-?\d+|"(?:[^"\\]|\\.)*"),"(?:result|error)"')


def _answered_id(text: str) -> object:
    """The id an answer line answers, ``None`` for anything else (the
    server's own request or notification)."""
    head = _ANSWER_HEAD.match(text)
    if head is not None:
        return json.loads(head.group(1))
    doc = json.loads(text)  # written otherwise: read in full
    if isinstance(doc, dict) and "method" not in doc:
        return doc.get("id")
    return None


def _error(request_id: int | str | None, code: int, message: str) -> str:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    )


class _LineWriter(anyio.AsyncFile[str]):
    """Writes to a pipe or socket when the event loop says there is room, at
    most ``PIPE_BUF`` bytes at a time, which a pipe with room takes without
    blocking; to a file or a terminal from a worker thread. The descriptor
    stays blocking, as :class:`_LineReader`'s."""

    def __init__(self, fd: int, fp: IO[str], outstanding: _Outstanding) -> None:
        super().__init__(fp)
        self._fd = fd
        self._polled = _pollable(fd)
        self._outstanding = outstanding
        # The SDK's answers and the reader's refusals: one line at a time, so
        # that two never interleave their pieces.
        self._lock = anyio.Lock()
        #: The client closed its end (a broken pipe): later lines are dropped.
        self.gone = False
        #: Why the output could not be written otherwise (a full disk).
        self.failed: OSError | None = None
        #: Ends the session once the output is gone or failed: nothing more
        #: can be answered, so the server does not wait for another line.
        self.stop: Callable[[], None] = lambda: None

    async def write(self, text: str) -> int:
        """Write one of the SDK's lines: an answer settles its request."""
        await self.refuse(text)
        if self._outstanding:
            self._outstanding.answered(_answered_id(text))
        return len(text)

    async def refuse(self, text: str) -> None:
        """Write the reader's answer to a line the SDK never saw: it settles
        no request (its id may be one that is in flight, reused)."""
        data = memoryview(text.encode("utf-8"))
        async with self._lock:
            try:
                while data and not self.gone:
                    piece = data[: select.PIPE_BUF]
                    if self._polled:
                        await wait_writable(self._fd)
                        data = data[os.write(self._fd, piece) :]
                    else:
                        data = data[await anyio.to_thread.run_sync(os.write, self._fd, piece) :]
            except (BrokenPipeError, ConnectionResetError):
                # The client went away: the server ends quietly, not with a
                # traceback (docs/integrations.md).
                self.gone = True
                self.stop()
            except OSError as e:
                # Reported by the command as one line, status 1 (docs/spec.md
                # §10.4), once the session has ended.
                self.gone, self.failed = True, e
                self.stop()

    async def flush(self) -> None:
        """Nothing is buffered."""


async def serve_stdio(server: MCPServer[Any]) -> OSError | None:
    """Serve ``server`` over this process's stdin and stdout until the client
    closes stdin (or a file given as stdin ends) and every request read is
    answered, or its output is gone; what stopped the output being written
    (a full disk) when not its client leaving."""
    with (
        _claimed_stdio() as (wire_in, wire_out),
        open(wire_in, encoding="utf-8", closefd=False) as fp_in,
        open(wire_out, "w", encoding="utf-8", closefd=False) as fp_out,
    ):
        outstanding = _Outstanding()
        writer = _LineWriter(wire_out, fp_out, outstanding)
        # A client gone ends the session through the writer (`stop`), the
        # reader waiting or not (docs/integrations.md).
        reader = _LineReader(wire_in, fp_in, writer.refuse, outstanding)
        async with anyio.create_task_group() as group:
            writer.stop = group.cancel_scope.cancel
            group.start_soon(_stop_on_sigterm, group.cancel_scope)
            async with stdio_server(stdin=reader, stdout=writer) as (read, write):
                # MCPServer.run_stdio_async does the same with the SDK's streams.
                lowlevel = server._lowlevel_server
                await lowlevel.run(read, write, lowlevel.create_initialization_options())
            group.cancel_scope.cancel()
    return writer.failed


async def _stop_on_sigterm(scope: anyio.CancelScope) -> None:
    """SIGTERM (a supervisor's stop) cancels the session on the event loop,
    so the server ends as when its client goes away (status 0), not killed
    mid-write nor with a KeyboardInterrupt inside a running tool."""
    if sys.platform == "win32":
        return
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            scope.cancel()
            return
