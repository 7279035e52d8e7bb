"""How ``okfast mcp`` talks: stdio, or streamable HTTP on a loopback address.

The server has no authentication and may serve a user's memory, so HTTP
listens on this machine only; to serve others, put an authenticating proxy
in front of it.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from collections.abc import Sequence
from typing import Any, Literal, TextIO

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer

Transport = Literal["stdio", "streamable-http"]
TRANSPORTS: tuple[Transport, ...] = ("stdio", "streamable-http")

AddrInfo = tuple[socket.AddressFamily, socket.SocketKind, int, str, Any]


def loopback_addresses(host: str, port: int = 0) -> Sequence[AddrInfo]:
    """What ``host`` resolves to; ``ValueError`` unless every address is a
    loopback address (see :func:`loopback_socket`)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        raise ValueError(f"cannot resolve host {host!r}: {e}") from None
    addresses = {str(info[4][0]).split("%")[0] for info in infos}
    if not infos or not all(ipaddress.ip_address(a).is_loopback for a in addresses):
        raise ValueError(
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
) -> None:
    """Run ``server`` until its client goes away (stdio) or it is interrupted
    (streamable HTTP, at ``http://host:port/mcp``; the address is written to
    ``announce``, stderr by default, once the socket listens)."""
    if transport == "stdio":
        server.run("stdio")
        return
    if transport != "streamable-http":
        raise ValueError(f"unknown transport {transport!r} (one of {', '.join(TRANSPORTS)})")
    sock = loopback_socket(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    out = announce if announce is not None else sys.stderr
    out.write(f"okfast mcp: streamable HTTP on http://{shown}:{bound_port}/mcp\n")
    out.flush()
    anyio.run(_serve_http, server, sock, host)


async def _serve_http(server: MCPServer[Any], sock: socket.socket, host: str) -> None:
    # `host` switches on the SDK's DNS-rebinding protection for loopback names.
    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, log_level="warning")
    with sock:
        await uvicorn.Server(config).serve(sockets=[sock])
