"""Hot answers sent by the HTTP protocol itself (atrium.http_protocol, graph.hot_answers):
byte for byte what uvicorn sends for the same request, never stale, and every request counted.

Each test serves one app from two real uvicorn servers over real sockets: one through
Atrium's protocol (the fast path), one through uvicorn's own httptools protocol (the normal
path), so the two answer from the same caches. The response cache's clock is held still
(answers' Age would otherwise tick between two requests), and moved on where a test says.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import orjson
import pytest
import uvicorn
from prometheus_client.parser import text_string_to_metric_families
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from atrium.cli import listening_socket, uvicorn_options
from atrium.http_protocol import AtriumHttpProtocol
from graph import logs
from graph.logs import configure_logging
from graph.persisted import trust
from loaders import responses
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from sources.persisted import document_hash
from tests.conftest import AppFactory, Client

PAGE = "query HotPage($ref: String!) { entity(ref: $ref) { ref title description } }"
APPLY = "mutation($y: String!) { applyEntities(yaml: $y) { created updated } }"
CART = """
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {{name: cart, title: {title}{description}}}
spec: {{type: service, lifecycle: production, owner: team-a}}
"""
GRAPHQL_RESPONSE = "application/graphql-response+json"
PREFLIGHT = {"apollo-require-preflight": "true", "accept": GRAPHQL_RESPONSE}


class Clock:
    """The response cache's wall clock, still unless moved."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    still = Clock(responses.clock())
    monkeypatch.setattr(responses, "clock", still)
    return still


@dataclass
class Reply:
    status: int
    head: bytes  # status line and headers, Date taken out
    body: bytes

    @property
    def bytes(self) -> bytes:
        return self.head + self.body

    def header(self, name: str) -> str | None:
        found = re.search(rb"\r\n" + name.encode() + rb": ([^\r]*)", self.head)
        return found[1].decode() if found else None


@dataclass
class Servers:
    client: Client
    fast: int  # Atrium's protocol
    normal: int  # uvicorn's own

    @property
    def services(self) -> Any:
        return self.client.services

    @property
    def answered(self) -> int:
        return int(self.services.hot.answered)


async def serve(
    app: Any, http: Any, keep_alive: int = 75
) -> tuple[uvicorn.Server, asyncio.Task[None], int]:
    sock = listening_socket("127.0.0.1", 0)
    options = {**uvicorn_options(keep_alive), "http": http}
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", **options))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        assert not task.done(), "the server did not start"
        await asyncio.sleep(0.01)
    return server, task, sock.getsockname()[1]


@contextlib.asynccontextmanager
async def both(client: Client) -> AsyncIterator[Servers]:
    started = [
        await serve(client.app, "atrium.http_protocol:http_protocol"),
        await serve(client.app, "httptools"),
    ]
    try:
        yield Servers(client, started[0][2], started[1][2])
    finally:
        for server, task, _ in started:
            server.should_exit = True
            await task


@pytest.fixture
def mode() -> str:
    return "development"


@pytest.fixture
async def servers(make_client: AppFactory, clock: Clock, mode: str) -> AsyncIterator[Servers]:
    client = await make_client(mode=mode)
    # Trusted, as the console's documents are (production runs nothing else).
    await trust(client.services.db, [(document_hash(d), d, None) for d in (PAGE, APPLY)])
    await store(client, "Cart")
    async with both(client) as started:
        yield started


async def store(client: Client, title: str, description: str = "") -> None:
    token = await client.admin_token()
    yaml = CART.format(title=title, description=f", description: {description}" * bool(description))
    await client.gql(APPLY, {"y": yaml}, token=token)


def target(ref: str = "component:cart", query: str = PAGE) -> str:
    extensions = {"persistedQuery": {"version": 1, "sha256Hash": document_hash(query)}}
    params = {  # as Apollo Client asks
        "operationName": "HotPage",
        "extensions": orjson.dumps(extensions).decode(),
        "variables": orjson.dumps({"ref": ref}).decode(),
    }
    return f"/graphql?{urlencode(params)}"


