"""permessage-deflate as a browser offers it, answered without context takeover and with
Atrium's window (``atrium.ws_protocol``), through the server ``atrium serve`` runs."""

from __future__ import annotations

import asyncio

import orjson
import uvicorn
from websockets.asyncio.client import connect
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
from websockets.typing import Subprotocol

from atrium.cli import uvicorn_options
from atrium.ws_protocol import DEFLATE_WINDOW_BITS
from tests.conftest import AppFactory
from tests.plugins.deploy_env import eventually, free_port


async def _started(server: uvicorn.Server) -> bool:
    return bool(server.started)


async def test_a_browsers_offer_gets_the_small_window(make_client: AppFactory) -> None:
    client = await make_client()
    port = free_port()
    config = uvicorn.Config(
        client.app, host="127.0.0.1", port=port, lifespan="off", **uvicorn_options()
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        await eventually(lambda: _started(server))
        # Chromium's offer: `permessage-deflate; client_max_window_bits`.
        offer = ClientPerMessageDeflateFactory(client_max_window_bits=True)
        async with connect(
            f"ws://127.0.0.1:{port}/graphql",
            subprotocols=[Subprotocol("graphql-transport-ws")],
            extensions=[offer],
            compression=None,
        ) as ws:
            assert ws.response is not None
            assert ws.response.headers["Sec-WebSocket-Extensions"] == (
                "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
                f"server_max_window_bits={DEFLATE_WINDOW_BITS}; "
                f"client_max_window_bits={DEFLATE_WINDOW_BITS}"
            )
            await ws.send(orjson.dumps({"type": "connection_init"}).decode())
            assert orjson.loads(await ws.recv()) == {"type": "connection_ack"}
            await ws.send(orjson.dumps({"type": "ping"}).decode())
            assert orjson.loads(await ws.recv()) == {"type": "pong"}
    finally:
        server.should_exit = True
        await task
