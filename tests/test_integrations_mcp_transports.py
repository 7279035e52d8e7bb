"""``okfast mcp`` as a real process: the SDK's stdio client (``ClientSession`` +
``stdio_client``) against two servers of different scopes, streamable HTTP on
127.0.0.1, and the command line's refusals."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from integration_extras import copy_examples, require
from okfast import Catalog, Query, Resolver
from okfast.cli import main

mcp = require("mcp", "mcp")
mcp_stdio = require("mcp.client.stdio", "mcp")


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    return copy_examples(tmp_path)


def okfast_mcp(catalog: Path, *flags: str) -> list[str]:
    return ["-m", "okfast", "mcp", "--catalog", str(catalog), *flags]


def server_env() -> dict[str, str]:
    # The SDK starts servers with a minimal environment: keep the suite's
    # cache directory (conftest) so no cache file lands in the user's, and
    # PYTHONPATH, so the server runs the okfast under test.
    keep = ("OKFAST_CACHE_DIR", "PYTHONPATH")
    return {k: os.environ[k] for k in keep if k in os.environ}


def ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return dict(result.structured_content)


async def test_stdio_servers_of_two_scopes(catalog: Path, tmp_path: Path) -> None:
    def params(*scope: str) -> Any:
        return mcp.StdioServerParameters(
            command=sys.executable,
            args=okfast_mcp(catalog, *scope, "--capture"),
            env=server_env(),
            cwd=str(tmp_path),
        )

    alice = params("--tenant", "acme", "--user", "alice")
    bob = params("--tenant", "acme", "--user", "bob", "--session", "s1")
    with open(tmp_path / "stderr.txt", "w") as errlog:
        async with (
            mcp_stdio.stdio_client(alice, errlog=errlog) as (a_read, a_write),
            mcp_stdio.stdio_client(bob, errlog=errlog) as (b_read, b_write),
            mcp.ClientSession(a_read, a_write) as a,
            mcp.ClientSession(b_read, b_write) as b,
        ):
            await a.initialize()
            await b.initialize()
            names = [t.name for t in (await a.list_tools()).tools]
            assert names == [
                "resolve",
                "get_concept",
                "list_sources",
                "assemble_context",
                "memory_read",
                "memory_capture",
            ]
            found = ok(await a.call_tool("resolve", {"query": "levain", "limit": 2}))
            first = found["passages"][0]
            assert (first["source_id"], first["concept_id"]) == (
                "bakery",
                "recipes/levain-maintenance",
            )
            ids = {"source_id": first["source_id"], "concept_id": first["concept_id"]}
            concept = ok(await a.call_tool("get_concept", ids))
            assert concept["title"] == first["title"] and concept["body"]
            sources = ok(await a.call_tool("list_sources", {}))["sources"]
            assert [s["id"] for s in sources] == ["glossary", "runbooks", "bakery", "user-memory"]
            assembled = ok(await a.call_tool("assemble_context", {"query": "levain"}))
            assert assembled["blocks"][0]["concept_id"] == "recipes/levain-maintenance"
            bad = await a.call_tool("resolve", {"query": "levain", "limit": -1})
            assert bad.is_error and "greater than or equal to 1" in bad.content[0].text

            wrote = ok(
                await a.call_tool(
                    "memory_capture", {"user_text": "my dog is Rex", "agent_text": "noted"}
                )
            )
            assert wrote["scope"] == "acme/alice"
            assert ok(await a.call_tool("memory_read", {"query": "Rex"}))["passages"]
            # bob's server (another process, same disk) never sees alice's memory,
            # whatever the arguments say.
            for args in ({"query": "Rex"}, {"query": "Rex", "user": "alice"}):
                got = ok(await b.call_tool("memory_read", args))
                assert got["scope"] == "acme/bob/s1" and got["passages"] == []
            ok(await b.call_tool("memory_capture", {"user_text": "I am Bob", "agent_text": "hi"}))
            assert ok(await b.call_tool("memory_read", {"query": "Bob"}))["passages"]
            assert ok(await a.call_tool("memory_read", {"query": "Bob"}))["passages"] == []
    assert "Traceback" not in (tmp_path / "stderr.txt").read_text()


def raw_server(catalog: Path, cwd: Path) -> subprocess.Popen[bytes]:
    """``okfast mcp`` over pipes, for writing raw lines on its wire."""
    return subprocess.Popen(
        [sys.executable, *okfast_mcp(catalog)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, **server_env()},
        cwd=str(cwd),
    )


def test_stdio_reads_lines_however_they_arrive(catalog: Path, tmp_path: Path) -> None:
    """A request split over two writes, undecodable bytes and non-ASCII text on
    the raw stdio wire; the server answers, ignores the garbage and exits 0
    when stdin closes."""
    proc = raw_server(catalog, tmp_path)
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
        proc.stdin.flush()

    info = {"name": "raw", "version": "0"}
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info}
    line = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
    proc.stdin.write(line[:10].encode())
    proc.stdin.flush()
    time.sleep(0.2)  # the first part arrives alone
    proc.stdin.write(line[10:].encode() + b"\n")
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["result"]["serverInfo"]["name"] == "okfast"
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    proc.stdin.write(b"\xff\xfe not json\n")
    args = {"query": "levain caf\u00e9", "limit": 1}
    send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "resolve", "arguments": args},
        }
    )
    reply = json.loads(proc.stdout.readline())
    while reply.get("id") != 1:
        reply = json.loads(proc.stdout.readline())
    passage = reply["result"]["structuredContent"]["passages"][0]
    assert passage["concept_id"] == "recipes/levain-maintenance"
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    proc.stdout.close()


def test_a_line_the_sdk_cannot_read_is_answered_not_dropped() -> None:
    """docs/integrations.md: the SDK's parser drops such a line without a
    word, leaving a client waiting for its answer forever."""
    from okfast.integrations.mcp_transport import refusal

    call = '{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"resolve","arguments":ARGS}}'

    def reply(line: str) -> Any:
        out = refusal(line)
        return out if not out else json.loads(out)

    assert refusal(call.replace("ID", "1").replace("ARGS", '{"query":"oven"}')) is None
    bad = reply(call.replace("ID", "7").replace("ARGS", '{"query":"oven\\ud800"}'))
    assert bad["id"] == 7 and bad["error"]["code"] == -32600
    assert "lone surrogate" in bad["error"]["message"]
    big = reply(
        call.replace("ID", '"a"').replace("ARGS", '{"query":"x","limit":' + "9" * 5000 + "}")
    )
    assert big["id"] == "a" and "5000 digits" in big["error"]["message"]
    unknown_id = reply(call.replace("ID", '"\\udc00"').replace("ARGS", '{"query":"\\ud800"}'))
    assert unknown_id["id"] is None and unknown_id["error"]["code"] == -32600
    assert reply("not json")["error"]["code"] == -32700
    assert reply("not json")["id"] is None
    # No method: not a message, but its readable id is the answer's.
    for line, want in [
        ('{"jsonrpc":"2.0","id":11}', 11),
        ('{"jsonrpc":"2.0","id":"abc","params":{}}', "abc"),
        ('{"jsonrpc":"2.0","id":true}', None),
        ('{"jsonrpc":"2.0","id":"\\udc00"}', None),
        ("[1, 2]", None),
    ]:
        no_method = reply(line)
        assert no_method["id"] == want and no_method["error"]["code"] == -32600, line
    # Nothing answers a notification or a client's response.
    assert refusal('{"jsonrpc":"2.0","method":"notifications/x","params":{"a":"\\ud800"}}') == ""
    assert refusal('{"jsonrpc":"2.0","id":3,"result":{"a":"\\ud800"}}') == ""


def test_a_request_whose_id_is_no_id_is_answered_with_null() -> None:
    """docs/integrations.md: the SDK reads a request whose id is null, a
    float, a boolean or an object as a notification, and answers nothing."""
    from okfast.integrations.mcp_transport import refusal

    for given in ("null", "1.0", "1e2", "true", "{}", "[]"):
        out = refusal('{"jsonrpc":"2.0","id":' + given + ',"method":"tools/list"}')
        assert out, given
        reply = json.loads(out)
        assert reply["id"] is None and reply["error"]["code"] == -32600
        assert "the id must be a string or an integer" in reply["error"]["message"]


def test_what_the_end_of_stdin_waits_for_is_read_from_the_sdks_parse() -> None:
    """A request is waited for, a cancellation ends the wait for its request,
    and a notification whose params name an id is neither refused nor waited
    for (docs/integrations.md)."""
    from okfast.integrations.mcp_transport import screen

    assert screen('{"jsonrpc":"2.0","id":1,"method":"ping"}') == (None, ("asked", 1))
    cancel = '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r"}}'
    assert screen(cancel) == (None, ("cancelled", "r"))
    assert screen('{"jsonrpc":"2.0","method":"notifications/x","params":{"id":1}}') == (None, None)


def test_a_cancellation_is_read_as_the_sdk_reads_it() -> None:
    """docs/integrations.md: a cancelled request is not waited for. The SDK
    takes "5" and 5 for one id and refuses true; a cancellation whose params
    hold the text "id" is still one; a key spelt with an escape is a key."""
    from okfast.integrations.mcp_transport import _key, screen

    def cancel(params: str) -> str:
        return '{"jsonrpc":"2.0","method":"notifications/cancelled","params":' + params + "}"

    assert _key(screen(cancel('{"requestId":"5"}'))[1][1]) == 5  # type: ignore[index, arg-type]
    assert _key("5") == _key(5) and _key("007") == _key(7) and _key("a") == "a"
    assert screen(cancel('{"requestId":5,"reason":"id"}')) == (None, ("cancelled", 5))
    assert screen(cancel('{"requestId":5,"_meta":{"id":1}}')) == (None, ("cancelled", 5))
    assert screen(cancel('{"requestId":true}')) == (None, ("cancelled", None))
    out, _ = screen('{"jsonrpc":"2.0","\\u0069d":1.5,"method":"ping"}')
    assert out is not None and json.loads(out)["error"]["code"] == -32600


def test_an_unanswerable_end_does_not_hang(catalog: Path, tmp_path: Path) -> None:
    """A request cancelled under its id's other spelling (or by a line that
    mentions "id") is not waited for at the end of stdin, and a cancellation
    naming true drops no answer (docs/integrations.md)."""
    info = {"name": "t", "version": "0"}
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info}
    head = [
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    ]
    read = {"uri": "okf://bakery/recipes/brioche"}

    def run(*lines: str) -> list[Any]:
        proc = raw_server(catalog, tmp_path)
        out, _ = proc.communicate(("\n".join([*head, *lines]) + "\n").encode(), timeout=60)
        assert proc.returncode == 0
        return [json.loads(x) for x in out.decode().splitlines()]

    request = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": read})
    for params in ('{"requestId":"5"}', '{"requestId":5,"reason":"id"}'):
        cancel = '{"jsonrpc":"2.0","method":"notifications/cancelled","params":' + params + "}"
        assert 0 in [r["id"] for r in run(request, cancel)]
    one = request.replace('"id": 5', '"id": 1')
    got = run(
        one, '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":true}}'
    )
    assert [r for r in got if r["id"] == 1][0]["result"]["contents"]


def test_a_long_line_is_read_in_linear_time() -> None:
    """The reader searched everything it held for a newline after every
    64 KiB read: 80 MB took 30 s. Counted, not timed: each byte is searched
    once however the line arrives."""
    import anyio
    from okfast.integrations.mcp_transport import _LineReader, _Outstanding

    data = b'{"jsonrpc":"2.0","method":"notifications/x","params":{"p":"'
    data += b"x" * (64 * 65536) + b'"}}\n'
    chunks = [data[i : i + 65536] for i in range(0, len(data), 65536)]
    searched = 0

    class Counting(bytearray):
        def find(self, sub: Any, start: Any = 0, *rest: Any) -> int:
            nonlocal searched
            searched += len(self) - start
            return super().find(sub, start, *rest)

        def __contains__(self, sub: Any) -> bool:
            nonlocal searched
            searched += len(self)
            return super().__contains__(sub)

    async def main() -> str:
        async def answer(text: str) -> None:
            raise AssertionError(text)

        reader = _LineReader(0, io.StringIO(), answer, _Outstanding())
        reader._pending = Counting()
        feed = iter(chunks)

        async def fake_read(fd: int, polled: bool) -> bytes:
            return next(feed, b"")

        import okfast.integrations.mcp_transport as t

        real, t._read = t._read, fake_read
        try:
            return await reader.readline()
        finally:
            t._read = real

    line = anyio.run(main)
    assert len(line) == len(data)
    assert searched <= 2 * len(data)


def _piped_server(catalog: Path, cwd: Path) -> subprocess.Popen[bytes]:
    """``okfast mcp`` with all three standard streams piped."""
    proc = subprocess.Popen(
        [sys.executable, *okfast_mcp(catalog)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **server_env()},
        cwd=str(cwd),
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    return proc


def test_a_client_that_closes_the_output_or_a_sigterm_ends_the_server_quietly(
    catalog: Path, tmp_path: Path
) -> None:
    """docs/integrations.md: a client gone (its end of the output closed)
    ends the server with status 0 and nothing on stderr (a 50-line
    traceback before), and SIGTERM stops it as Ctrl-C does (status 0)."""
    import signal

    for stop in ("output closed", "SIGTERM"):
        proc = _piped_server(catalog, tmp_path)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        if stop == "output closed":
            proc.stdout.close()
            proc.stdin.write(pipelined_session(6) + b"\n")
            proc.stdin.flush()
            time.sleep(1)
            proc.stdin.close()
        else:
            proc.stdin.write(pipelined_session(1) + b"\n")
            proc.stdin.flush()
            proc.stdout.readline()  # the server is up: it answered
            proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, stop
        assert proc.stderr.read() == b"", stop
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()


def test_a_client_that_closes_the_output_ends_the_server_without_more_input(
    catalog: Path, tmp_path: Path
) -> None:
    """docs/integrations.md: a client gone ends the server at once, while
    its stdin stays open: the server waited for another line before."""
    proc = _piped_server(catalog, tmp_path)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    # Read before its answer fails: the reader is then waiting for more.
    proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    proc.stdin.flush()
    try:
        assert proc.wait(timeout=30) == 0
        assert proc.stderr.read() == b""
    finally:
        proc.kill()
        proc.stdin.close()
        proc.stderr.close()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_an_output_that_cannot_be_written_is_one_line_and_status_1(
    catalog: Path, tmp_path: Path
) -> None:
    """docs/spec.md §10.4: a full disk is one line ``okfast: {reason}`` and
    status 1, as for every command, not a 73-line traceback."""
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [sys.executable, *okfast_mcp(catalog)],
            input=pipelined_session(1) + b"\n",
            stdout=full,
            stderr=subprocess.PIPE,
            env={**os.environ, **server_env()},
            cwd=str(tmp_path),
            timeout=60,
        )
    assert (proc.returncode, proc.stderr) == (1, b"okfast: No space left on device\n")


def test_http_guards_every_loopback_spelling() -> None:
    """docs/integrations.md: the SDK turned DNS-rebinding protection on only
    for 127.0.0.1, localhost and ::1; a server on 127.1 answered any Host and
    Origin. Now a request must name a loopback address, as started or one of
    those three."""
    from okfast.integrations.mcp_transport import _rebinding_guard

    for host in ("127.1", "LOCALHOST", "127.0.0.2", "::1", "127.0.0.1"):
        guard = _rebinding_guard(host)
        assert guard.enable_dns_rebinding_protection
        assert {"127.0.0.1:*", "localhost:*", "[::1]:*"} <= set(guard.allowed_hosts)
        shown = f"[{host}]" if ":" in host else host
        assert f"{shown}:*" in guard.allowed_hosts
        assert f"http://{shown.lower()}:*" in guard.allowed_origins
        assert not any("evil" in h for h in guard.allowed_hosts + guard.allowed_origins)


def test_bytes_that_are_not_utf8_are_refused_not_replaced() -> None:
    """docs/integrations.md: never read as U+FFFD (which would write a
    corrupted text to memory as if it had been sent)."""
    from okfast.integrations.mcp_transport import refusal

    raw = b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"resolve",'
    raw += b'"arguments":{"query":"pass\xffword"}}}'
    out = refusal(raw.decode("utf-8", errors="surrogateescape"))
    assert out
    reply = json.loads(out)
    assert reply["id"] == 4 and reply["error"]["code"] == -32600
    assert "not UTF-8" in reply["error"]["message"]


def test_a_message_nested_deeper_than_the_parser_reads_says_so() -> None:
    from okfast.integrations.mcp_transport import refusal

    deep = "[" * 300 + "]" * 300
    call = '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"resolve",'
    reply = json.loads(refusal(call + '"arguments":{"q":' + deep + "}}}") or "{}")
    assert reply["id"] == 5 and "nests deeper" in reply["error"]["message"]
    deeper = "[" * 100_000 + "]" * 100_000
    reply = json.loads(refusal(call + '"arguments":{"q":' + deeper + "}}}") or "{}")
    assert reply["id"] is None and reply["error"]["code"] == -32700
    assert "nests too deeply" in reply["error"]["message"]


def served_from_file(catalog: Path, tmp_path: Path, requests: bytes) -> list[Any]:
    """The answers of ``okfast mcp`` given ``requests`` in a file as stdin,
    writing to a file (neither can the event loop wait on); it must exit 0."""
    given, answers = tmp_path / "requests.jsonl", tmp_path / "answers.jsonl"
    given.write_bytes(requests)
    with open(given, "rb") as stdin, open(answers, "wb") as stdout:
        done = subprocess.run(
            [sys.executable, *okfast_mcp(catalog)],
            stdin=stdin,
            stdout=stdout,
            env={**os.environ, **server_env()},
            cwd=str(tmp_path),
            timeout=120,
        )
    assert done.returncode == 0
    return [json.loads(x) for x in answers.read_text().splitlines()]


def pipelined_session(n: int) -> bytes:
    """An opening and ``n`` requests (pings and searches, ids 1..n), written
    at once; the last line has no newline."""
    info = {"name": "eof", "version": "0"}
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info}
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    ]
    for i in range(1, n + 1):
        call = {"name": "resolve", "arguments": {"query": "levain starter", "limit": 3}}
        lines.append(
            json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"})
            if i % 2
            else json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": call})
        )
    return "\n".join(lines).encode()


def test_every_request_read_is_answered_before_the_end_of_stdin_closes(
    catalog: Path, tmp_path: Path
) -> None:
    """docs/integrations.md: the SDK closes the session at the end of stdin
    and drops the answers of requests still running; okfast's reader reports
    the end only once every request it read has its answer."""
    proc = raw_server(catalog, tmp_path)
    out, _ = proc.communicate(pipelined_session(60), timeout=120)
    assert proc.returncode == 0
    ids = sorted(json.loads(x)["id"] for x in out.decode().splitlines())
    assert ids == list(range(61))
    got = served_from_file(catalog, tmp_path, pipelined_session(9))
    assert sorted(r["id"] for r in got) == list(range(10))


def test_started_with_stdin_closed_is_one_line_and_status_2(catalog: Path, tmp_path: Path) -> None:
    """docs/spec.md §10.4: a closed standard stream is one line, no traceback."""
    done = subprocess.run(
        [sys.executable, *okfast_mcp(catalog)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env={**os.environ, **server_env()},
        cwd=str(tmp_path),
        timeout=120,
        preexec_fn=lambda: os.close(0),
    )
    assert done.returncode == 2
    assert done.stderr.decode() == "okfast: mcp: standard input is closed\n"


def unreadable_requests(client: str) -> list[str]:
    """The opening of a session (initialize, id 0), a request the SDK cannot
    read (a lone surrogate, id 1) and a line that is not JSON."""
    info = {"name": client, "version": "0"}
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info}
    return [
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"resolve",'
        '"arguments":{"query":"levain\\ud800"}}}',
        "not json",
    ]


def test_stdio_answers_every_request_it_cannot_read(catalog: Path, tmp_path: Path) -> None:
    """On the wire: each unreadable request gets its error, in order, and the
    server goes on answering."""
    proc = raw_server(catalog, tmp_path)
    assert proc.stdin is not None and proc.stdout is not None
    lines = [*unreadable_requests("raw"), '{"jsonrpc":"2.0","id":2,"method":"ping"}']
    proc.stdin.write("".join(x + "\n" for x in lines).encode())
    proc.stdin.flush()
    # JSON-RPC answers need not come in order: a refusal is written at once.
    got = [json.loads(proc.stdout.readline()) for _ in range(4)]
    assert sorted((str(r["id"]), "error" in r) for r in got) == [
        ("0", False),
        ("1", True),
        ("2", False),
        ("None", True),
    ]
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    proc.stdout.close()


def test_stdio_from_a_file_answers_every_request_it_cannot_read(
    catalog: Path, tmp_path: Path
) -> None:
    """Requests in a file given as stdin, answers to a file: the event loop
    cannot wait on a file, so it is read in a worker thread, and an unreadable
    request is answered there too."""
    lines = unreadable_requests("file")
    got = served_from_file(catalog, tmp_path, "".join(x + "\n" for x in lines).encode())
    assert sorted((str(r["id"]), "error" in r) for r in got) == [
        ("0", False),
        ("1", True),
        ("None", True),
    ]


@pytest.fixture
def http_server(catalog: Path, tmp_path: Path) -> Iterator[str]:
    """``okfast mcp --transport streamable-http --port 0``; yields its URL."""
    log = tmp_path / "http-stderr.txt"
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, *okfast_mcp(catalog, "--transport", "streamable-http", "--port", "0")],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, **server_env()},
        )
    try:
        prefix = "okfast mcp: streamable HTTP on "
        deadline = time.monotonic() + 120
        url = None
        while url is None:
            lines = [x for x in log.read_text().splitlines() if x.startswith(prefix)]
            if lines:
                url = lines[0].removeprefix(prefix)
            elif proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the server did not start: {log.read_text()}")
            else:
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert "Traceback" not in log.read_text()


def _ipv6_loopback() -> bool:
    import socket

    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_an_ipv6_host_may_be_written_in_brackets(catalog: Path, tmp_path: Path) -> None:
    """docs/integrations.md: ``--host [::1]``, as a URL writes it, serves on
    ::1 as ``--host ::1`` does (it was refused as a host that cannot be
    resolved)."""
    log = tmp_path / "stderr.txt"
    flags = ("--transport", "streamable-http", "--host", "[::1]", "--port", "0")
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, *okfast_mcp(catalog, *flags)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**os.environ, **server_env()},
        )
    try:
        deadline = time.monotonic() + 120
        while "http://" not in log.read_text() and proc.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        assert log.read_text().startswith("okfast mcp: streamable HTTP on http://[::1]:")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def test_streamable_http_on_loopback(http_server: str, catalog: Path) -> None:
    assert http_server.startswith("http://127.0.0.1:") and http_server.endswith("/mcp")
    async with mcp.Client(http_server) as c:
        names = [t.name for t in (await c.list_tools()).tools]
        assert names == ["resolve", "get_concept", "list_sources", "assemble_context"]
        got = ok(await c.call_tool("resolve", {"query": "rollback", "limit": 3}))
        want = Resolver(Catalog.load(catalog)).search(Query("rollback", limit=3))
        assert [(p["source_id"], p["concept_id"], p["score"]) for p in got["passages"]] == [
            (p.source_id, p.concept_id, p.score) for p in want.passages
        ]
        bad = await c.call_tool("get_concept", {"source_id": "runbooks", "concept_id": "nope"})
        assert bad.is_error and "no concept 'nope'" in bad.content[0].text
        body = (await c.read_resource("okf://runbooks/deploys/rollback")).contents[0].text
        assert body.startswith("#")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--transport", "streamable-http", "--host", "0.0.0.0"], "not a loopback address"),
        (["--transport", "streamable-http", "--host", "192.0.2.1"], "not a loopback address"),
        (["--capture"], "--capture needs a memory scope"),
        (["--user", "bob"], "a user needs a tenant"),
        (["--tenant", "../etc"], "not a safe id"),
    ],
)
def test_command_line_refusals(
    catalog: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    assert main(["mcp", "--catalog", str(catalog), *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("okfast: ") and message in err and err.count("\n") == 1


def test_a_scope_needs_memory_sources_and_a_catalog_must_be_good(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb.json").write_text('{"version": 1, "sources": [{"id": "kb", "path": "kb"}]}')
    assert main(["mcp", "--catalog", str(tmp_path / "kb.json"), "--tenant", "acme"]) == 2
    assert "no enabled memory source" in capsys.readouterr().err
    assert main(["mcp", "--catalog", str(tmp_path / "missing.json")]) == 2
    assert "bad catalog" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["mcp", "--catalog", str(tmp_path / "kb.json"), "--port", "70000"])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_settings_from_a_pipe_are_read_once(catalog: Path, tmp_path: Path) -> None:
    """docs/spec.md §13.3: `--settings <(...)` is a pipe that reads once; the
    server uses what it read (a second read found it empty: status 2)."""
    import threading

    fifo = tmp_path / "settings.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text('{"version": 1, "scorer": "bm25f"}'))
    writer.start()
    # stdin at its end: the stdio server starts, meets the end, and stops.
    done = subprocess.run(
        [sys.executable, *okfast_mcp(catalog, "--settings", str(fifo))],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=120,
    )
    writer.join(30)
    assert (done.returncode, done.stderr) == (0, "")


async def test_settings_from_a_file_are_watched(catalog: Path, tmp_path: Path) -> None:
    """docs/spec.md §13.5: `okfast mcp --settings FILE`, a regular file, is
    read again once it changes; the next call ranks by the new settings."""
    q = "sourdough starter flour"
    by = {
        s: Resolver(Catalog.load(catalog)).search(Query(q, limit=5, scorer=s)).digest
        for s in ("weighted_count", "bm25f")
    }
    settings = tmp_path / "s.json"
    settings.write_text(json.dumps({"version": 1, "scorer": "bm25f"}))
    params = mcp.StdioServerParameters(
        command=sys.executable,
        args=okfast_mcp(catalog, "--settings", str(settings)),
        env=server_env(),
        cwd=str(tmp_path),
    )
    with open(tmp_path / "stderr.txt", "w") as errlog:
        async with (
            mcp_stdio.stdio_client(params, errlog=errlog) as (read, write),
            mcp.ClientSession(read, write) as s,
        ):
            await s.initialize()

            async def digest() -> str:
                return str(ok(await s.call_tool("resolve", {"query": q, "limit": 5}))["digest"])

            assert await digest() == by["bm25f"]
            fresh = tmp_path / "s.json.new"
            fresh.write_text(json.dumps({"version": 1, "scorer": "weighted_count"}))
            fresh.replace(settings)
            assert await digest() == by["weighted_count"]
    assert "reopening the catalog" in (tmp_path / "stderr.txt").read_text()


def test_serve_checks_its_arguments_before_it_listens(catalog: Path) -> None:
    """docs/spec.md §8: okfast's errors, not the socket's; a port past 65535
    was taken modulo 65536 and served on another port, silently."""
    import okfast
    from okfast.integrations.mcp import build_server
    from okfast.integrations.mcp_transport import serve

    server = build_server(catalog)
    bad: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"port": 70000}, okfast.InvalidArgumentError, "port must be a whole number 0-65535"),
        ({"port": -1}, okfast.InvalidArgumentError, "port must be a whole number 0-65535"),
        ({"port": 1.5}, okfast.InvalidArgumentError, "port must be a whole number"),
        ({"host": None}, okfast.InvalidArgumentTypeError, "host must be text"),
        ({"announce": 5}, okfast.InvalidArgumentTypeError, "announce must be a text stream"),
        ({"host": "0.0.0.0"}, okfast.InvalidArgumentError, "is not a loopback address"),
    ]
    for kwargs, error, words in bad:
        with pytest.raises(error, match=words):
            serve(server, "streamable-http", **kwargs)
    with pytest.raises(okfast.InvalidArgumentError, match="unknown transport 'http'"):
        serve(server, "http")  # type: ignore[arg-type]
    with pytest.raises(okfast.InvalidArgumentTypeError, match="server must be a MCPServer"):
        serve(None)  # type: ignore[arg-type]
