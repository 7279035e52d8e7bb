"""``okfast mcp`` over stdio, as an agent sees it: the time from spawning the
server to its first ``resolve`` answer, and the ``resolve`` round trip
(request out, structured result back) through the MCP SDK's stdio client.

    .venv/bin/python benches/mcp_roundtrip.py [--catalog examples/catalog.json] [--calls 300]

Prints one JSON object (milliseconds). Needs ``okfast[mcp]``.

Wall-clock times depend on what else the machine runs; the CPU time per call
of the client (this process) and of the server (its child, read from /proc on
Linux) does much less, and their sum is about what a call costs on an idle
machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parent.parent
QUERIES = ["sourdough starter", "rollback", "revenue recognition", "allergen", "on-call handover"]


def _children_cpu_s() -> float | None:
    """CPU seconds (user + system) used so far by this process's children."""
    total, found = 0.0, False
    tick = os.sysconf("SC_CLK_TCK")
    for pid in filter(str.isdigit, os.listdir("/proc") if os.path.isdir("/proc") else []):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():  # the parent pid
            total += (int(fields[11]) + int(fields[12])) / tick
            found = True
    return total if found else None


async def measure(catalog: Path, calls: int) -> dict[str, float | None]:
    # The server gets this process's environment (the SDK passes only a safe
    # few variables by default), so PYTHONPATH picks the okfast under test.
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "okfast", "mcp", "--catalog", str(catalog)],
        env=dict(os.environ),
    )
    start = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        first = await session.call_tool("resolve", {"query": QUERIES[0]})
        first_answer = time.perf_counter() - start
        assert not first.is_error, first.content
        times = []
        client_cpu, server_cpu = time.process_time(), _children_cpu_s()
        for i in range(calls):
            t = time.perf_counter()
            r = await session.call_tool("resolve", {"query": QUERIES[i % len(QUERIES)]})
            times.append(time.perf_counter() - t)
            assert not r.is_error, r.content
        client_cpu = time.process_time() - client_cpu
        server_after = _children_cpu_s()
    q = statistics.quantiles(times, n=100)
    server_ms = None
    if server_cpu is not None and server_after is not None:
        server_ms = round((server_after - server_cpu) * 1000 / calls, 2)
    return {
        "start_to_first_answer_ms": round(first_answer * 1000, 1),
        "resolve_p50_ms": round(statistics.median(times) * 1000, 2),
        "resolve_p90_ms": round(q[89] * 1000, 2),
        "resolve_p99_ms": round(q[98] * 1000, 2),
        "client_cpu_ms_per_call": round(client_cpu * 1000 / calls, 2),
        "server_cpu_ms_per_call": server_ms,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "calls": calls,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--catalog", type=Path, default=REPO / "examples" / "catalog.json")
    p.add_argument("--calls", type=int, default=300)
    args = p.parse_args()
    print(json.dumps(anyio.run(measure, args.catalog, args.calls)))


if __name__ == "__main__":
    main()
