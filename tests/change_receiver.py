"""A receiver of change events for tests: a real HTTP server (aiohttp) on 127.0.0.1, scripted
to be down (not listening), to answer errors, to answer slowly, or to hold requests until
released, and recording every request it read with what it answered.

While it is up it serves from a process of its own, so that whoever delivers to it (a replica
in another process, an app on the test's own loop) is answered whatever the test's loop is
doing, and never waits for this process's interpreter lock (a server on a thread of the test's
process made ten thousand deliveries take half as long again). The test drives it through a
pipe: each command is answered once the server has taken it, so a script set now holds for
the next request; what it received is fetched when the test looks (``received``)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import orjson
import trustme
from aiohttp import web

from tests.http_files import free_port
from tests.processes import PROCESSES

SECRET = "receiver-secret-0123456789"

_STARTED_WITHIN = 30.0  # seconds: a bound on a stuck start, not a measure


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
    connection: int  # the sender's port: requests with the same one came on one connection
    host: str  # the Host header
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


class Script:
    """The answers to give in turn before ``Receiver.then``: kept here while the receiver is
    down, handed to its process while it is up."""

    def __init__(self, receiver: Receiver) -> None:
        self._receiver = receiver
        self.waiting: list[Answer] = []  # while down

    def append(self, answer: Answer) -> None:
        self.extend([answer])

    def extend(self, answers: Iterable[Answer]) -> None:
        answers = list(answers)
        if self._receiver.up:
            self._receiver._command("script", answers)
        else:
            self.waiting.extend(answers)


class Receiver:
    """Answers ``script``'s answers in turn, then ``then`` (200 at once unless changed)."""

    def __init__(self, host: str = "127.0.0.1", tls: trustme.LeafCert | None = None) -> None:
        self.port = free_port()
        self.host = host
        self.tls = tls
        self.url = f"{'https' if tls else 'http'}://{host}:{self.port}/events"
        self.script = Script(self)
        self._then = Answer()
        self.holding = False  # requests wait until ``release``
        self._received: list[Received] = []
        self._first = 0  # where the running process's records begin in ``_received``
        self._process: Any = None
        self._pipe: Connection | None = None

    @property
    def up(self) -> bool:
        return self._pipe is not None

    @property
    def then(self) -> Answer:
        return self._then

    @then.setter
    def then(self, answer: Answer) -> None:
        self._then = answer
        if self.up:
            self._command("then", answer)

    @property
    def received(self) -> list[Received]:
        """Every request read so far, in the order they arrived (a copy)."""
        if self.up:
            self._fetch()
        return list(self._received)

    @property
    def accepted(self) -> list[Received]:
        """Requests answered 2xx, in the order they arrived."""
        return [r for r in self.received if r.status is not None and 200 <= r.status < 300]

    async def start(self) -> None:
        ours, theirs = PROCESSES.Pipe()
        tls = self.tls.private_key_and_cert_chain_pem.bytes() if self.tls else None
        # What the test scripted while it was down holds from the first request on.
        initial = (self.script.waiting, self._then, self.holding)
        process = PROCESSES.Process(
            target=_serve, args=(theirs, self.host, self.port, tls, initial), daemon=True
        )
        await asyncio.to_thread(process.start)
        theirs.close()
        if not await asyncio.to_thread(ours.poll, _STARTED_WITHIN):
            process.kill()
            raise AssertionError(f"the receiver on port {self.port} did not start")
        ours.recv()  # started: listening
        self._process, self._pipe, self._first = process, ours, len(self._received)
        self.script.waiting = []

    async def stop(self) -> None:
        self.release()
        if self._pipe is None:
            return
        self._fetch()
        self._command("stop")
        self._pipe.close()
        self._pipe = None
        await asyncio.to_thread(self._process.join, _STARTED_WITHIN)

    def hold(self) -> None:
        self.holding = True
        if self.up:
            self._command("hold")

    def release(self) -> None:
        self.holding = False
        if self.up:
            self._command("release")

    def _command(self, name: str, argument: Any = None) -> Any:
        assert self._pipe is not None
        self._pipe.send((name, argument))
        return self._pipe.recv()  # once the server took it

    def _fetch(self) -> None:
        """What the server received since the last look, and every answer's status."""
        new, statuses = self._command("received", len(self._received) - self._first)
        self._received += [Received(*fields) for fields in new]
        for received, status in zip(self._received[self._first :], statuses, strict=True):
            received.status = status


async def eventually(check: Callable[[], Awaitable[bool]], what: str, within: float = 60.0) -> None:
    """Wait until ``check`` holds; fail naming ``what`` if it never does (a hang's bound)."""
    deadline = time.monotonic() + within
    while not await check():
        assert time.monotonic() < deadline, f"never happened: {what}"
        await asyncio.sleep(0.02)


# --- In the receiver's own process. ------------------------------------------------------------


def _serve(
    pipe: Connection,
    host: str,
    port: int,
    tls: bytes | None,
    initial: tuple[list[Answer], Answer, bool],
) -> None:
    asyncio.run(_Server(pipe, *initial).run(host, port, tls))


class _Server:
    def __init__(self, pipe: Connection, script: list[Answer], then: Answer, hold: bool) -> None:
        self.pipe = pipe
        self.script = list(script)
        self.then = then
        self.released = asyncio.Event()
        if not hold:
            self.released.set()
        self.records: list[tuple[str, str, str, bytes, int, str]] = []
        self.statuses: list[int | None] = []
        self.stopped = asyncio.Event()

    async def run(self, host: str, port: int, tls: bytes | None) -> None:
        app = web.Application()
        app.router.add_post("/events", self.handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, host, port, reuse_address=True, ssl_context=_context(tls))
        await site.start()
        loop = asyncio.get_running_loop()
        loop.add_reader(self.pipe.fileno(), self.command)
        self.pipe.send("listening")
        await self.stopped.wait()
        loop.remove_reader(self.pipe.fileno())
        self.released.set()
        await runner.cleanup()
        self.pipe.send("stopped")

    def command(self) -> None:
        try:
            name, argument = self.pipe.recv()
        except EOFError:  # the test's process is gone
            self.stopped.set()
            return
        answer: Any = None
        if name == "script":
            self.script += argument
        elif name == "then":
            self.then = argument
        elif name == "hold":
            self.released.clear()
        elif name == "release":
            self.released.set()
        elif name == "received":
            answer = (self.records[argument:], self.statuses)
        elif name == "stop":
            self.stopped.set()
            return  # answered once stopped
        self.pipe.send(answer)

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        index = len(self.records)  # taken with the record, no await between
        headers = request.headers
        transport = request.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        self.records.append(
            (
                headers.get("X-Atrium-Event", ""),
                headers.get("X-Atrium-Delivery", ""),
                headers.get("X-Atrium-Signature-256", ""),
                body,
                peer[1] if peer else 0,
                headers.get("Host", ""),
            )
        )
        self.statuses.append(None)
        await self.released.wait()
        answer = self.script.pop(0) if self.script else self.then
        if answer.delay:
            await asyncio.sleep(answer.delay)
        if transport is not None and not transport.is_closing():
            self.statuses[index] = answer.status  # else the client gave up: never answered
        return web.Response(status=answer.status, text="ok" if answer.status < 300 else "no")


def _context(tls: bytes | None) -> ssl.SSLContext | None:
    if tls is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory() as tmp:
        pem = Path(tmp, "server.pem")
        pem.write_bytes(tls)
        context.load_cert_chain(pem)
    return context
