"""Recorded directory sync runs, for GraphQL and /metrics."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sources.db import Executor

__all__ = ["SyncRun", "run_metrics", "sync_runs"]


@dataclass(frozen=True, slots=True)
class SyncRun:
    id: int
    started_at: datetime
    finished_at: datetime | None
    outcome: str
    forced: bool
    users_read: int
    groups_read: int
    added: int
    changed: int
    removed: int
    skipped: int
    skipped_records: list[dict[str, str]]
    warnings: list[str]
    error: str | None


_RUNS = "select * from ldap_sync_runs order by id desc limit $1"
_BY_OUTCOME = "select outcome, count(*) as n from ldap_sync_runs group by outcome"
_LAST = """
select extract(epoch from finished_at) as finished,
       extract(epoch from finished_at - started_at) as duration,
       outcome, added, changed, removed, skipped
from ldap_sync_runs where finished_at is not null order by id desc limit 1
"""
_LAST_SUCCESS = """
select extract(epoch from max(finished_at)) from ldap_sync_runs where outcome = 'succeeded'
"""


async def sync_runs(db: Executor, limit: int) -> list[SyncRun]:
    return [SyncRun(**dict(row)) for row in await db.fetch(_RUNS, limit)]


async def run_metrics(db: Executor) -> dict[str, Any]:
    """Figures every replica reports alike, since they come from the database."""
    by_outcome = {r["outcome"]: r["n"] for r in await db.fetch(_BY_OUTCOME)}
    last = await db.fetchrow(_LAST)
    success = await db.fetchval(_LAST_SUCCESS)
    return {"by_outcome": by_outcome, "last": dict(last) if last else None, "last_success": success}
