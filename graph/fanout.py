"""Shared upstreams for subscriptions: many subscribers to one key, one upstream.

A subscription many people follow at once (a component's deploys, a pod's log) would read the
same source once per subscriber: a change listener and a database read each for one deploy,
one follow of a pod's log each. ``Fanout`` keeps one upstream per key, made by the first
subscriber and stopped when the last one leaves. The upstream publishes each item once and
every subscriber's sink takes it; a joining subscriber is first given the upstream's
``backlog`` (what it kept of its recent items).

Nothing the upstream publishes waits for a subscriber. A sink that refuses an item (``False``:
its bounded queue is full) is dropped from the fan-out and the others go on. ``Mailbox`` is the
usual sink: a bounded queue read with ``async for``, which raises ``SubscriberTooSlow`` once it
overflowed, so that the subscription ends and its connection is closed (``graph.view_ws``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Callable, Hashable, Iterable
from typing import Final, Generic, Protocol, TypeVar

__all__ = ["TOO_SLOW_PREFIX", "Fanout", "Mailbox", "Sink", "SubscriberTooSlow", "Upstream"]

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

# How a SubscriberTooSlow's message begins: Strawberry hands a subscription's error to its
# client as an error result, and the connection's outbox closes the connection on seeing it.
TOO_SLOW_PREFIX: Final = "too slow: "

Sink = Callable[[T], bool]  # takes an item; False when it cannot (then it is dropped)


class SubscriberTooSlow(Exception):
    """A subscriber left more items waiting than its queue holds."""


class Upstream(Protocol[T]):  # type: ignore[misc]  # T only comes out (covariant); one T serves all
    async def run(self, publish: Callable[[T], None]) -> None:
        """Publish items until cancelled (returning ends every subscription)."""

    def backlog(self) -> Iterable[T]:
        """What a subscriber joining now is given first."""


class _Hub(Generic[T]):
    __slots__ = ("ended", "sinks", "task", "upstream")

    def __init__(self, upstream: Upstream[T]) -> None:
        self.upstream = upstream
        self.sinks: list[Sink[T]] = []
        self.ended: dict[Sink[T], Callable[[], None]] = {}
        self.task: asyncio.Task[None] | None = None


class Fanout(Generic[K, T]):
    """One upstream per key, made by ``start(key)`` for the first subscriber."""

    def __init__(self, start: Callable[[K], Upstream[T]], *, name: str) -> None:
        self._start = start
        self._name = name
        self._hubs: dict[K, _Hub[T]] = {}
        self.started = 0  # upstreams made so far (what tests count)

    def upstreams(self) -> int:
        return len(self._hubs)

    def upstream(self, key: K) -> Upstream[T] | None:
        """The key's upstream while someone subscribes to it."""
        hub = self._hubs.get(key)
        return hub.upstream if hub is not None else None

    def subscribers(self, key: K) -> int:
        hub = self._hubs.get(key)
        return len(hub.sinks) if hub is not None else 0

    @contextlib.asynccontextmanager
    async def subscribe(
        self,
        key: K,
        sink: Sink[T],
        ended: Callable[[], None] | None = None,
        *,
        start: Callable[[], Upstream[T]] | None = None,
    ) -> AsyncIterator[None]:
        """``sink`` takes the key's items from here on (its upstream's backlog first);
        ``ended`` is called should the upstream stop. The first subscriber's ``start``, when
        given, makes the upstream instead of the fan-out's own."""
        hub = self._hubs.get(key)
        if hub is None:
            # Made here, not in its task: an upstream listening from its constructor on misses
            # nothing the subscriber reads next.
            hub = self._hubs[key] = _Hub(start() if start is not None else self._start(key))
            self.started += 1
            hub.task = asyncio.create_task(self._run(key, hub), name=f"{self._name} {key}")
        for item in hub.upstream.backlog():
            if not sink(item):
                break
        hub.sinks.append(sink)
        if ended is not None:
            hub.ended[sink] = ended
        try:
            yield
        finally:
            with contextlib.suppress(ValueError):
                hub.sinks.remove(sink)
            hub.ended.pop(sink, None)
            if not hub.sinks and self._hubs.get(key) is hub:
                del self._hubs[key]
                if hub.task is not None:
                    hub.task.cancel()

    async def _run(self, key: K, hub: _Hub[T]) -> None:
        def publish(item: T) -> None:
            refused = [sink for sink in hub.sinks if not sink(item)]
            for sink in refused:
                hub.sinks.remove(sink)
                hub.ended.pop(sink, None)

        try:
            await hub.upstream.run(publish)
        finally:
            if self._hubs.get(key) is hub:
                del self._hubs[key]
            for ended in hub.ended.values():
                ended()


class Mailbox(Generic[T]):
    """A subscriber's bounded queue: ``put`` is its sink, ``async for`` reads it."""

    __slots__ = ("_ended", "_items", "_limit", "_overflowed", "_waiter")

    def __init__(self, limit: int) -> None:
        self._items: deque[T] = deque()
        self._limit = limit
        self._waiter: asyncio.Future[None] | None = None
        self._overflowed = False
        self._ended = False

    def put(self, item: T) -> bool:
        if len(self._items) >= self._limit:
            self._overflowed = True
            self._items.clear()  # what it would never read goes now
            self._wake()
            return False
        self._items.append(item)
        self._wake()
        return True

    def end(self) -> None:
        """No more items will come (the upstream stopped)."""
        self._ended = True
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def __aiter__(self) -> Mailbox[T]:
        return self

    async def __anext__(self) -> T:
        while not self._items:
            if self._overflowed:
                raise SubscriberTooSlow(
                    f"{TOO_SLOW_PREFIX}more than {self._limit} items were waiting"
                )
            if self._ended:
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._items.popleft()

    def __len__(self) -> int:
        return len(self._items)
