"""A receiver of change events for tests: a real HTTP server (aiohttp) on 127.0.0.1, scripted
to be down (not listening), to answer errors, to answer slowly, or to hold requests until
released, and recording every request it read with what it answered.

It serves on an event loop of its own (the test kit's ``LoopThread``) while it is up, so that a
replica in another process delivering to it is answered whatever the test's loop is doing."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ssl
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from atrium.testing.loops import LoopThread
from tests.http_files import free_port

SECRET = "receiver-secret-0123456789"


@dataclass(frozen=True, slots=True)
class Answer:
    status: int = 200
    delay: float = 0.0  # seconds before answering


@dataclass(slots=True)
class Received:
    event: str
    delivery: str
    signature: str
    body: bytes
    status: int | None = None  # None: never answered (held, then dropped)

    @property
    def payload(self) -> dict[str, Any]:
        value: dict[str, Any] = orjson.loads(self.body)
        return value

    @property
    def id(self) -> str:
        return str(self.payload["id"])

    def signed_with(self, secret: str) -> bool:
        expected = "sha256=" + hmac.new(secret.encode(), self.body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(expected, self.signature)


class Receiver:
    """Answers ``script``'s answers in turn, then ``then`` (200 at once unless changed)."""

    def __init__(self, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None) -> None:
        self.port = free_port()
        self.host = host
        self.tls = tls
        self.url = f"{'https' if tls else 'http'}://{host}:{self.port}/events"
        self.script: deque[Answer] = deque()
        self.then = Answer()
        self._received: list[Received] = []
        self.holding = False  # requests wait until ``release``
        self._thread: LoopThread | None = None  # while up: the loop it serves on
        self._released: asyncio.Event | None = None  # the thread's, set unless holding
        self._runner: web.AppRunner | None = None

    @property
    def up(self) -> bool:
        return self._runner is not None

    @property
    def received(self) -> list[Received]:
        """Every request read so far, in the order they arrived (a copy)."""
        return list(self._received)

    async def start(self) -> None:
        self._thread = LoopThread(f"receiver {self.port}").start()
        await self._thread.run(self._start())

    async def _start(self) -> None:
        self._released = asyncio.Event()
        if not self.holding:
            self._released.set()
        app = web.Application()
        app.router.add_post("/events", self._handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, reuse_address=True, ssl_context=self.tls)
        await site.start()
        self._runner = runner

    async def stop(self) -> None:
        self.release()
        if self._thread is not None:
            await self._thread.run(self._stop())
            self._thread.close()
            self._thread = None

    async def _stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def hold(self) -> None:
        self.holding = True
        if self._thread is not None and self._released is not None:
            self._thread.call(self._released.clear)

    def release(self) -> None:
        self.holding = False
        if self._thread is not None and self._released is not None:
            self._thread.call(self._released.set)

    @property
    def accepted(self) -> list[Received]:
        """Requests answered 2xx, in the order they arrived."""
        return [r for r in self._received if r.status is not None and 200 <= r.status < 300]

    async def _handle(self, request: web.Request) -> web.Response:
        got = Received(
            event=request.headers.get("X-Atrium-Event", ""),
            delivery=request.headers.get("X-Atrium-Delivery", ""),
            signature=request.headers.get("X-Atrium-Signature-256", ""),
            body=await request.read(),
        )
        self._received.append(got)
        assert self._released is not None
        await self._released.wait()
        answer = self.script.popleft() if self.script else self.then
        if answer.delay:
            await asyncio.sleep(answer.delay)
        transport = request.transport
        if transport is not None and not transport.is_closing():
            got.status = answer.status  # else the client gave up: never answered, not accepted
        return web.Response(status=answer.status, text="ok" if answer.status < 300 else "no")


async def eventually(check: Callable[[], Awaitable[bool]], what: str, within: float = 60.0) -> None:
    """Wait until ``check`` holds; fail naming ``what`` if it never does (a hang's bound)."""
    deadline = time.monotonic() + within
    while not await check():
        assert time.monotonic() < deadline, f"never happened: {what}"
        await asyncio.sleep(0.02)
