"""HTTP/1.1 keep-alive load over asyncio streams, run in a process of its own.

httpx spends more CPU per request than a bare Starlette endpoint does: it would measure
itself. Here every request is bytes built once, and a response is its status line, a
``Content-Length`` and that many bytes; nothing else is parsed. The load runs in a process of
its own (``load_process``, a ``ProcessPoolExecutor`` of one), so that it shares a core's time
with neither the server's event loop nor the benchmark's.

``run_load`` is a closed loop: a few connections, each sending the next request of a shared
sequence (cycling) as soon as its previous answer is in, first for a warm-up that is not
recorded, then for a fixed time, each request's latency recorded. ``send_streams`` is the
other shape: each connection sends a list of its own, once, in order, everything recorded.
An answer is right when its status is 200 and, where an expected body is given, it is those
bytes (else it counts as differing, for the caller to check), or, for a GraphQL request, it
holds no errors; what is not is counted, and an example kept, for the caller to fail with.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import time
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Final

from bench.harness.host import cpu_seconds

__all__ = [
    "LoadResult",
    "LoadSpec",
    "Reply",
    "fetch",
    "load_process",
    "read_reply",
    "request_bytes",
    "run_load",
    "send_streams",
]

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


async def read_reply(reader: asyncio.StreamReader) -> Reply:
    head = await reader.readuntil(_END_OF_HEAD)
    status = int(head[9:12])
    at = head.lower().find(_LENGTH)
    if at < 0:
        raise ValueError(f"a response without Content-Length: {head[:300]!r}")
    start = at + len(_LENGTH)
    length = int(head[start : head.index(b"\r\n", start)])
    return Reply(status, head, await reader.readexactly(length))


async def fetch(port: int, request: bytes) -> Reply:
    """One request on a connection of its own (the benchmark's checks, not timed)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        return await read_reply(reader)
    finally:
        writer.close()
        await writer.wait_closed()


@contextlib.asynccontextmanager
async def load_process() -> AsyncIterator[ProcessPoolExecutor]:
    # spawn: a fresh interpreter, with nothing of this process's event loop or connections.
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        yield pool


@dataclass(frozen=True, slots=True)
class LoadSpec:
    port: int
    requests: Sequence[tuple[str, bytes]]  # (kind, request), sent in this order, cycling
    connections: int
    warmup_s: float
    duration_s: float
    expected: bytes | None = None  # the body every answer must carry
    plain: frozenset[str] = frozenset()  # kinds not GraphQL: their status alone is checked
    server_pids: tuple[int, ...] = ()  # whose CPU time to read over the measured window


@dataclass(slots=True)
class LoadResult:
    latencies: list[float] = field(default_factory=list)  # seconds, requests begun in the window
    seconds: float = 0.0  # the measured window
    kinds: dict[str, int] = field(default_factory=dict)  # requests in the window, by kind
    sent: int = 0  # every request, the warm-up's too
    failed: int = 0
    differing: int = 0  # right, but not the expected body
    example: bytes = b""  # the first failed or differing answer, head and body
    client_cpu: float = 0.0  # this process's CPU seconds over the window
    server_cpu: float | None = None  # the servers' CPU seconds over the window (Linux)


async def _connection(
    spec: LoadSpec,
    mix: Callable[[], tuple[str, bytes]],
    streams: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    start: float,
    end: float,
    result: LoadResult,
) -> None:
    reader, writer = streams
    expected, plain, record, kinds = (
        spec.expected,
        spec.plain,
        result.latencies.append,
        result.kinds,
    )
    recorded = 0
    try:
        while True:
            began = time.perf_counter()
            # Each connection has at least one request in the window: on a machine too busy
            # for a short window (a smoke run's), one begun in the warm-up may outlast it.
            if began >= end and recorded:
                break
            kind, request = mix()
            writer.write(request)
            try:
                reply = await read_reply(reader)
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                result.failed += 1
                result.example = result.example or f"{kind}: {exc!r}".encode()
                return
            result.sent += 1
            if began >= start:
                record(time.perf_counter() - began)
                recorded += 1
                kinds[kind] = kinds.get(kind, 0) + 1
            if reply.status != 200:
                result.failed += 1
            elif expected is not None:
                if reply.body == expected:
                    continue
                result.differing += 1
            elif kind in plain or b'"errors"' not in reply.body:
                continue
            else:
                result.failed += 1
            result.example = result.example or reply.head + reply.body
    finally:
        writer.close()


async def _load(spec: LoadSpec) -> LoadResult:
    result = LoadResult(seconds=spec.duration_s)
    mix = itertools.cycle(spec.requests).__next__
    # Every connection is open before the clock starts: a connect is not a request.
    connections = await asyncio.gather(
        *(asyncio.open_connection("127.0.0.1", spec.port) for _ in range(spec.connections))
    )
    start = time.perf_counter() + spec.warmup_s
    end = start + spec.duration_s

    async def window() -> None:
        await asyncio.sleep(max(0.0, start - time.perf_counter()))
        cpu, server = time.process_time(), cpu_seconds(spec.server_pids)
        await asyncio.sleep(max(0.0, end - time.perf_counter()))
        result.client_cpu = time.process_time() - cpu
        after = cpu_seconds(spec.server_pids)
        if spec.server_pids and server is not None and after is not None:
            result.server_cpu = after - server

    await asyncio.gather(
        window(), *(_connection(spec, mix, streams, start, end, result) for streams in connections)
    )
    return result


def run_load(spec: LoadSpec) -> LoadResult:
    """The load process's job: ``spec``'s closed loop."""
    return asyncio.run(_load(spec))


async def send_streams(
    port: int,
    streams: Sequence[Sequence[bytes]],
    *,
    server_pid: int,
    accept: Callable[[Reply], bool],
    reply_timeout_s: float,
) -> LoadResult:
    """Each stream's requests in order on a connection of its own, the streams at once; every
    latency recorded, and the server's CPU and this process's over the whole run. To be run
    inside the load process, by a job of the scenario's own (which builds the requests)."""
    result = LoadResult()

    async def send(
        opened: tuple[asyncio.StreamReader, asyncio.StreamWriter], mine: Sequence[bytes]
    ) -> None:
        reader, writer = opened
        try:
            for request in mine:
                began = time.perf_counter()
                writer.write(request)
                reply = await asyncio.wait_for(read_reply(reader), reply_timeout_s)
                result.latencies.append(time.perf_counter() - began)
                if not accept(reply):
                    result.failed += 1
                    result.example = result.example or reply.head + reply.body
        finally:
            writer.close()

    opened = await asyncio.gather(*(asyncio.open_connection("127.0.0.1", port) for _ in streams))
    server, client = cpu_seconds([server_pid]), time.process_time()
    started = time.perf_counter()
    await asyncio.gather(*(send(c, s) for c, s in zip(opened, streams, strict=True)))
    result.seconds, after = time.perf_counter() - started, cpu_seconds([server_pid])
    result.client_cpu = time.process_time() - client
    result.server_cpu = after - server if after is not None and server is not None else None
    result.sent = len(result.latencies)
    return result
