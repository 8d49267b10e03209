"""The database pool: stopping it."""

from __future__ import annotations

import asyncio
import logging

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