def request(
    path: str | None = None, headers: dict[str, str] | None = None, method: str = "GET"
) -> bytes:
    lines = [f"{method} {path or target()} HTTP/1.1", "host: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in (PREFLIGHT if headers is None else headers).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def read_reply(reader: asyncio.StreamReader, method: str = "GET") -> Reply:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = re.search(rb"\r\ncontent-length: (\d+)", head)
    size = 0 if method == "HEAD" or status in (204, 304) or not length else int(length[1])
    body = await reader.readexactly(size)
    return Reply(status, re.sub(rb"\r\ndate: [^\r]*", b"", head), body)


async def exchange(port: int, *requests: bytes) -> list[Reply]:
    """Send the requests at once (pipelined) on one connection and read their answers."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"".join(requests))
        methods = [r.split(b" ", 1)[0].decode() for r in requests]
        return [await read_reply(reader, method) for method in methods]
    finally:
        writer.close()


async def hot(servers: Servers, raw: bytes | None = None) -> Reply:
    """Ask the fast server until the answer comes from the table (filled by the first)."""
    raw = raw or request()
    before = servers.answered
    for _ in range(3):
        [reply] = await exchange(servers.fast, raw)
        if servers.answered > before:
            return reply
    raise AssertionError("never answered from the hot answers")


@pytest.mark.parametrize("mode", ["development", "production"])
async def test_hits_are_the_bytes_uvicorn_sends(servers: Servers) -> None:
    hit = await hot(servers)
    assert hit.status == 200 and orjson.loads(hit.body)["data"]["entity"]["title"] == "Cart"
    assert hit.header("cache-control") == "max-age=60, public"
    [normal] = await exchange(servers.normal, request())
    assert hit.bytes == normal.bytes
    # Another Accept is another answer (its Content-Type), each sent as uvicorn sends it.
    as_json = request(headers={**PREFLIGHT, "accept": "application/json"})
    hit = await hot(servers, as_json)
    assert hit.header("content-type") == "application/json"
    assert hit.bytes == (await exchange(servers.normal, as_json))[0].bytes


@pytest.mark.parametrize("mode", ["development", "production"])
async def test_requests_the_table_may_not_answer_go_the_normal_way(servers: Servers) -> None:
    hit = await hot(servers)
    etag = hit.header("etag")
    assert etag is not None
    token = await servers.client.admin_token()
    others = [
        request(headers={**PREFLIGHT, "authorization": f"Bearer {token}"}),
        request(headers={**PREFLIGHT, "cookie": "atrium_demo_user=ada"}),
        request(headers={**PREFLIGHT, "x-forwarded-user": "ada"}),
        request(headers={**PREFLIGHT, "if-none-match": etag}),
        request(headers={**PREFLIGHT, "if-modified-since": "Thu, 01 Jan 2026 00:00:00 GMT"}),
        request(headers={**PREFLIGHT, "connection": "close"}),
        request(headers={"accept": GRAPHQL_RESPONSE}),  # no preflight: CSRF refuses it
        request(headers={**PREFLIGHT, "accept": GRAPHQL_RESPONSE + ", */*"}),  # not kept yet
        request(method="HEAD"),
        request(target("component:nothing-here")),  # a miss
        request().replace(b"\r\n\r\n", b"\r\ncontent-length: 2\r\n\r\n{}"),  # a body
        request().replace(b"HTTP/1.1", b"HTTP/1.0"),
    ]
    for raw in others:
        before = servers.answered
        [fast] = await exchange(servers.fast, raw)
        [normal] = await exchange(servers.normal, raw)
        assert fast.bytes == normal.bytes, raw
        if b"accept: " + GRAPHQL_RESPONSE.encode() + b", */*" not in raw:
            assert servers.answered == before, raw
    statuses = {(await exchange(servers.fast, raw))[0].status for raw in others}
    assert statuses == {200, 304, 400, 405}


@pytest.mark.parametrize("mode", ["development", "production"])
async def test_pipelined_requests_keep_their_order(servers: Servers) -> None:
    await hot(servers)
    token = await servers.client.admin_token()
    mixed = [
        request(),
        request(headers={**PREFLIGHT, "authorization": f"Bearer {token}"}),
        request(),
        request(target("component:nothing-here")),
        request(),
        request(method="HEAD"),
        request(),
    ]
    before = servers.answered
    fast = await exchange(servers.fast, *mixed)
    normal = await exchange(servers.normal, *mixed)
    assert [r.bytes for r in fast] == [r.bytes for r in normal]
    # The first went out at once; those behind a request uvicorn answers wait their turn.
    assert servers.answered > before


async def test_a_write_is_seen_by_the_next_get(servers: Servers) -> None:
    assert orjson.loads((await hot(servers)).body)["data"]["entity"]["title"] == "Cart"
    await store(servers.client, "Basket")
    [after] = await exchange(servers.fast, request())
    assert orjson.loads(after.body)["data"]["entity"]["title"] == "Basket"
    assert orjson.loads((await hot(servers)).body)["data"]["entity"]["title"] == "Basket"


async def test_an_announced_change_is_seen_by_the_next_get(
    make_client: AppFactory, redis_url: str, cache_prefix: str, clock: Clock
) -> None:
    from loaders.announce import publish_invalidation

    client = await make_client(redis_url=redis_url, cache_prefix=cache_prefix)
    await store(client, "Cart")
    assert (await client.persisted_get(PAGE, {"ref": "component:cart"})).status_code == 200
    async with both(client) as servers:
        await hot(servers)
        assert len(servers.services.hot) == 1
        # As `atrium catalog import` does from another process: write, then announce.
        result = await apply_batch(
            client.services.db,
            parse_documents(CART.format(title="Basket", description=""), "c.yaml"),
        )
        await publish_invalidation(redis_url, cache_prefix, result.affected)
        for _ in range(200):  # until the message has come
            if not len(servers.services.hot):
                break
            await asyncio.sleep(0.01)
        assert not len(servers.services.hot), "the announcement dropped the hot answer"
        [after] = await exchange(servers.fast, request())
        assert orjson.loads(after.body)["data"]["entity"]["title"] == "Basket"


async def test_an_answer_evicted_from_the_response_cache_leaves_the_table(
    make_client: AppFactory, clock: Clock
) -> None:
    client = await make_client(response_cache_max_entries=1)
    await trust(client.services.db, [(document_hash(PAGE), PAGE, None)])
    await store(client, "Cart")
    async with both(client) as servers:
        await hot(servers)
        assert len(servers.services.hot) == 1
        [other] = await exchange(servers.fast, request(target("component:web")))
        assert other.status == 200 and not len(servers.services.hot)
        before = servers.answered
        [again] = await exchange(servers.fast, request())
        assert servers.answered == before and again.header("age") is None  # executed again


async def test_an_answer_ages_as_the_normal_way_says(servers: Servers, clock: Clock) -> None:
    fresh = await hot(servers)
    assert fresh.header("age") is None
    clock.now += 2.5
    [aged] = await exchange(servers.fast, request())
    assert aged.header("age") == "2"
    assert aged.bytes == (await exchange(servers.normal, request()))[0].bytes
    again = await hot(servers)
    assert again.bytes == aged.bytes
    clock.now += 1
    assert (await hot(servers)).header("age") == "3"


async def test_a_draining_replica_says_close_on_every_answer(servers: Servers) -> None:
    await hot(servers)
    servers.services.draining = True
    before = servers.answered
    [fast] = await exchange(servers.fast, request())
    [normal] = await exchange(servers.normal, request())
    assert fast.bytes == normal.bytes and fast.header("connection") == "close"
    assert servers.answered == before


async def test_a_client_that_does_not_read_is_not_written_to_without_end(
    servers: Servers,
) -> None:
    """Pipelined requests from a client that does not read its answers fill the transport's
    buffer; then the rest wait in uvicorn's queue, reading stops, and all is answered in order
    once the client reads."""
    await store(servers.client, "Cart", description="x" * 200_000)
    big = await hot(servers)
    assert len(big.body) > 200_000
    reader, writer = await asyncio.open_connection("127.0.0.1", servers.fast)
    count = 300  # 60 MB of answers: more than any socket buffers between them
    before = servers.answered
    writer.write(request() * count)  # never drained: the client reads only afterwards
    await asyncio.sleep(0.3)  # what the server does meanwhile
    replies = [await read_reply(reader) for _ in range(count)]
    writer.close()
    assert all(r.status == 200 and r.bytes == big.bytes for r in replies)
    assert before < servers.answered < before + count, "some waited for the buffer to drain"


async def test_a_request_behind_an_answer_is_not_cut_by_the_keep_alive_timer(
    servers: Servers,
) -> None:
    """The keep-alive timer runs while a connection is idle, not while a request is read: a
    POST pipelined behind a hot answer whose body comes slowly is answered."""
    await hot(servers)
    server, task, port = await serve(servers.client.app, "atrium.http_protocol:http_protocol", 1)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        body = orjson.dumps({"query": "{ __typename }"})
        post = (
            "POST /graphql HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            f"accept: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
        ).encode()
        before = servers.answered
        writer.write(request() + request() + post + body[:5])
        assert (await read_reply(reader)).status == 200
        assert (await read_reply(reader)).status == 200
        assert servers.answered >= before + 1
        await asyncio.sleep(1.5)  # longer than the keep-alive timeout
        writer.write(body[5:])
        answer = await read_reply(reader)
        assert orjson.loads(answer.body) == {"data": {"__typename": "Query"}}
    finally:
        writer.close()
        server.should_exit = True
        await task


def count_samples(text: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    """Logging configured as `atrium serve` does, into a string; restored afterwards."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, logs._sink, logs._handler)
    levels = {n: logging.getLogger(n).level for n in ("pgserver", "uvicorn.error", "httpx")}
    out = io.StringIO()
    configure_logging("INFO", stream=out)
    try:
        yield out
    finally:
        root.handlers[:], root.level, logs._sink, logs._handler = saved
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        logging.getLogger("uvicorn.access").disabled = False


async def test_every_request_is_counted_and_logged(
    servers: Servers, log_stream: io.StringIO
) -> None:
    await hot(servers)
    scrape = request("/metrics", {})

    async def counted() -> float:
        [metrics] = await exchange(servers.fast, scrape)
        return count_samples(
            metrics.body.decode(),
            "atrium_graphql_requests_total",
            operation="HotPage",
            status="200",
        )

    before, answered, hits = await counted(), servers.answered, servers.services.caches.stats
    response_hits = hits.counts.get(("response", "hit"), 0)
    logs.flush_logs()
    lines = len(log_stream.getvalue().splitlines())
    token = await servers.client.admin_token()
    sent = [request()] * 5 + [request(headers={**PREFLIGHT, "authorization": f"Bearer {token}"})]
    sent += [request()] * 4
    for raw in sent:
        await exchange(servers.fast, raw)
    await exchange(servers.fast, *sent)  # pipelined too
    assert servers.answered - answered >= 10, "most were hot answers"
    assert await counted() == before + len(sent) * 2
    [metrics] = await exchange(servers.fast, scrape)
    assert count_samples(metrics.body.decode(), "atrium_hot_answers") == servers.answered
    assert hits.counts[("response", "hit")] == response_hits + len(sent) * 2
    await asyncio.sleep(logs.FLUSH_DELAY * 3)
    logged = [orjson.loads(line) for line in log_stream.getvalue().splitlines()[lines:]]
    requests = [line for line in logged if line.get("operation") == "HotPage"]
    assert len(requests) == len(sent) * 2
    assert {(r["method"], r["status"], r["message"]) for r in requests} == {
        ("GET", 200, "graphql request")
    }
    assert [r["time"] for r in requests] == sorted(r["time"] for r in requests)


async def test_subscriptions_upgrade_through_the_protocol(servers: Servers) -> None:
    from websockets.asyncio.client import connect
    from websockets.typing import Subprotocol

    url = f"ws://127.0.0.1:{servers.fast}/graphql"
    async with connect(url, subprotocols=[Subprotocol("graphql-transport-ws")]) as socket:
        await socket.send(orjson.dumps({"type": "connection_init"}).decode())
        assert orjson.loads(await socket.recv()) == {"type": "connection_ack"}


async def test_the_setting_turns_the_fast_path_off(make_client: AppFactory) -> None:
    client = await make_client(hot_answers=False)
    assert client.services.hot is None
    from atrium.http_protocol import http_protocol

    config = uvicorn.Config(client.app, lifespan="off", **uvicorn_options())
    config.load()
    made = http_protocol(config, uvicorn.server.ServerState(), {})
    assert type(made) is HttpToolsProtocol
    on = await make_client()
    config = uvicorn.Config(on.app, lifespan="off", **uvicorn_options())
    config.load()
    assert type(http_protocol(config, uvicorn.server.ServerState(), {})) is AtriumHttpProtocol
