"""The test kit's subscriptions in process (``AtriumClient.websocket``, ``GraphQLWebSocket``), as
a plugin author uses them: a plugin's subscription answers as nobody, as a user and with a
token, one that waits for events is left waiting, and ``check_hostile_inputs`` reaches a
plugin's subscription fields and reports the one that breaks; an app that crashes shows as a
connection closed with 1011."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import pytest

from atrium.testing import (
    AtriumClient,
    GraphQLWebSocket,
    HostileInputFailures,
    WebSocketClosed,
    check_hostile_inputs,
)
from atrium.testing.hostile import subscription_failures
from atrium.testing.hostile_values import HOSTILE_STRINGS
from graph.plugin import Info, PluginBuilder, UserError, strawberry

AtriumApp = Callable[..., Awaitable[AtriumClient]]
TICKS = 'subscription { ticks(label: "a") }'


@strawberry.type
class TickSubscription:
    @strawberry.subscription
    async def ticks(self, info: Info, label: str, count: int = 2) -> AsyncGenerator[str, None]:
        if "../" in label:
            raise ValueError("a path climbs out")  # a bug: not a UserError
        if count < 0:
            raise UserError("count must not be negative")
        viewer = info.context.viewer.ref or "nobody"
        for n in range(min(count, 3)):
            yield f"{label} {n} {viewer}"
        if count == 0:
            await asyncio.Event().wait()  # events that never come


class TickPlugin:
    id = "ticks"

    def setup(self, builder: PluginBuilder) -> None:
        builder.subscription(TickSubscription)


def texts(messages: list[dict[str, Any]]) -> list[str]:
    return [m["payload"]["data"]["ticks"] for m in messages if m["type"] == "next"]


async def test_subscriptions_in_process(atrium_app: AtriumApp) -> None:
    client = await atrium_app(plugins=[TickPlugin()])
    token = await client.admin_token()
    async with client.websocket() as ws:
        await ws.subscribe("1", TICKS)
        await ws.subscribe("waits", 'subscription { ticks(label: "w", count: 0) }')
        await ws.subscribe("bad", "subscription { ticks(label: 1) }")
        answers = await ws.settle(["1", "waits", "bad"], quiet=0.3)
        assert texts(answers["1"]) == ["a 0 nobody", "a 1 nobody"]
        assert answers["1"][-1] == {"id": "1", "type": "complete"}
        assert answers["waits"] == []  # still open: nothing yet is a clean answer
        assert [m["type"] for m in answers["bad"]] == ["error"]
        await ws.complete("waits")
    assert ws.closed is not None and ws.closed.code == 1000
    assert ws.task_errors == []
    # The same connection as a user (the trusted proxy's header), and with a token.
    async with client.as_user("ann").websocket() as ws:
        await ws.subscribe("1", TICKS)
        assert texts((await ws.settle(["1"]))["1"]) == [
            "a 0 user:default/ann",
            "a 1 user:default/ann",
        ]
    async with client.websocket({"Authorization": f"Bearer {token}"}) as ws:
        await ws.subscribe("1", TICKS)
        first = await ws.receive()
        assert first["payload"]["data"]["ticks"].startswith("a 0 ")


async def test_hostile_input_check_reaches_subscriptions(atrium_app: AtriumApp) -> None:
    client = await atrium_app(plugins=[TickPlugin()])
    with pytest.raises(HostileInputFailures) as failed:
        await check_hostile_inputs(client, "ticks", quiet=0.3)
    failures = failed.value.failures
    climbing = [s for s in HOSTILE_STRINGS if "../" in s]
    # Each string that climbs a path, as nobody and as an admin; negative counts are refused
    # cleanly, and a count of 0 waits.
    assert len(failures) == len(climbing) * 2, failures
    assert all(f.startswith("Subscription.ticks label=") for f in failures), failures
    assert all("without extensions.code" in f for f in failures), failures
    assert failed.value.sent > len(failures) * 10


async def _crashing(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An app that takes the handshake and connection_init, then raises."""
    assert (await receive())["type"] == "websocket.connect"
    await send({"type": "websocket.accept", "subprotocol": "graphql-transport-ws"})
    await receive()
    await send({"type": "websocket.send", "text": '{"type": "connection_ack"}'})
    await receive()
    raise RuntimeError("boom")


class _CrashingClient:
    def websocket(self, headers: Any = None) -> GraphQLWebSocket:
        return GraphQLWebSocket(_crashing, headers)


async def test_an_app_that_crashes_closes_with_1011() -> None:
    async with GraphQLWebSocket(_crashing) as ws:
        await ws.subscribe("1", TICKS)
        with pytest.raises(WebSocketClosed) as closed:
            await ws.receive()
    assert closed.value.closed.code == 1011
    assert isinstance(closed.value.closed.error, RuntimeError)
    failures = await subscription_failures(_CrashingClient(), [("ticks", TICKS, {})])
    assert failures == ["the server closed the websocket: 1011 the app raised RuntimeError('boom')"]
