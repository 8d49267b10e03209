"""The audit log: who did what to which target, when, with what before and after."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sources.db import Executor
from sources.text import spelled_out

__all__ = ["AuditEntry", "audit_entries", "entity_snapshot", "record_audit"]

_INSERT = """
insert into audit_log (actor, action, target_ref, outcome, arguments, before, after, message)
values ($1, $2, $3, $4, $5, $6, $7, $8)
"""
# Keyset-paged, newest first; each filter optional.
_LIST = """
select id, at, actor, action, target_ref, outcome, arguments, before, after, message
from audit_log
where ($1::bigint is null or id < $1)
  and ($2::text is null or target_ref = $2)
  and ($3::text is null or actor = $3)
  and ($4::text is null or action = $4)
order by id desc
limit $5
"""
_SNAPSHOT = """
select ref, kind, namespace, name, title, description, owner_ref, tags, labels, annotations,
       links, spec, origin, managed_by, updated_at
from entities where ref = $1
"""


@dataclass(frozen=True, slots=True)
class AuditEntry:
    id: int
    at: datetime
    actor: str
    action: str
    target_ref: str | None
    outcome: str
    arguments: dict[str, Any]
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    message: str | None


async def record_audit(
    db: Executor,
    *,
    actor: str,
    action: str,
    target_ref: str | None,
    outcome: str,
    arguments: dict[str, Any],
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    message: str | None = None,
) -> None:
    """Keep one attempt. What PostgreSQL cannot store (a NUL sent by a client, say) is kept
    spelled out, so the attempt is recorded whatever it held."""
    await db.execute(
        _INSERT,
        spelled_out(actor),
        spelled_out(action),
        spelled_out(target_ref),
        outcome,
        spelled_out(arguments),
        spelled_out(before),
        spelled_out(after),
        spelled_out(message),
    )


async def audit_entries(
    db: Executor,
    *,
    before_id: int | None,
    target_ref: str | None,
    actor: str | None,
    action: str | None,
    limit: int,
) -> list[AuditEntry]:
    rows = await db.fetch(_LIST, before_id, target_ref, actor, action, limit)
    return [AuditEntry(**dict(row)) for row in rows]


async def entity_snapshot(db: Executor, ref: str) -> dict[str, Any] | None:
    """The entity as stored now, read past every cache: what the audit log keeps."""
    row = await db.fetchrow(_SNAPSHOT, ref)
    if row is None:
        return None
    snapshot = dict(row)
    snapshot["updated_at"] = snapshot["updated_at"].isoformat()
    return snapshot
