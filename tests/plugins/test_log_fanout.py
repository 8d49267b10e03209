"""Log tails through a real Atrium server (its uvicorn options and websocket protocol): the
followers of one workload read each pod's log once, and a follower that reads nothing is
closed with 1013 and a reason while another on the same pods receives every line."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from atrium.cli import uvicorn_options
from plugins.pincompute import PinComputePlugin
from plugins.pincompute.settings import ComputeSettings
from plugins.pincompute.store import Key
from tests.conftest import AppFactory, Client
from tests.kube import Cluster, kubeconfig, start_clusters
from tests.plugins.deploy_env import eventually, serving

QUERY = """subscription { pinAppLogTail(cluster: "east", namespace: "shop", name: "checkout",
  tailLines: 1) { pod text } }"""
QUEUE = 4  # messages a connection may leave waiting


def _object(kind: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name, "namespace": "shop"}, **fields}


async def _workload(east: Cluster) -> None:
    await east.put(
        "pinapps",
        "shop",
        _object(
            "PinApp",
            "checkout",
            apiVersion="compute.atrium.dev/v1",
            spec={"image": "registry.example/checkout:1.0", "replicas": 2},
            status={"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2},
        ),
    )
    for name in ("checkout-a", "checkout-b"):
        pod = _object("Pod", name, apiVersion="v1", spec={"containers": [{"name": "app"}]})
        pod["metadata"]["labels"] = {"atrium.dev/pinapp": "checkout"}
        await east.put("pods", "shop", pod)


@contextlib.asynccontextmanager
async def _served(
    make_client: AppFactory, tmp_path: Path
) -> AsyncIterator[tuple[Client, Cluster, str]]:
    async with start_clusters("east") as (east,):
        await _workload(east)
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig(east)))
        settings = ComputeSettings(kubeconfig=str(path), compute_request_timeout=2.0)
        client: Client = await make_client(
            plugins=[PinComputePlugin(settings)], subscription_queue=QUEUE
        )
        compute = client.services.extras["pincompute"]
        key = Key("east", "shop", "checkout")
        await eventually(lambda: _true(compute.pinapps.get(key) is not None))
        async with serving(client, **uvicorn_options()) as base:
            yield client, east, f"{base.replace('http', 'ws', 1)}/graphql"


async def _true(value: bool) -> bool:
    return value


async def _follow(url: str, **options: Any) -> ClientConnection:
    ws = await connect(url, subprotocols=[Subprotocol("graphql-transport-ws")], **options)
    await ws.send(orjson.dumps({"type": "connection_init"}).decode())
    assert orjson.loads(await ws.recv())["type"] == "connection_ack"
    await ws.send(
        orjson.dumps({"id": "1", "type": "subscribe", "payload": {"query": QUERY}}).decode()
    )
    return ws


async def _line(ws: ClientConnection) -> tuple[str, str]:
    message = orjson.loads(await asyncio.wait_for(ws.recv(), 10))
    assert message["type"] == "next", message
    got = message["payload"]["data"]["pinAppLogTail"]
    return got["pod"], got["text"]


async def test_followers_of_a_workload_read_each_pod_once(
    make_client: AppFactory, tmp_path: Path
) -> None:
    async with _served(make_client, tmp_path) as (client, east, url):
        logs = {pod: east.pod_log("shop", pod) for pod in ("checkout-a", "checkout-b")}
        logs["checkout-a"].write("a0\n")
        logs["checkout-b"].write("b0\n")
        follows = client.services.extras["pincompute"].follows
        sockets = [await _follow(url) for _ in range(4)]
        try:
            # Every follower on both pods' upstreams, and its tail (the newest line) read, before
            # a line is written: a tail read later would hold the new lines, and its one line
            # would be the newest alone.
            await eventually(
                lambda: _true(all(follows.subscribers(("east", "shop", pod)) == 4 for pod in logs))
            )
            for ws in sockets:
                assert await _line(ws) == ("checkout-b", "b0")
            logs["checkout-a"].write("a1\n")
            logs["checkout-b"].write("b1\n")
            for ws in sockets:
                assert sorted([await _line(ws), await _line(ws)]) == [
                    ("checkout-a", "a1"),
                    ("checkout-b", "b1"),
                ]
        finally:
            for ws in sockets:
                await ws.close()
        followed = [r for r in east.requests if r.path.endswith("/log") and "follow" in r.query]
        assert sorted(r.path.split("/")[-2] for r in followed) == ["checkout-a", "checkout-b"]
        assert follows.started == 2
        await eventually(lambda: _true(follows.upstreams() == 0))


async def test_a_follower_that_reads_nothing_is_closed_and_the_others_go_on(
    make_client: AppFactory, tmp_path: Path
) -> None:
    async with _served(make_client, tmp_path) as (client, east, url):
        log = east.pod_log("shop", "checkout-a")
        east.pod_log("shop", "checkout-b")
        log.write("first\n")
        follows = client.services.extras["pincompute"].follows
        reader = await _follow(url)
        # Its tail read (the newest line) before the lines to follow are written: one read
        # later would hold only the newest of them.
        assert await _line(reader) == ("checkout-a", "first")
        # A client that stops reading: a small receive buffer, and its library reads no more
        # from the socket once a message waits unread.
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", int(url.split(":")[2].split("/")[0])))
        stuck = await _follow(url, sock=sock, max_queue=1, compression=None)
        assert await _line(stuck) == ("checkout-a", "first")  # then it reads nothing more
        pod = ("east", "shop", "checkout-a")
        await eventually(lambda: _true(follows.subscribers(pod) == 2))
        lines = [f"{i:04d} " + "x" * 16_000 for i in range(200)]
        for line in lines:
            log.write(line + "\n")

        try:
            got = [await _line(reader) for _ in lines]
            assert got == [("checkout-a", line) for line in lines]
            # The stuck one was closed (its subscription gone from the follow), the reader not.
            await eventually(lambda: _true(follows.subscribers(pod) == 1))
            with pytest.raises(ConnectionClosed) as closed:
                while True:
                    await asyncio.wait_for(stuck.recv(), 10)
            assert closed.value.rcvd is not None
            assert closed.value.rcvd.code == 1013
            assert closed.value.rcvd.reason == f"too slow: more than {QUEUE} messages waiting"
            log.write("after\n")
            assert await _line(reader) == ("checkout-a", "after")
        finally:
            await reader.close()
            await stuck.close()
