"""Servers on an event loop of their own, for tests: ``LoopThread``.

pytest-asyncio runs a test's event loop only while an async test or fixture awaits. Between
tests, through a synchronous test, and whenever a test blocks (``subprocess.run``, a long
computation between two awaits), a server on that loop answers nothing. A client in the same
loop never notices (it is not running either), but one in another process or thread does: an
``atrium serve`` subprocess whose informer watches an emulated cluster, a browser, a replica
delivering change events to a receiver the test runs. They see time-outs, back off, and the test
that comes next fails by chance. A server such a client talks to belongs on a loop of its own:

    with LoopThread("cluster east") as loop:
        async with loop.enter(start_cluster("east")) as east:   # served on that loop
            await loop.run(east.put(...))                        # a coroutine run there
            objects = loop.call(lambda: list(east.objects))      # state read there

A thread still shares the test process's interpreter lock: a server that answers much, or must
answer within a client's time-out on a busy machine, belongs in a process of its own (Atrium's
own tests run their emulated clusters and change-event receiver so).

The loop runs on a daemon thread until ``close``. A context manager entered with ``enter`` is
entered and left by one task on that loop, so that what it starts (servers, sessions, tasks)
belongs to the loop that keeps running. Objects made on the loop (asyncio events, queues,
sessions) must be used there: through ``run`` (a coroutine), ``call`` (a function, waiting for
its result) or ``call_soon`` (without waiting).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Any, Self, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")

# How long `close` waits for what is still running on the loop to notice it is cancelled.
_CLOSE_WITHIN = 10.0


class LoopThread:
    """An asyncio event loop running on a daemon thread of its own until ``close``."""

    def __init__(self, name: str = "atrium-test-loop") -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # --- Life. ---------------------------------------------------------------------------------

    def start(self) -> Self:
        """Start the loop's thread; returns once the loop runs."""
        if self._thread is not None:
            raise RuntimeError(f"{self.name}: already started")
        running = threading.Event()
        loop = asyncio.new_event_loop()

        def main() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(running.set)
            try:
                loop.run_forever()
            finally:
                _cancel_all(loop)
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=main, name=self.name, daemon=True)
        self._thread.start()
        running.wait()
        return self

    def close(self) -> None:
        """Stop the loop (what still runs on it is cancelled first) and join its thread."""
        if self._loop is None or self._thread is None:
            return
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(_CLOSE_WITHIN)
        self._loop = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise RuntimeError(f"{self.name}: not started")
        return self._loop

    @property
    def on_loop(self) -> bool:
        """Whether the caller runs on this loop's thread."""
        return self._thread is not None and threading.current_thread() is self._thread

    # --- Work on the loop. ---------------------------------------------------------------------

    async def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on this loop and await its result from the caller's loop; the
        caller's cancellation cancels it there."""
        if self.on_loop:
            return await coroutine
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return await asyncio.wrap_future(future)

    def run_sync(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coroutine`` on this loop and block the calling thread (one with no running
        loop of its own: a synchronous test or fixture) until its result."""
        if self.on_loop:
            coroutine.close()
            raise RuntimeError(f"{self.name}: run_sync on the loop's own thread would deadlock")
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def call(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` on the loop's thread, between two of its callbacks; its result
        (or exception). For state the loop owns: it never changes halfway through a read."""
        if self.on_loop:
            return function(*args)
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        def call() -> None:
            try:
                done.set_result(function(*args))
            except BaseException as exc:  # handed to the caller, whatever it is
                done.set_exception(exc)

        self.loop.call_soon_threadsafe(call)
        return done.result()

    def call_soon(self, function: Callable[..., object], *args: Any) -> None:
        """``function(*args)`` on the loop's thread, without waiting for it."""
        self.loop.call_soon_threadsafe(function, *args)

    # --- Context managers held on the loop. ----------------------------------------------------

    @asynccontextmanager
    async def enter(self, manager: AbstractAsyncContextManager[T]) -> AsyncIterator[T]:
        """Enter ``manager`` on this loop, by one task that holds it until the block ends and
        then leaves it there; an error on leaving is raised here."""
        entered: concurrent.futures.Future[tuple[T, asyncio.Event]] = concurrent.futures.Future()
        holding = asyncio.run_coroutine_threadsafe(self._hold(manager, entered), self.loop)
        try:
            value, leave = await asyncio.wrap_future(entered)
        except BaseException:
            holding.cancel()
            raise
        try:
            yield value
        finally:
            self.call_soon(leave.set)
            await asyncio.wrap_future(holding)

    @contextmanager
    def enter_sync(self, manager: AbstractAsyncContextManager[T]) -> Iterator[T]:
        """``enter`` for a thread with no running loop of its own (a synchronous fixture)."""
        entered: concurrent.futures.Future[tuple[T, asyncio.Event]] = concurrent.futures.Future()
        holding = asyncio.run_coroutine_threadsafe(self._hold(manager, entered), self.loop)
        try:
            value, leave = entered.result()
        except BaseException:
            holding.cancel()
            raise
        try:
            yield value
        finally:
            self.call_soon(leave.set)
            holding.result()

    @staticmethod
    async def _hold(
        manager: AbstractAsyncContextManager[T],
        entered: concurrent.futures.Future[tuple[T, asyncio.Event]],
    ) -> None:
        leave = asyncio.Event()  # set from the caller's thread, through call_soon
        try:
            value = await manager.__aenter__()
        except BaseException as exc:
            entered.set_exception(exc)
            return
        entered.set_result((value, leave))
        async with _left(manager):
            await leave.wait()


@asynccontextmanager
async def _left(manager: AbstractAsyncContextManager[Any]) -> AsyncIterator[None]:
    """Leaves ``manager`` (already entered) when the block ends, as ``async with`` would."""
    try:
        yield
    except BaseException as exc:
        if not await manager.__aexit__(type(exc), exc, exc.__traceback__):
            raise
    else:
        await manager.__aexit__(None, None, None)


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what still runs on ``loop`` and let it finish, as ``asyncio.run`` does."""
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
