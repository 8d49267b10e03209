"""A minimal HTTP/1.1 keep-alive load generator over asyncio streams, for ``bench.serving``.

httpx spends more CPU per request than a bare Starlette endpoint does: it would measure
itself. Here every request is bytes built once, and a response is its status line, a
``Content-Length`` and that many bytes; nothing else is parsed. ``run_load`` is what the
benchmark runs in a process of its own (it must not share a core's time with the server's
event loop, nor with the parent's): a few connections each send a request as soon as the
previous answer is in (a closed loop), first for a warm-up that is not recorded, then for a
fixed time, each request's latency recorded. Every status must be 200 and every body the
expected bytes; what is not is counted, and an example kept, for the caller to judge.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

__all__ = ["LoadResult", "LoadSpec", "Reply", "fetch", "request_bytes", "run_load"]

_END_OF_HEAD: Final = b"\r\n\r\n"
_LENGTH: Final = b"\r\ncontent-length:"


def request_bytes(
    method: str, target: str, port: int, headers: dict[str, str], body: bytes = b""
) -> bytes:
    """One HTTP/1.1 request, ready to write: ``target`` is the path and query string."""
    lines = [f"{method} {target} HTTP/1.1", f"host: 127.0.0.1:{port}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body or method == "POST":
        lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    head: bytes  # the status line and headers, as received
    body: bytes


async def _read_reply(reader: asyncio.StreamReader) -> Reply:
    head = await reader.readuntil(_END_OF_HEAD)
    status = int(head[9:12])
    at = head.lower().find(_LENGTH)
    if at < 0:
        raise ValueError(f"a response without Content-Length: {head[:300]!r}")
    start = at + len(_LENGTH)
    length = int(head[start : head.index(b"\r\n", start)])
    return Reply(status, head, await reader.readexactly(length))


async def fetch(port: int, request: bytes) -> Reply:
    """One request on a connection of its own (the parent's checks, not timed)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        return await _read_reply(reader)
    finally:
        writer.close()
        await writer.wait_closed()


@dataclass(frozen=True, slots=True)
class LoadSpec:
    port: int
    request: bytes
    expected: bytes  # the body every response must carry
    connections: int
    warmup_s: float
    duration_s: float
    server_pid: int | None = None  # to read the server's CPU time over the measured window


@dataclass(slots=True)
class LoadResult:
    latencies: list[float] = field(default_factory=list)  # seconds, requests begun in the window
    seconds: float = 0.0  # the measured window
    failed: int = 0  # status other than 200
    differing: int = 0  # 200 with a body other than the expected one
    example: bytes = b""  # the first failed or differing response, head and body
    client_cpu: float = 0.0  # this process's CPU seconds over the window
    server_cpu: float | None = None  # the server's CPU seconds over the window (Linux)


def _cpu_seconds(pid: int | None) -> float | None:
    """utime + stime of ``pid`` from /proc; None where there is no /proc."""
    if pid is None:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name, in parentheses, may hold spaces: count fields after its end.
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _connection(
    spec: LoadSpec,
    streams: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    start: float,
    end: float,
    result: LoadResult,
) -> None:
    reader, writer = streams
    request, expected, record = spec.request, spec.expected, result.latencies.append
    try:
        while True:
            began = time.perf_counter()
            if began >= end:
                break
            writer.write(request)
            reply = await _read_reply(reader)
            if began >= start:
                record(time.perf_counter() - began)
            if reply.status != 200 or reply.body != expected:
                if reply.status != 200:
                    result.failed += 1
                else:
                    result.differing += 1
                result.example = result.example or reply.head + reply.body
    finally:
        writer.close()


async def _load(spec: LoadSpec) -> LoadResult:
    result = LoadResult(seconds=spec.duration_s)
    # Every connection is open before the clock starts: a connect is not a request.
    connections = await asyncio.gather(
        *(asyncio.open_connection("127.0.0.1", spec.port) for _ in range(spec.connections))
    )
    start = time.perf_counter() + spec.warmup_s
    end = start + spec.duration_s

    async def window() -> None:
        await asyncio.sleep(max(0.0, start - time.perf_counter()))
        cpu, server = time.process_time(), _cpu_seconds(spec.server_pid)
        await asyncio.sleep(max(0.0, end - time.perf_counter()))
        result.client_cpu = time.process_time() - cpu
        after = _cpu_seconds(spec.server_pid)
        if server is not None and after is not None:
            result.server_cpu = after - server

    await asyncio.gather(
        window(), *(_connection(spec, streams, start, end, result) for streams in connections)
    )
    return result


def run_load(spec: LoadSpec) -> LoadResult:
    """The load process's entry point (a ``ProcessPoolExecutor`` job)."""
    return asyncio.run(_load(spec))
