"""``okfast mcp``: the command line of the MCP server.

It imports the MCP SDK only when the command runs, so the rest of the CLI
works (and starts as fast) without the ``okfast[mcp]`` extra.

Exit codes: 0 the client went away (stdio) or the server was stopped; 2 bad
usage, a bad catalog, a non-loopback ``--host`` or a missing extra.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from okfast.integrations.settings_watch import is_regular_file
from okfast.memory.scope import Scope
from okfast.numerals import ascii_int
from okfast.paths import LoadCatalog, catalog_options, option_file
from okfast.settings import Settings, command_settings


def _fail(message: str) -> int:
    # Worded as every command's refusal (docs/spec.md §10.4).
    print(f"okfast: {message}", file=sys.stderr)
    return 2


def _scope(args: argparse.Namespace) -> Scope | None:
    """The one memory scope this server serves, from its flags (``None``: no memory)."""
    if args.tenant is None and args.user is None and args.session is None:
        return None
    return Scope(args.tenant, args.user, args.session)


def _run(args: argparse.Namespace, load: LoadCatalog) -> int:
    try:
        from okfast.integrations import mcp as okfast_mcp
        from okfast.integrations import mcp_transport
    except ImportError as e:
        return _fail(f"{e} (pip install 'okfast[mcp]')")
    try:
        scope = _scope(args)
    except ValueError as e:
        return _fail(str(e))
    if args.transport == "stdio" and sys.stdin is None:
        # Started with fd 0 closed (`<&-`): a descriptor opened later would
        # take its place and be read as the wire (docs/spec.md §10.4).
        return _fail("mcp: standard input is closed")
    if args.capture and scope is None:
        return _fail("--capture needs a memory scope: give --tenant (and --user, --session)")
    if args.transport == "streamable-http":
        # Checked before loading, so a wrong --host fails at once.
        try:
            mcp_transport.loopback_addresses(args.host)
        except (ValueError, OSError) as e:
            return _fail(str(e))
    catalog = load(args)
    if catalog is None:
        return 2
    try:
        # Stdout carries the protocol: the settings' problems go to stderr.
        given = command_settings(catalog, args.settings)
        # Over stdio one client waits for each answer: tools run on the event
        # loop, without a thread switch; over HTTP each gets a worker thread.
        server = okfast_mcp.build_server(
            catalog,
            scope=scope,
            capture=args.capture,
            settings=_served(args.settings, given),
            threads=args.transport != "stdio",
        )
    except ValueError as e:
        return _fail(str(e))
    # SIGTERM (a supervisor's stop) ends the server as Ctrl-C does: status 0.
    before = signal.signal(signal.SIGTERM, _interrupt)
    try:
        failed = mcp_transport.serve(server, args.transport, host=args.host, port=args.port)
    except (ValueError, OSError) as e:
        return _fail(str(e))
    except KeyboardInterrupt:
        return 0
    finally:
        signal.signal(signal.SIGTERM, before)
    if failed is not None:
        # An output that cannot be written (a full disk): reported as every
        # command's is, one line and status 1 (docs/spec.md §10.4).
        raise failed
    return 0


def _served(path: str | None, given: Settings) -> Settings | Path | None:
    """What the server is given for ``--settings``: a regular file's path,
    which it watches (docs/spec.md §13.5); otherwise what was read, not the
    path again: ``--settings <(...)`` is a pipe that reads once (§13.3)."""
    if path is None:
        return None
    return Path(path) if is_regular_file(path) else given


def _interrupt(signum: int, frame: object) -> None:
    # Outside a transport's own handling (stdio's event loop and uvicorn
    # each take SIGTERM while they serve; uvicorn hands it on once it has
    # stopped): as Ctrl-C.
    raise KeyboardInterrupt


def _port(text: str) -> int:
    try:
        n = ascii_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0-65535 (0: any free port), got {n}")
    return n


def _host(text: str) -> str:
    """``--host``: an IPv6 address may be written as in a URL, ``[::1]``
    (docs/integrations.md), as well as bare."""
    if len(text) > 2 and text.startswith("[") and text.endswith("]"):
        return text[1:-1]
    return text


def register(sub: Any, load: LoadCatalog) -> None:
    """Add ``mcp`` to the top-level parser."""
    m = sub.add_parser(
        "mcp",
        help="serve a catalog to agents over the Model Context Protocol (okfast[mcp])",
        description=(
            "Serve a catalog's knowledge (resolve, get_concept, list_sources, "
            "assemble_context) and, with --tenant, that one scope's memory (memory_read; "
            "memory_capture with --capture) as MCP tools."
        ),
    )
    catalog_options(m)
    m.add_argument(
        "--settings",
        type=option_file,
        default=None,
        metavar="FILE",
        help="default: the file the catalog names",
    )
    m.add_argument("--tenant", default=None, help="memory scope: tenant id")
    m.add_argument("--user", default=None, help="memory scope: user id (needs --tenant)")
    m.add_argument("--session", default=None, help="memory scope: session id (needs --user)")
    m.add_argument(
        "--capture", action="store_true", help="offer memory_capture (needs a memory scope)"
    )
    m.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    m.add_argument(
        "--host",
        type=_host,
        default="127.0.0.1",
        help="streamable-http: a loopback address (127.0.0.1)",
    )
    m.add_argument(
        "--port", type=_port, default=8000, help="streamable-http: port (0: any free port)"
    )

    def run(args: argparse.Namespace) -> int:
        return _run(args, load)

    m.set_defaults(run=run)
