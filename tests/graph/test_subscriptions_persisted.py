"""Subscriptions run the same documents as HTTP: a persisted hash runs what it names, and in
production only trusted documents run, over a real websocket (uvicorn, graphql-transport-ws)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import uvicorn

from graph.persisted import trust
from plugins.pincompute import PinComputePlugin
from plugins.pincompute.settings import ComputeSettings
from sources.persisted import document_hash
from tests.conftest import AppFactory, Client

TAIL = 'subscription { podLogTail(cluster: "east", namespace: "shop", pod: "checkout-abc") }'
OTHER = 'subscription { podLogTail(cluster: "west", namespace: "shop", pod: "checkout-abc") }'


@asynccontextmanager
async def served(client: Client) -> AsyncIterator[aiohttp.ClientWebSocketResponse]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(client.app, host="127.0.0.1", port=port, lifespan="off", log_config=None)
    )
    serving = asyncio.create_task(server.serve())
    try:
        for _ in range(500):  # uvicorn says it has started by a flag, not an event
            if server.started:
                break
            await asyncio.sleep(0.01)
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(
                f"ws://127.0.0.1:{port}/graphql", protocols=["graphql-transport-ws"]
            ) as ws,
        ):
            await ws.send_json({"type": "connection_init"})
            assert (await ws.receive_json(timeout=5))["type"] == "connection_ack"
            yield ws
    finally:
        server.should_exit = True
        await serving


async def subscribe(ws: aiohttp.ClientWebSocketResponse, id_: str, payload: Any) -> Any:
    await ws.send_json({"id": id_, "type": "subscribe", "payload": payload})
    return await ws.receive_json(timeout=5)


def by_hash(query: str) -> dict[str, Any]:
    return {"persistedQuery": {"version": 1, "sha256Hash": document_hash(query)}}


async def test_production_runs_only_trusted_subscriptions(make_client: AppFactory) -> None:
    client = await make_client(plugins=[PinComputePlugin(ComputeSettings())], mode="production")
    await trust(client.services.db, [(document_hash(TAIL), TAIL, None)])
    async with served(client) as ws:
        refused = await subscribe(ws, "1", {"query": OTHER})
        assert refused["type"] == "error", refused
        assert refused["payload"][0]["extensions"]["code"] == "OPERATION_NOT_TRUSTED"
        # The trusted one runs, by its text or by its hash alone (no cluster "east" here: it
        # ends at once, with no refusal).
        for id_, payload in (
            ("2", {"query": TAIL}),
            ("3", {"query": "", "extensions": by_hash(TAIL)}),
        ):
            ran = await subscribe(ws, id_, payload)
            assert ran["type"] in ("next", "complete"), ran
            assert "OPERATION_NOT_TRUSTED" not in str(ran)


async def test_an_unknown_hash_is_persisted_query_not_found(make_client: AppFactory) -> None:
    client = await make_client(plugins=[PinComputePlugin(ComputeSettings())])
    async with served(client) as ws:
        missed = await subscribe(ws, "1", {"query": "", "extensions": by_hash(OTHER)})
        assert missed["type"] == "error"
        assert missed["payload"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
        wrong = await subscribe(ws, "2", {"query": TAIL, "extensions": by_hash(OTHER)})
        assert wrong["payload"][0]["message"] == "provided sha does not match query"


async def test_a_document_that_does_not_parse_is_an_error_and_the_connection_goes_on(
    make_client: AppFactory,
) -> None:
    client = await make_client(plugins=[PinComputePlugin(ComputeSettings())])
    async with served(client) as ws:
        broken = await subscribe(ws, "1", {"query": 'subscription("x": String!) { a }'})
        assert broken["type"] == "error", broken
        [error] = broken["payload"]
        assert error["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"
        assert error["message"].startswith("Syntax Error") and error["locations"], error
        # The same connection runs the next operation (no cluster here: it ends at once).
        ran = await subscribe(ws, "2", {"query": TAIL})
        assert ran["type"] in ("next", "complete"), ran


async def test_nobody_subscribes_when_anonymous_reading_is_off(make_client: AppFactory) -> None:
    """The rule of every face (graph.auth.viewer.may_read): the connection is made, nothing is
    sent on it to nobody."""
    client = await make_client(plugins=[PinComputePlugin(ComputeSettings())], anonymous_read=False)
    async with served(client) as ws:
        refused = await subscribe(ws, "1", {"query": TAIL})
        assert refused["type"] == "error", refused
        [error] = refused["payload"]
        assert error["extensions"]["code"] == "UNAUTHENTICATED", error
        assert "anonymous reading is off" in error["message"]
