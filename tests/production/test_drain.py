"""A replica told to stop (SIGTERM) drains: readiness 503 at once, everything else served for
the grace, then listening ends, idle keep-alive connections are closed, requests already read
are answered, websockets are closed with 1012, and the process exits 0."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.harness.replica import Replica, serve_environment
from sources.persisted import document_hash
from tests.production.replicas import ENTITY, Fleet, prepare, settings, subscriber

REF = "component:default/checkout"


@pytest.fixture
async def token(database_url: str) -> str:
    return await prepare(database_url)


@pytest.fixture
async def stopped(tmp_path: Path) -> AsyncIterator[list[Replica]]:
    """Replicas a test starts, killed at its end if they still run."""
    replicas: list[Replica] = []
    yield replicas
    for replica in replicas:
        await replica.kill()


async def started(
    replicas: list[Replica], env: dict[str, str], directory: Path, *args: str
) -> Replica:
    replica = Replica("drained", serve_environment(env), directory, args=args)
    replicas.append(replica)
    await replica.start()
    await replica.ready()
    # Every worker, not only the first to answer: a worker still starting when the signal
    # comes has nothing to drain.
    workers = int(args[args.index("--workers") + 1]) if "--workers" in args else 1
    for _ in range(600):
        if replica.log_text().count('"message":"ready"') >= workers:
            break
        await asyncio.sleep(0.05)
    assert replica.log_text().count('"message":"ready"') >= workers, replica.log_text()
    return replica


async def draining(replica: Replica, http: httpx.AsyncClient) -> None:
    """Wait until readiness says so (a signal is handled a moment after it is sent)."""
    for _ in range(200):
        answer = await http.get(f"{replica.base}/readyz")
        if answer.status_code == 503:
            assert answer.json() == {"replica": "draining"}
            return
        assert answer.status_code == 200
        await asyncio.sleep(0.05)
    raise AssertionError("readiness never said draining")


async def not_listening(replica: Replica) -> None:
    """Wait until a new connection is refused: the grace is over."""
    for _ in range(600):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", replica.port)
        except ConnectionRefusedError:
            return
        writer.close()
        await asyncio.sleep(0.05)
    raise AssertionError("the replica never stopped listening")


def persisted_get(port: int) -> bytes:
    extensions = json.dumps({"persistedQuery": {"version": 1, "sha256Hash": document_hash(ENTITY)}})
    query = httpx.QueryParams({"extensions": extensions, "variables": json.dumps({"ref": REF})})
    return (
        f"GET /graphql?{query} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
        "apollo-require-preflight: true\r\naccept: application/json\r\n\r\n"
    ).encode()


class Half:
    """A POST whose headers are sent and read, its body not yet: the server's ``100 Continue``
    (an ``Expect: 100-continue`` answered once the app asks for the body) says it is reading
    it, whatever the machine's load made of the timing."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, rest: bytes
    ) -> None:
        self.reader, self.writer, self.rest = reader, writer, rest

    @classmethod
    async def send(cls, port: int) -> Half:
        body = json.dumps({"query": ENTITY, "variables": {"ref": REF}}).encode()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        head = (
            f"POST /graphql HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
            f"accept: application/json\r\ncontent-length: {len(body)}\r\n"
            "expect: 100-continue\r\n\r\n"
        ).encode()
        writer.write(head)
        await writer.drain()
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        assert interim.lower().startswith(b"http/1.1 100 continue"), interim
        return cls(reader, writer, body)

    async def finish(self) -> tuple[bytes, dict[str, object]]:
        """The rest of the body; the answer's head and JSON."""
        self.writer.write(self.rest)
        await self.writer.drain()
        head = await self.reader.readuntil(b"\r\n\r\n")
        body = await self.reader.read()  # the server closes the connection after it
        self.writer.close()
        return head.lower(), json.loads(body)


