"""The load of ``bench.replicas``: a mix of requests over keep-alive connections to HAProxy,
run in a process of its own (``run_mix``, a ``ProcessPoolExecutor`` job).

As ``bench.serving_load`` does for one request, but each connection sends the next request of
a shared sequence, the mix, as soon as its previous answer is in (a closed loop): warm-up
first, then a fixed window in which each request's latency is recorded. An answer is right
when its status is 200 and, for a GraphQL request, it carries no errors; what is not is
counted, and an example kept, for the caller to fail the run with.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field

from bench.serving_load import _read_reply

__all__ = ["MixResult", "MixSpec", "run_mix"]

PAGE = "page"  # the kind of a console page's request: HTML, not GraphQL


@dataclass(frozen=True, slots=True)
class MixSpec:
    port: int
    requests: list[tuple[str, bytes]]  # (kind, request bytes), sent in this order, cycling
    connections: int
    warmup_s: float
    duration_s: float


@dataclass(slots=True)
class MixResult:
    latencies: list[float] = field(default_factory=list)  # seconds, requests begun in the window
    seconds: float = 0.0
    kinds: dict[str, int] = field(default_factory=dict)  # requests in the window, by kind
    sent: int = 0  # every request, the warm-up's too
    failed: int = 0
    example: bytes = b""
    client_cpu: float = 0.0  # this process's CPU seconds over the window


async def _connection(
    spec: MixSpec,
    mix: itertools.cycle[tuple[str, bytes]],
    streams: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    start: float,
    end: float,
    result: MixResult,
) -> None:
    reader, writer = streams
    try:
        while True:
            began = time.perf_counter()
            if began >= end:
                break
            kind, request = next(mix)
            writer.write(request)
            try:
                reply = await _read_reply(reader)
            except (OSError, asyncio.IncompleteReadError) as exc:
                result.failed += 1
                result.example = result.example or f"{kind}: {exc!r}".encode()
                return
            result.sent += 1
            if began >= start:
                result.latencies.append(time.perf_counter() - began)
                result.kinds[kind] = result.kinds.get(kind, 0) + 1
            if reply.status != 200 or (kind != PAGE and b'"errors"' in reply.body):
                result.failed += 1
                result.example = result.example or reply.head + reply.body[:600]
    finally:
        writer.close()


async def _mix(spec: MixSpec) -> MixResult:
    result = MixResult(seconds=spec.duration_s)
    mix = itertools.cycle(spec.requests)
    connections = await asyncio.gather(
        *(asyncio.open_connection("127.0.0.1", spec.port) for _ in range(spec.connections))
    )
    start = time.perf_counter() + spec.warmup_s
    end = start + spec.duration_s

    async def window() -> None:
        await asyncio.sleep(max(0.0, start - time.perf_counter()))
        cpu = time.process_time()
        await asyncio.sleep(max(0.0, end - time.perf_counter()))
        result.client_cpu = time.process_time() - cpu

    await asyncio.gather(
        window(), *(_connection(spec, mix, streams, start, end, result) for streams in connections)
    )
    return result


def run_mix(spec: MixSpec) -> MixResult:
    return asyncio.run(_mix(spec))
