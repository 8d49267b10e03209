"""The database pool: stopping it."""

from __future__ import annotations

import asyncio
import logging

import asyncpg
import pytest

from sources.db import Database, DatabaseOptions
from sources.errors import DatabaseUnavailable


async def test_closing_waits_for_work_in_hand_then_gives_up_on_it(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    db = await Database.connect(database_url, min_size=1, max_size=2)
    # A statement that finishes soon is waited for ...
    quick = asyncio.create_task(db.fetchval("select 1 from pg_sleep(0.2)"))
    await asyncio.sleep(0.05)
    # ... and one that would outlast the grace is dropped: stopping does not wait for it.
    stuck = asyncio.create_task(db.fetchval("select 1 from pg_sleep(600)"))
    await asyncio.sleep(0.05)
    with caplog.at_level(logging.WARNING, logger="sources.db"):
        # The bound only catches a close that never returns; the grace is what is tested.
        await asyncio.wait_for(db.close(grace=1.0), timeout=60)
    assert await quick == 1
    with pytest.raises(DatabaseUnavailable):
        await asyncio.wait_for(stuck, timeout=60)
    assert db.pool.is_closing()
    assert "still busy" in caplog.text


async def test_a_statement_past_its_timeout_is_the_database_not_answering(
    database_url: str,
) -> None:
    """The server cancels it (statement_timeout, sent at start-up): a 503 for the request, and
    the connection goes on serving."""
    options = DatabaseOptions(statement_timeout=0.2)
    db = await Database.connect(database_url, options, min_size=1, max_size=1)
    try:
        with pytest.raises(DatabaseUnavailable, match="statement timeout"):
            await db.fetchval("select pg_sleep(5)")
        assert await db.fetchval("select 1") == 1
    finally:
        await db.close()


@pytest.mark.parametrize("when", ["as-it-begins", "in-a-statement", "as-it-rolls-back"])
async def test_a_transaction_cut_short_leaves_nothing_open(
    database_url: str, when: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopping cancels a task inside a transaction: while its BEGIN is on the wire, while a
    statement of the transaction is, or again while its ROLLBACK is. The connection is not
    handed back mid-transaction (asyncpg reports that as an error, and the lock it held would
    stay with the next user), and the pool goes on serving."""
    db = await Database.connect(database_url, min_size=1, max_size=1)
    reported: list[str] = []
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: reported.append(context["message"]))
    working = asyncio.Event()
    if when == "as-it-begins":
        # BEGIN answers slowly enough to be cancelled on the wire, as a busy server's does.
        execute = asyncpg.Connection.execute

        async def slow_begin(self: asyncpg.Connection, query: str, *args: object) -> str:
            if query.startswith("BEGIN"):
                working.set()
                await asyncio.sleep(30)
            return await execute(self, query, *args)

        monkeypatch.setattr(asyncpg.Connection, "execute", slow_begin)

    async def work_under_the_lock() -> None:
        async with db.transaction() as tx:
            assert await tx.fetchval("select pg_try_advisory_xact_lock(4242)")
            working.set()
            if when == "in-a-statement":
                await tx.execute("select pg_sleep(30)")
            else:
                await asyncio.Event().wait()

    try:
        task = asyncio.create_task(work_under_the_lock())
        await working.wait()  # set just before the statement or BEGIN it is in went out
        task.cancel()
        if when == "as-it-rolls-back":
            await asyncio.sleep(0)  # the task runs into its ROLLBACK and waits for the answer
            task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, timeout=60)
        monkeypatch.undo()
        # The pool's one connection serves again, and the lock is free for the next holder.
        async with db.try_lock(4242) as held:
            assert held
        assert await db.fetchval("select 1") == 1
    finally:
        loop.set_exception_handler(previous)
        await db.close()
    assert reported == []
