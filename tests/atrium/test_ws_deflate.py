"""permessage-deflate as a browser offers it, answered without context takeover and with
Atrium's window (``atrium.ws_protocol``), through the server ``atrium serve`` runs."""

from __future__ import annotations

import orjson
from websockets.asyncio.client import connect
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
from websockets.typing import Subprotocol

from atrium.cli import uvicorn_options
from atrium.ws_protocol import DEFLATE_WINDOW_BITS
from tests.conftest import AppFactory
from tests.plugins.deploy_env import serving


async def test_a_browsers_offer_gets_the_small_window(make_client: AppFactory) -> None:
    client = await make_client()
    async with serving(client, **uvicorn_options()) as base:
        # Chromium's offer: `permessage-deflate; client_max_window_bits`.
        offer = ClientPerMessageDeflateFactory(client_max_window_bits=True)
        async with connect(
            f"{base.replace('http', 'ws', 1)}/graphql",
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
