"""Subscriptions in process: ``GraphQLWebSocket``, one graphql-transport-ws connection to an
app over its ASGI interface (a websocket scope and two queues; no server, no network), as
``AtriumClient.websocket()`` opens it.

It connects from 127.0.0.1, the test app's trusted proxy, so the user header and API tokens
name the viewer as they do over HTTP. Messages are taken as soon as the app sends them, as a
socket always ready for writes would: none waits in the connection's outbox.

``settle`` is for many subscriptions sent at once: it waits until each has ended or the
connection has gone quiet, never a fixed time per operation. How the connection ended is kept
in ``closed`` (None while it is open): a close the app sent, what the app raised (1011, as a
server answers a crash), or the client's own close on leaving (1000); and errors Strawberry
logged from operations' tasks while it was open in ``task_errors``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["Closed", "GraphQLWebSocket", "WebSocketClosed"]

PROTOCOL: Final = "graphql-transport-ws"
# What the app answered a crash with, as servers close a websocket on one.
SERVER_ERROR: Final = 1011
_ENDING: Final = frozenset({"error", "complete"})
# Strawberry logs here what escaped an operation's task (the operation then just completes).
_TASK_LOGGER: Final = "strawberry.ws.task"


@dataclass(frozen=True, slots=True)
class Closed:
    """How a connection ended: the close code and reason the app sent (1011 when it raised;
    ``error`` is then what it raised)."""

    code: int
    reason: str
    error: BaseException | None = None


class WebSocketClosed(AssertionError):
    """The app closed the connection while a message was awaited."""

    def __init__(self, closed: Closed) -> None:
        self.closed = closed
        super().__init__(f"the websocket was closed: {closed.code} {closed.reason}")


class _TaskErrors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.found: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[1] if record.exc_info else None
        self.found.append(f"{record.getMessage()}: {error!r}" if error else record.getMessage())


class GraphQLWebSocket:
    """A graphql-transport-ws connection to ``app``, opened by ``async with``: the handshake,
    ``connection_init`` and its ``connection_ack`` are done on entry, the connection closed
    (1000) and the app's handler awaited on exit."""

    def __init__(
        self,
        app: Any,
        headers: Mapping[str, str] | None = None,
        *,
        path: str = "/graphql",
        payload: Mapping[str, Any] | None = None,
        timeout: float = 10.0,
    ) -> None:
        self.app = app
        self.headers = dict(headers or {})
        self.path = path
        self.payload = dict(payload or {})
        self.timeout = timeout
        self.closed: Closed | None = None
        self.messages: dict[str, list[dict[str, Any]]] = {}  # by subscription id
        self.ended: set[str] = set()  # ids that had their error or complete
        self.task_errors: list[str] = []
        self._incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._unread: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._arrived = asyncio.Event()
        self._last_arrival = time.monotonic()
        self._accepted = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._logged = _TaskErrors()

    def _scope(self) -> dict[str, Any]:
        from graph.ws_outbox import WRITABLE

        headers = {
            "host": "atrium.test",
            "connection": "upgrade",
            "upgrade": "websocket",
            "sec-websocket-version": "13",
            "sec-websocket-key": "YXRyaXVtLXRlc3Qta2V5IQ==",
            "sec-websocket-protocol": PROTOCOL,
            **{name.lower(): value for name, value in self.headers.items()},
        }
        return {
            "type": "websocket",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "scheme": "ws",
            "server": ("atrium.test", 80),
            "client": ("127.0.0.1", 50_000),
            "root_path": "",
            "path": self.path,
            "raw_path": self.path.encode(),
            "query_string": b"",
            "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
            "subprotocols": [PROTOCOL],
            # Every send is taken at once (Atrium's own server says so of a socket that takes
            # writes): graph.ws_outbox then writes each message as it comes.
            "extensions": {WRITABLE: lambda: True},
            "state": {},
        }

    async def _receive(self) -> dict[str, Any]:
        return await self._incoming.get()

    async def _send(self, message: Mapping[str, Any]) -> None:
        kind = message["type"]
        if kind == "websocket.accept":
            self._accepted.set()
        elif kind == "websocket.send":
            text = message.get("text")
            if text is None:
                text = bytes(message.get("bytes") or b"").decode("utf-8", "replace")
            self._arrive(json.loads(text))
        elif kind == "websocket.close":
            self._close(Closed(int(message.get("code", 1000)), str(message.get("reason") or "")))

    def _arrive(self, message: dict[str, Any]) -> None:
        found = message.get("id")
        if isinstance(found, str):
            self.messages.setdefault(found, []).append(message)
            if message.get("type") in _ENDING:
                self.ended.add(found)
        self._unread.put_nowait(message)
        self._last_arrival = time.monotonic()
        self._arrived.set()

    def _close(self, closed: Closed) -> None:
        if self.closed is None:
            self.closed = closed
            # The app's next receive learns that the connection is gone.
            self._incoming.put_nowait({"type": "websocket.disconnect", "code": closed.code})
        self._accepted.set()
        self._arrived.set()

    async def _run(self) -> None:
        try:
            await self.app(self._scope(), self._receive, self._send)
        except Exception as exc:
            self._close(Closed(SERVER_ERROR, f"the app raised {exc!r}", exc))
        else:
            if self.closed is None and not self._accepted.is_set():
                self._close(Closed(SERVER_ERROR, "the app neither accepted nor closed"))

    async def __aenter__(self) -> GraphQLWebSocket:
        logging.getLogger(_TASK_LOGGER).addHandler(self._logged)
        self._task = asyncio.create_task(self._run(), name="in-process websocket")
        self._incoming.put_nowait({"type": "websocket.connect"})
        try:
            async with asyncio.timeout(self.timeout):
                await self._accepted.wait()
            self._raise_if_closed()
            await self.send({"type": "connection_init", "payload": self.payload})
            ack = await self.receive()
        except BaseException:
            await self.aclose()
            raise
        if ack.get("type") != "connection_ack":
            await self.aclose()
            raise AssertionError(f"expected connection_ack, got {ack}")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection as a client does (1000) and wait for the app's handler."""
        if self.closed is None:
            self._close(Closed(1000, "closed by the client"))
        if self._task is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.timeout):
                    await asyncio.shield(self._task)
            if not self._task.done():
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
        logging.getLogger(_TASK_LOGGER).removeHandler(self._logged)
        self.task_errors = self._logged.found

    def _raise_if_closed(self) -> None:
        if self.closed is not None:
            raise WebSocketClosed(self.closed)

    async def send(self, message: Mapping[str, Any]) -> None:
        """Send a protocol message as JSON text."""
        self._raise_if_closed()
        self._incoming.put_nowait({"type": "websocket.receive", "text": json.dumps(message)})

    async def subscribe(
        self,
        id: str,
        query: str,
        variables: Mapping[str, Any] | None = None,
        *,
        operation_name: str | None = None,
        extensions: Mapping[str, Any] | None = None,
    ) -> None:
        """Start an operation (a subscription, or a query or mutation over the websocket)."""
        payload: dict[str, Any] = {"query": query}
        if variables is not None:
            payload["variables"] = dict(variables)
        if operation_name is not None:
            payload["operationName"] = operation_name
        if extensions is not None:
            payload["extensions"] = dict(extensions)
        await self.send({"id": id, "type": "subscribe", "payload": payload})

    async def complete(self, id: str) -> None:
        """Stop an operation, as a client leaving it does."""
        await self.send({"id": id, "type": "complete"})

    async def receive(self, within: float | None = None) -> dict[str, Any]:
        """The next message the app sent (of any operation) not read yet; WebSocketClosed
        once the app closed and every message was read, TimeoutError after ``within``
        seconds (default: the connection's ``timeout``) without one."""
        async with asyncio.timeout(self.timeout if within is None else within):
            while self._unread.empty():
                self._raise_if_closed()
                self._arrived.clear()
                await self._arrived.wait()
            return self._unread.get_nowait()

    async def settle(
        self, ids: Iterable[str], *, quiet: float = 1.0, within: float = 60.0
    ) -> dict[str, list[dict[str, Any]]]:
        """The messages of each of ``ids`` once every one of them has ended (its ``error``
        or ``complete``), or nothing has arrived for ``quiet`` seconds (subscriptions that
        wait for events stay open), or the app closed the connection, or ``within`` seconds
        passed. Messages read by ``receive`` are included."""
        wanted = list(ids)
        deadline = time.monotonic() + within
        self._last_arrival = max(self._last_arrival, time.monotonic())
        while self.closed is None and not all(i in self.ended for i in wanted):
            now = time.monotonic()
            wait = min(self._last_arrival + quiet, deadline) - now
            if wait <= 0:
                break
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    await self._arrived.wait()
        return {i: list(self.messages.get(i, ())) for i in wanted}
