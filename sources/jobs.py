"""Scheduled jobs run once per interval across replicas: a lease per job in PostgreSQL.

Every replica runs every job's loop; before each run it claims the job, one statement that
succeeds for one replica while the last claim is at least most of an interval old (by the
database's clock, which all replicas share). Nothing is held between statements (no advisory
lock, no transaction), so it works as well through PgBouncer in transaction mode, and a
replica that dies in the middle of a run holds the job up for one interval at most.
"""

from __future__ import annotations

from typing import Final

from sources.db import Executor

__all__ = ["LEASE_SHARE", "claim_run"]

# A claim needs the last one to be this share of the interval old, not all of it: a replica
# that ran the job sleeps an interval by its own clock before asking again, and must not find
# its lease a few milliseconds short (it would skip an interval when it runs alone).
LEASE_SHARE: Final = 0.9

_CLAIM: Final = """
insert into job_leases as lease (job, claimed_at, claimed_by) values ($1, now(), $3)
on conflict (job) do update
    set claimed_at = excluded.claimed_at, claimed_by = excluded.claimed_by, runs = lease.runs + 1
    where lease.claimed_at <= excluded.claimed_at - make_interval(secs => $2)
returning job
"""


async def claim_run(db: Executor, job: str, interval: float, holder: str) -> bool:
    """True when this replica (``holder``) is the one to run ``job`` now."""
    claimed = await db.fetchval(_CLAIM, job, interval * LEASE_SHARE, holder)
    return claimed is not None
