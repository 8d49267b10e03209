"""The test kit's ``LoopThread``: a server on it answers another process while the test's own
loop stands still (a server on the test's loop does not), and work handed to it runs there,
with results, errors and cancellation carried back."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiohttp import web

from atrium.testing import LoopThread

# Another process asks the server once, waiting at most a second: "answered" or "silent".
ASK = """
import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=1).read().decode())
except OSError:
    print("silent")
"""


@asynccontextmanager
async def hello_server() -> AsyncIterator[str]:
    """An aiohttp server on the running loop answering "answered"; its URL."""

    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="answered")

    app = web.Application()
    app.router.add_get("/", hello)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        await runner.cleanup()


def ask_while_blocked(url: str) -> str:
    """What another process gets from ``url`` while this thread blocks in ``subprocess.run``
    (the caller's event loop, if any, runs nothing meanwhile)."""
    done = subprocess.run(
        [sys.executable, "-c", ASK, url], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


async def test_a_server_on_its_own_loop_answers_while_the_tests_loop_stands_still() -> None:
    with LoopThread("hello") as thread:
        async with thread.enter(hello_server()) as url:
            assert ask_while_blocked(url) == "answered"
    # The same server on the test's own loop: silent while the loop stands still.
    async with hello_server() as url:
        assert ask_while_blocked(url) == "silent"


def test_a_synchronous_test_holds_a_server_on_a_loop_of_its_own() -> None:
    with LoopThread("hello") as thread, thread.enter_sync(hello_server()) as url:
        assert ask_while_blocked(url) == "answered"
        assert thread.run_sync(asyncio.sleep(0, "ran")) == "ran"
    with pytest.raises(RuntimeError, match="not started"):
        thread.call(len, [])


async def test_work_runs_on_the_loop_and_its_results_and_errors_come_back() -> None:
    with LoopThread("work") as thread:

        async def where() -> tuple[str, bool]:
            return threading.current_thread().name, thread.on_loop

        assert await thread.run(where()) == ("work", True)
        assert not thread.on_loop
        assert thread.call(lambda: threading.current_thread().name) == "work"

        async def fails() -> None:
            raise KeyError("from the loop")

        with pytest.raises(KeyError, match="from the loop"):
            await thread.run(fails())
        with pytest.raises(ZeroDivisionError):
            thread.call(lambda: 1 / 0)
        # On its own thread, call runs at once and run_sync refuses rather than deadlock.
        assert await thread.run(asyncio.sleep(0, thread.call(lambda: thread.on_loop)))

        async def nested() -> str:
            try:
                thread.run_sync(asyncio.sleep(0))
            except RuntimeError as exc:
                return str(exc)
            return "ran"

        assert "deadlock" in await thread.run(nested())


async def test_cancelling_the_caller_cancels_the_work_on_the_loop() -> None:
    with LoopThread("work") as thread:
        started, cancelled = threading.Event(), threading.Event()

        async def forever() -> None:
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        waiting = asyncio.create_task(thread.run(forever()))
        await asyncio.to_thread(started.wait, 10)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert await asyncio.to_thread(cancelled.wait, 10)


async def test_a_manager_is_entered_and_left_by_one_task_on_the_loop() -> None:
    seen: list[tuple[str, asyncio.Task[object] | None, bool]] = []

    @asynccontextmanager
    async def held(fail_on_leaving: bool) -> AsyncIterator[str]:
        seen.append(("entered", asyncio.current_task(), thread.on_loop))
        yield "value"
        seen.append(("left", asyncio.current_task(), thread.on_loop))
        if fail_on_leaving:
            raise OSError("on leaving")

    with LoopThread("held") as thread:
        async with thread.enter(held(False)) as value:
            assert value == "value" and [event for event, *_ in seen] == ["entered"]
        (_, entering, on_loop_in), (_, leaving, on_loop_out) = seen
        assert entering is leaving and on_loop_in and on_loop_out
        with pytest.raises(OSError, match="on leaving"):
            async with thread.enter(held(True)):
                pass

        @asynccontextmanager
        async def refuses() -> AsyncIterator[None]:
            raise PermissionError("on entering")
            yield

        with pytest.raises(PermissionError, match="on entering"):
            async with thread.enter(refuses()):
                raise AssertionError("never entered")


async def test_closing_cancels_what_still_runs_on_the_loop() -> None:
    thread = LoopThread("left").start()
    cancelled = threading.Event()

    async def forgotten() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    thread.call(lambda: asyncio.ensure_future(forgotten()))
    thread.close()
    assert cancelled.is_set()
    thread.close()  # again: nothing to do
