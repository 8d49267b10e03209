"""A DataLoader that answers what the in-process cache holds at once.

Loaders are built per request, so the first ``load`` of a key in a request would otherwise
wait for a batch: a task dispatched on the next turn of the loop, then the cache's own
``load_many``, then the futures' callbacks. A key the in-process cache (L1) holds needs none
of that. ``CacheFirstLoader.load`` asks ``peek`` first and, when it knows the value, returns
a future already done: a resolver awaiting it goes on without giving up the loop. Keys it
does not know are batched as usual, L2 and the source behind them. ``known`` goes one step
further, for resolvers that can answer without awaiting at all: the value itself, no future.
"""

from __future__ import annotations

from asyncio import Future, gather
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

from strawberry.dataloader import AbstractCache, DataLoader

from loaders.memory import MISSING

__all__ = ["CacheFirstLoader"]

K = TypeVar("K")
T = TypeVar("T")


class CacheFirstLoader(DataLoader[K, T], Generic[K, T]):
    """``peek(key)`` returns the value the in-process cache holds for ``key``, or ``MISSING``;
    it must do what the batch would for that key besides fetching (count the hit, tag the
    request)."""

    def __init__(
        self,
        load_fn: Callable[[list[K]], Awaitable[Sequence[T | BaseException]]],
        peek: Callable[[K], Any],
    ) -> None:
        super().__init__(load_fn=load_fn, cache_map=_Futures())
        self.peek = peek
        self._futures: dict[Any, Future[T]] = self.cache_map.futures  # type: ignore[attr-defined]
        self._known: dict[Any, T] = self.cache_map.known  # type: ignore[attr-defined]

    def load(self, key: K) -> Awaitable[T]:
        future = self._futures.get(key)
        if future is not None and not future.cancelled():
            return future
        value: Any = self._known.get(key, MISSING)
        if value is MISSING:
            value = self.peek(key)
            if value is MISSING:
                return super().load(key)
        future = self.loop.create_future()
        future.set_result(value)
        self._futures[key] = future
        return future

    def known(self, key: K) -> Any:
        """The value ``load(key)`` would give at once, without a future: what this request
        already has, or what the in-process cache holds (then the request keeps it, so that
        it reads the same value again); ``MISSING`` when it has to be fetched."""
        future = self._futures.get(key)
        if future is not None:
            if future.done() and not future.cancelled() and future.exception() is None:
                return future.result()
            return MISSING
        value = self._known.get(key, MISSING)
        if value is not MISSING:
            return value
        value = self.peek(key)
        if value is not MISSING:
            self._known[key] = value
        return value

    def known_many(self, keys: Iterable[K]) -> list[T] | Any:
        """``known`` of every key, or ``MISSING`` if any has to be fetched."""
        values = []
        for key in keys:
            value = self.known(key)
            if value is MISSING:
                return MISSING
            values.append(value)
        return values

    def load_many(self, keys: Iterable[K]) -> Awaitable[list[T]]:
        futures = [self.load(key) for key in keys]
        for future in futures:
            # Anything not yet there (or failed) is gathered as DataLoader gathers it.
            if (
                not isinstance(future, Future)
                or not future.done()
                or future.cancelled()
                or future.exception() is not None
            ):
                return gather(*futures)
        done: Future[list[T]] = self.loop.create_future()
        done.set_result([future.result() for future in futures])  # type: ignore[attr-defined]
        return done


class _Futures(AbstractCache[Any, Any]):
    """The request's futures by key, the key itself the dict's key (DataLoader's default
    cache calls a key function on every lookup), and the values it took without a future
    (``known``): ``clear`` and ``prime`` see both."""

    __slots__ = ("futures", "known")

    def __init__(self) -> None:
        self.futures: dict[Any, Future[Any]] = {}
        self.known: dict[Any, Any] = {}

    def get(self, key: Any) -> Future[Any] | None:
        found = self.futures.get(key)
        if found is None and key in self.known:
            found = Future()
            found.set_result(self.known[key])
        return found

    def set(self, key: Any, value: Future[Any]) -> None:
        self.known.pop(key, None)
        self.futures[key] = value

    def delete(self, key: Any) -> None:
        if self.known.pop(key, MISSING) is MISSING or key in self.futures:
            del self.futures[key]

    def clear(self) -> None:
        self.futures.clear()
        self.known.clear()
