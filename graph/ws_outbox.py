"""A subscription connection's outgoing messages, bounded: a slow consumer is closed, never
waited for.

Messages go out at once while the connection takes writes. Once its socket stops taking them
(a client that reads too slowly, or not at all), they wait in the connection's outbox, in order,
written by a task of their own; nothing that produces them waits, so a subscription's shared
upstream (``graph.fanout``) never waits on one subscriber. When more than
``Settings.subscription_queue`` messages wait, or a subscription's own mailbox overflowed
(``SubscriberTooSlow``), the connection is closed with ``TOO_SLOW`` (1013, Try Again Later) and
a reason saying so. graphql-ws (the console's client) connects again after a 1013, and the
subscriptions' catch-up sends what changed meanwhile.

The close goes out at once, behind what is buffered, through the server's ``CLOSE_NOW``
(``atrium.ws_protocol``); a server without it closes the ASGI way, and has every message
written by the outbox's task (it cannot tell whether a send would wait).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import Any, Final

from graph.fanout import TOO_SLOW_PREFIX

__all__ = ["CLOSE_NOW", "TOO_SLOW", "WRITABLE", "Outbox"]

log = logging.getLogger(__name__)

TOO_SLOW: Final = 1013
# The server's scope extensions: close_now(code, reason), and writable() (whether a send
# would go out now rather than wait for the socket).
CLOSE_NOW: Final = "atrium.close_now"
WRITABLE: Final = "atrium.writable"


class Outbox:
    """Mixed into Strawberry's graphql-transport-ws handler, before it."""

    websocket: Any
    outbox_limit: int = 256

    _outbox: deque[Any] | None = None
    _writer: asyncio.Task[None] | None = None
    _closed_too_slow: bool = False

    async def send_message(self, message: Any) -> None:
        if self._closed_too_slow:
            return
        slow = _too_slow(message)
        if slow is not None:
            self.close_too_slow(slow)
            return
        if self._writer is None and self._writable():
            await super().send_message(message)  # type: ignore[misc]
            return
        if self._outbox is None:
            self._outbox = deque()
        if len(self._outbox) >= self.outbox_limit:
            self.close_too_slow(f"too slow: more than {self.outbox_limit} messages waiting")
            return
        self._outbox.append(message)
        if self._writer is None:
            self._writer = asyncio.create_task(self._write(), name="subscription outbox")

    async def _write(self) -> None:
        try:
            while self._outbox and not self._closed_too_slow:
                await super().send_message(self._outbox[0])  # type: ignore[misc]
                if self._outbox:
                    self._outbox.popleft()
        except Exception:  # the connection went away: nothing more to write
            pass
        finally:
            self._writer = None

    def _scope(self) -> dict[str, Any]:
        scope: dict[str, Any] = getattr(getattr(self.websocket, "ws", None), "scope", {})
        return scope

    def _writable(self) -> bool:
        # Without Atrium's protocol every message goes through the task: none waits here.
        writable = self._scope().get("extensions", {}).get(WRITABLE)
        return writable is not None and bool(writable())

    def close_too_slow(self, reason: str) -> None:
        if self._closed_too_slow:
            return
        self._closed_too_slow = True
        if self._outbox is not None:
            self._outbox.clear()
        scope = self._scope()
        client = scope.get("client")
        log.warning(
            "subscription client too slow: closed", extra={"reason": reason, "client": client}
        )
        close_now = scope.get("extensions", {}).get(CLOSE_NOW)
        if close_now is not None:
            close_now(TOO_SLOW, reason)
        else:
            task = asyncio.create_task(self.websocket.close(code=TOO_SLOW, reason=reason))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())

    async def handle_connection_init(self, message: Any) -> None:
        await super().handle_connection_init(message)  # type: ignore[misc]
        # Strawberry's timer sleeps on for its whole delay once the client said hello: a
        # task and a timer per connection, kept for nothing (memory is what a connection
        # costs, here as in the outbox).
        timer = getattr(self, "connection_init_timeout_task", None)
        if getattr(self, "connection_acknowledged", False) and timer is not None:
            timer.cancel()

    async def shutdown(self) -> None:
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
        await super().shutdown()  # type: ignore[misc]


def _too_slow(message: Any) -> str | None:
    """A subscription's queue overflowed (``SubscriberTooSlow``): Strawberry sends it as an
    error result, whose message says so."""
    if message.get("type") != "next":
        return None
    for error in (message.get("payload") or {}).get("errors") or ():
        text = str(error.get("message", ""))
        if text.startswith(TOO_SLOW_PREFIX):
            return text
    return None
