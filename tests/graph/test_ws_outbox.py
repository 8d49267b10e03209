"""The subscription connection's outbox without a server: a subscription whose own queue
overflowed closes its connection with 1013, as a full outbox does."""

from __future__ import annotations

from typing import Any

import pytest

from graph.fanout import Mailbox, SubscriberTooSlow
from graph.ws_outbox import CLOSE_NOW, TOO_SLOW, WRITABLE, Outbox


class _Sent:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    async def send_message(self, message: Any) -> None:
        self.sent.append(message)


class _Handler(Outbox, _Sent):
    outbox_limit = 2

    def __init__(self) -> None:
        super().__init__()
        self.closed: list[tuple[int, str]] = []
        scope = {
            "extensions": {
                CLOSE_NOW: lambda code, reason: self.closed.append((code, reason)),
                WRITABLE: lambda: True,
            }
        }
        self.websocket = type("Adapter", (), {"ws": type("WebSocket", (), {"scope": scope})})()


async def test_an_overflowed_mailbox_closes_the_connection_with_1013() -> None:
    box: Mailbox[int] = Mailbox(2)
    assert box.put(1) and box.put(2)
    assert not box.put(3)  # refused: the fan-out drops this subscriber
    with pytest.raises(SubscriberTooSlow) as slow:
        await anext(box)
    handler = _Handler()
    await handler.send_message({"id": "1", "type": "next", "payload": {"data": {"x": 1}}})
    # What Strawberry makes of the error: an error result naming it.
    result = {"data": None, "errors": [{"message": str(slow.value)}]}
    await handler.send_message({"id": "1", "type": "next", "payload": result})
    await handler.send_message({"id": "1", "type": "complete"})
    assert handler.closed == [(TOO_SLOW, "too slow: more than 2 items were waiting")]
    assert handler.sent == [{"id": "1", "type": "next", "payload": {"data": {"x": 1}}}]
