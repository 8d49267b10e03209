"""componentDeploys subscriptions of one component share one upstream: one change listener and
one read per change however many follow it (counted, through a real server)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from plugins.deployments.live import DeployFeed
from tests.conftest import AppFactory
from tests.plugins.deploy_env import Env, deploy_env, eventually, github_event

QUERY = """subscription($c: String!) { componentDeploys(component: $c) { state stage } }"""
REF = "component:default/checkout"


@pytest.fixture
async def env(make_client: AppFactory, tmp_path: Path) -> AsyncIterator[Env]:
    async with deploy_env(make_client, tmp_path) as environment:
        yield environment


async def _subscribed(stack: contextlib.AsyncExitStack, env: Env, session: Any) -> Any:
    ws = await stack.enter_async_context(
        session.ws_connect(
            f"{env.base.replace('http', 'ws')}/graphql", protocols=["graphql-transport-ws"]
        )
    )
    await ws.send_json({"type": "connection_init"})
    assert (await ws.receive_json(timeout=5))["type"] == "connection_ack"
    await ws.send_json(
        {
            "id": "1",
            "type": "subscribe",
            "payload": {"query": QUERY, "variables": {"c": "component:checkout"}},
        }
    )
    return ws


async def test_subscribers_of_one_component_share_one_listener_and_one_read(env: Env) -> None:
    live = env.client.services.extras["deployments"].live
    async with aiohttp.ClientSession() as session, contextlib.AsyncExitStack() as stack:
        sockets = [await _subscribed(stack, env, session) for _ in range(5)]
        await eventually(lambda: _true(live.subscribers(REF) == 5))
        feed = live.upstream(REF)
        assert isinstance(feed, DeployFeed)
        assert live.started == 1 and live.upstreams() == 1
        await env.github.send(
            "deployment_status", github_event("deployment_status", state="in_progress")
        )
        for ws in sockets:
            message = await ws.receive_json(timeout=5)
            assert message["payload"]["data"]["componentDeploys"] == {
                "state": "IN_PROGRESS",
                "stage": "production",
            }
        # One read for the change, whatever the number of subscribers.
        assert feed.reads == 1
    # The last one gone, the listener goes too.
    await eventually(lambda: _true(live.upstreams() == 0))


async def _true(value: bool) -> bool:
    return value
