"""uvicorn's websocket protocol (websockets' sans-I/O one) with Atrium's compression and a way
to close a connection that cannot take what it is sent.

**Compression.** permessage-deflate, as every browser offers it, without context takeover
either way: each message is compressed (and each of the client's decompressed) on its own, its
zlib state made for it and freed after it, so that an idle subscription holds none. uvicorn's
settings keep a compressor for the connection's life (``server_max_window_bits=12``,
``memLevel=5``: some 38 kB a connection, and 7 kB more for the decompressor), which made
compression cost more memory than the rest of a subscription; a 1 kB window and
``memLevel=2``, kept with context takeover, still cost 20 kB (measured by the subscriptions
benchmark: 74 kB a subscription against 54 without compression). The price is the ratio: a
deploy's message of some 330 bytes compresses to some 215 alone, where with the messages before
it in the window it took a few dozen; the window and memory settings now only size what each
message allocates while it is compressed. uvicorn's options cannot set any of this, hence this
class, named by ``atrium.cli.uvicorn_options``.

**Closing a slow consumer.** ``graph.view_ws`` closes a subscription's connection when its client
falls too far behind. uvicorn's own close waits, like every send, until the socket takes
writes again, which a client that reads nothing never lets happen. ``close_now`` (in the
scope's ``extensions`` under ``graph.ws_outbox.CLOSE_NOW``) puts the close frame behind what
is already buffered at once, tells the app the connection is gone, and drops the connection
``ABORT_AFTER`` seconds later if the client has not read its way to the close by then.

**Memory.** An idle subscription's connection is mostly small objects, thousands of them at
once, so what each holds counts: its incoming messages wait in an ``_Inbox`` rather than an
``asyncio.Queue`` (whose three deques and ``Event`` take some 2.5 kB while empty), and its
``writable`` flag is an ``asyncio.Event`` whose waiters are a list (an empty deque is 600
bytes), and the handshake's headers are dropped once it is accepted.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Final

from uvicorn.config import Config
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from uvicorn.server import ServerState
from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory
from websockets.server import ServerProtocol

from graph.ws_outbox import CLOSE_NOW, WRITABLE

__all__ = [
    "ABORT_AFTER",
    "DEFLATE_MEM_LEVEL",
    "DEFLATE_WINDOW_BITS",
    "AtriumWebSocketProtocol",
]

DEFLATE_WINDOW_BITS: Final = 10  # 1 kB, both ways
DEFLATE_MEM_LEVEL: Final = 2
ABORT_AFTER: Final = 5.0


class AtriumWebSocketProtocol(WebSocketsSansIOProtocol):
    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.queue = _Inbox()  # type: ignore[assignment]  # what uvicorn calls of a Queue
        self.writable = _Flag()
        self.writable.set()
        if config.ws_per_message_deflate:
            self.conn = ServerProtocol(
                extensions=[
                    ServerPerMessageDeflateFactory(
                        server_no_context_takeover=True,
                        client_no_context_takeover=True,
                        server_max_window_bits=DEFLATE_WINDOW_BITS,
                        client_max_window_bits=DEFLATE_WINDOW_BITS,
                        compress_settings={"memLevel": DEFLATE_MEM_LEVEL},
                    )
                ],
                max_size=config.ws_max_size,
                logger=self.conn.logger,
            )

    def handle_connect(self, event: Any) -> None:
        super().handle_connect(event)
        scope = getattr(self, "scope", None)  # none when the handshake was refused
        if scope is None:
            return
        extensions: dict[str, Any] = scope["extensions"]
        extensions[CLOSE_NOW] = self.close_now
        extensions[WRITABLE] = self.can_write

    async def send(self, message: Any) -> None:
        await super().send(message)
        if message["type"] == "websocket.accept":
            # The handshake's request and response, kept for nothing from here on. websockets'
            # parser keeps the request too, for the connection's life (a local of its
            # generator): its headers, most of it (some 3 kB), go; the scope has them.
            if self.request is not None:
                self.request.headers.clear()
            self.request = self.response = None  # type: ignore[assignment]

    def can_write(self) -> bool:
        """Whether a send now goes out at once (the socket takes writes)."""
        return self.writable.is_set() and not self.disconnected

    def close_now(self, code: int, reason: str) -> None:
        """Close with ``code`` and ``reason`` without waiting for the socket to take writes."""
        if self.close_sent or self.disconnected or self.transport.is_closing():
            return
        self.queue.put_nowait({"type": "websocket.disconnect", "code": code, "reason": reason})
        self.conn.send_close(code, reason)
        self.transport.write(b"".join(self.conn.data_to_send()))
        self.close_sent = True
        self.stop_keepalive()
        self.close_timer = self.loop.call_later(ABORT_AFTER, self.transport.abort)


class _Inbox:
    """The app's incoming messages: what uvicorn uses of an ``asyncio.Queue`` (unbounded, one
    reader), its deque made by the first message."""

    __slots__ = ("_items", "_waiter")

    def __init__(self) -> None:
        self._items: deque[Any] | None = None
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: Any) -> None:
        if self._items is None:
            self._items = deque()
        self._items.append(item)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def empty(self) -> bool:
        return not self._items

    async def get(self) -> Any:
        while not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.popleft()


class _Flag(asyncio.Event):
    """An ``asyncio.Event`` whose waiters are a list (there is rarely more than one)."""

    def __init__(self) -> None:
        super().__init__()
        self._waiters = []  # type: ignore[assignment]  # append, remove and iteration only