async def test_sigterm_drains_then_stops(
    database_url: str,
    redis_url: str,
    cache_prefix: str,
    token: str,
    stopped: list[Replica],
    tmp_path: Path,
) -> None:
    env = settings(database_url, redis_url, cache_prefix, ATRIUM_SHUTDOWN_GRACE="5")
    replica = await started(stopped, env, tmp_path)
    fleet = Fleet([replica], token)
    async with subscriber(fleet.ws(replica.base), REF) as deploys, httpx.AsyncClient() as http:
        await deploys.until(lambda s: bool(s.of("connected")), "a connection")
        # A keep-alive connection that has served a request and waits for the next.
        idle_reader, idle_writer = await asyncio.open_connection("127.0.0.1", replica.port)
        idle_writer.write(persisted_get(replica.port))
        head = await idle_reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and b"connection: close" not in head.lower()
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        await idle_reader.readexactly(length)

        replica.send_signal(signal.SIGTERM)
        await draining(replica, http)
        # The grace: everything but readiness served, each answer saying Connection: close.
        served = await fleet.entity(REF, replica.base)
        assert served.status_code == 200 and served.json()["data"]["entity"]["ref"] == REF
        assert served.headers["connection"] == "close"
        assert (await http.get(f"{replica.base}/healthz")).status_code == 200
        half = await Half.send(replica.port)
        assert not deploys.of("closed")  # the subscription lives on through the grace

        await not_listening(replica)
        head, answer = await half.finish()  # read before the end of the grace: answered
        assert head.startswith(b"http/1.1 200") and b"connection: close" in head
        assert answer["data"] == {
            "entity": {"ref": REF, "title": None, "description": "Takes the money"}
        }
        assert await idle_reader.read() == b""  # closed cleanly, not reset
        idle_writer.close()
        await deploys.until(lambda s: bool(s.of("closed")), "the close")
        assert deploys.of("closed")[0]["code"] == 1012
        assert await replica.wait() == 0
    log = replica.log_text()
    assert '"draining: readiness says 503, serving on"' in log and '"grace over: stopping"' in log
    assert '"level":"error"' not in log and "Traceback" not in log


@contextlib.contextmanager
def sigint_inherited(disposition: Any) -> Iterator[None]:
    """Processes started in the block inherit ``disposition`` for SIGINT: Python's handler, as
    from a terminal, or ignored, as a shell's background job (``atrium serve &``) is."""
    before = signal.signal(signal.SIGINT, disposition)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.parametrize(
    ("second", "status", "workers", "sigint"),
    [
        (signal.SIGTERM, 0, "1", signal.default_int_handler),
        (signal.SIGINT, 130, "1", signal.default_int_handler),
        (signal.SIGINT, 130, "1", signal.SIG_IGN),
        (signal.SIGTERM, 0, "2", signal.default_int_handler),
    ],
    ids=["sigterm", "ctrl-c", "ctrl-c-to-a-background-job", "sigterm-to-two-workers"],
)
async def test_a_second_signal_skips_the_rest_of_the_grace(
    database_url: str,
    redis_url: str,
    cache_prefix: str,
    token: str,
    stopped: list[Replica],
    tmp_path: Path,
    second: int,
    status: int,
    workers: str,
    sigint: Any,
) -> None:
    env = settings(database_url, redis_url, cache_prefix, ATRIUM_SHUTDOWN_GRACE="600")
    with sigint_inherited(sigint):
        replica = await started(stopped, env, tmp_path, "--workers", workers)
    async with httpx.AsyncClient() as http:
        replica.send_signal(signal.SIGTERM)
        await draining(replica, http)
        half = await Half.send(replica.port)
        replica.send_signal(second)  # Ctrl+C, or a platform that will not wait
        await not_listening(replica)
        head, answer = await half.finish()  # still answered
        assert head.startswith(b"http/1.1 200") and answer["data"] is not None
        assert await replica.wait(within=60) == status  # long before the grace would end
    assert '"stopping now"' in replica.log_text()


async def test_several_workers_drain_together(
    database_url: str,
    redis_url: str,
    cache_prefix: str,
    token: str,
    stopped: list[Replica],
    tmp_path: Path,
) -> None:
    env = settings(database_url, redis_url, cache_prefix, ATRIUM_SHUTDOWN_GRACE="3")
    replica = await started(stopped, env, tmp_path, "--workers", "2")
    fleet = Fleet([replica], token)
    async with httpx.AsyncClient() as http:
        replica.send_signal(signal.SIGTERM)  # to the supervisor, which tells its workers
        await draining(replica, http)
        served = await fleet.entity(REF, replica.base)
        assert served.status_code == 200 and served.json()["data"]["entity"]["ref"] == REF
        assert await replica.wait() == 0
    log = replica.log_text()  # each worker drained
    assert log.count('"draining: readiness says 503, serving on"') == 2
    assert log.count('"grace over: stopping"') == 2


async def test_an_embedded_database_is_stopped_after_the_drain(
    stopped: list[Replica], embedded_home: Path
) -> None:
    env = {"ATRIUM_SHUTDOWN_GRACE": "0.5", "ATRIUM_WEB_DIR": "/nonexistent-console-build"}
    replica = await started(stopped, env, embedded_home)
    postmaster = embedded_home / ".atrium" / "pgdata" / "postmaster.pid"
    assert postmaster.exists()
    assert await replica.stop() == 0
    assert not postmaster.exists()
