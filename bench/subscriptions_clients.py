"""The subscriptions scenario's clients, in processes of their own (their CPU is not the
server's): each opens its share of graphql-transport-ws subscriptions, one a connection,
offering permessage-deflate as Chromium does (``permessage-deflate; client_max_window_bits``)
or nothing, waits for each subscription's first message (the catch-up or the tail: it is in
place), says so, then notes when each receives the event it is told to look for.

The parent talks to a client over a pipe: ``("ready", opened)`` comes back once every
subscription is in place, ``("got", [wall-clock times])`` once each has seen the event (or
the wait ran out), then ``("missed", [why])``, and ``"close"`` ends it all, at once: a
warm-up's clients are told to close before any event is sent, and do not wait for one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Final

import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
from websockets.typing import Subprotocol

__all__ = ["DEPLOYS", "LOGS", "ClientJob", "run_clients"]

DEPLOYS: Final = "deploys"
LOGS: Final = "logs"
OPENING_AT_ONCE: Final = 32
EVENT_WAIT_S: Final = 60.0

_DEPLOYS = (
    "subscription($c: String!) { componentDeploys(component: $c) { id state stage "
    "release { version } } }"
)
_LOGS = (
    "subscription($c: String!, $n: String!, $p: String!) { pinAppLogTail(cluster: $c, "
    "namespace: $n, name: $p, tailLines: 1) { time pod text } }"
)


@dataclass(frozen=True, slots=True)
class ClientJob:
    url: str
    kind: str  # DEPLOYS or LOGS
    count: int
    deflate: bool
    variables: dict[str, str]
    marker: str  # the event's: its deploy's release, or a log line's text


def _payload(job: ClientJob) -> str:
    query = _DEPLOYS if job.kind == DEPLOYS else _LOGS
    return orjson.dumps(
        {"id": "1", "type": "subscribe", "payload": {"query": query, "variables": job.variables}}
    ).decode()


def _is_event(job: ClientJob, message: dict[str, Any]) -> bool:
    data = (message.get("payload") or {}).get("data") or {}
    if job.kind == DEPLOYS:
        deploy = data.get("componentDeploys") or {}
        return (deploy.get("release") or {}).get("version") == job.marker
    return (data.get("pinAppLogTail") or {}).get("text") == job.marker


async def _open(job: ClientJob, gate: asyncio.Semaphore) -> ClientConnection:
    # None, not []: an empty list sends an empty Sec-WebSocket-Extensions, which is refused.
    offer = [ClientPerMessageDeflateFactory(client_max_window_bits=True)] if job.deflate else None
    async with gate:
        ws = await connect(
            job.url,
            subprotocols=[Subprotocol("graphql-transport-ws")],
            extensions=offer,
            compression=None,
            open_timeout=120,
            ping_interval=None,
            max_queue=64,
        )
        await ws.send('{"type":"connection_init"}')
        ack = orjson.loads(await ws.recv())
        if ack.get("type") != "connection_ack":
            raise RuntimeError(f"no connection_ack: {ack}")
        await ws.send(_payload(job))
        first = orjson.loads(await ws.recv())
        if first.get("type") != "next":
            raise RuntimeError(f"the subscription failed: {first}")
    return ws


async def _event(job: ClientJob, ws: ClientConnection) -> float | str:
    """When the event came, or why it did not."""
    try:
        async with asyncio.timeout(EVENT_WAIT_S):
            while True:
                message = orjson.loads(await ws.recv())
                if _is_event(job, message):
                    return time.time()
    except Exception as exc:  # reported as missed, with why
        return f"{type(exc).__name__}: {exc}"[:200]


def _until_closed(pipe: Connection) -> None:
    """Until the parent says ``"close"`` (or is gone)."""
    with contextlib.suppress(EOFError, OSError):
        pipe.recv()


async def _main(job: ClientJob, pipe: Connection) -> None:
    gate = asyncio.Semaphore(OPENING_AT_ONCE)
    sockets = await asyncio.gather(*(_open(job, gate) for _ in range(job.count)))
    closed = asyncio.get_running_loop().run_in_executor(None, _until_closed, pipe)
    waits = [asyncio.create_task(_event(job, ws)) for ws in sockets]
    pipe.send(("ready", len(sockets)))
    events = asyncio.gather(*waits)
    either: list[asyncio.Future[Any]] = [events, closed]
    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    if closed.done():  # told to close first (a warm-up's clients): no event to wait for
        events.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await events
    else:
        times = events.result()
        pipe.send(("got", [t for t in times if isinstance(t, float)]))
        pipe.send(("missed", sorted({t for t in times if isinstance(t, str)})))
        await closed
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)


def run_clients(job: ClientJob, pipe: Connection) -> None:
    """A client process's body (``multiprocessing.Process`` target)."""
    try:
        asyncio.run(_main(job, pipe))
    except Exception as exc:  # the parent reports it
        pipe.send(("failed", f"{type(exc).__name__}: {exc}"))
