"""A scheduled job is claimed by one replica per interval (sources.jobs)."""

from __future__ import annotations

import asyncio

from sources.db import Database
from sources.jobs import LEASE_SHARE, claim_run


async def test_one_replica_claims_a_round_and_the_next_round_comes_an_interval_later(
    db: Database,
) -> None:
    interval = 0.3
    holders = [f"replica-{n}:1" for n in range(3)]
    first = await asyncio.gather(*(claim_run(db, "test.job", interval, h) for h in holders))
    assert sorted(first) == [False, False, True]  # three replicas at once: one runs it
    assert not await claim_run(db, "test.job", interval, holders[0])  # nor again at once
    assert await claim_run(db, "other.job", interval, holders[0])  # each job its own lease
    await asyncio.sleep(interval * LEASE_SHARE)
    second = await asyncio.gather(*(claim_run(db, "test.job", interval, h) for h in holders))
    assert sorted(second) == [False, False, True]
    row = await db.fetchrow("select claimed_by, runs from job_leases where job = 'test.job'")
    assert row is not None and row["runs"] == 2
    assert row["claimed_by"] == holders[second.index(True)]
