"""The outbox's side of delivery: which hooks have work, claiming a batch, recording outcomes.

Each step is one short statement in a transaction of its own, and none is open while a request
is out, so this works as well through PgBouncer in transaction mode (no session state, no
LISTEN: replicas look for work every ``ATRIUM_CHANGE_HOOKS_INTERVAL``).

- **One replica at a time.** A claim locks the rows it takes ``for update skip locked`` and
  stamps them with a claim id and a lease (``claimed_until``), then commits: other replicas skip
  them while the claim runs, and see them claimed after. A replica that dies while delivering
  leaves its rows claimed until the lease runs out; then another claims them again.
- **In order per hook and ref.** Only a ref's oldest row of a hook (its head) can be claimed,
  and a delivered row is deleted: the next change of that ref waits until the receiver took the
  one before. A failed row (given up on) stays, and keeps its ref's later changes waiting until
  it is re-delivered.
- **Retries** back off exponentially per delivery (``base * 2^(attempts-1)``, capped, with
  jitter) and per hook: a claim of which the receiver took nothing makes the hook wait as long,
  and then it is probed with one delivery instead of being sent the backlog. Past
  ``retry_for`` since a delivery's change (or its last redelivery), a failure gives it up with
  the later changes of its ref (they could only follow it), and when the hook took nothing,
  every delivery of it that waited as long too.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sources.db import Database, Executor

__all__ = ["Backoff", "Claimed", "HookDue", "Outcome", "claim", "due_hooks", "record"]


@dataclass(frozen=True, slots=True)
class Backoff:
    base: float  # seconds before the first retry
    cap: float  # the longest wait between two attempts
    retry_for: float  # seconds after which a failure gives a delivery up


@dataclass(frozen=True, slots=True)
class HookDue:
    id: int
    url: str
    secret: bytes
    secret_sealed: bool
    failures: int


@dataclass(frozen=True, slots=True)
class Claimed:
    id: int
    event_id: uuid.UUID
    delivery_id: uuid.UUID
    type: str
    ref: str
    occurred_at: datetime
    entity: dict[str, Any] | None
    previous: dict[str, Any] | None
    attempts: int


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of a claim: ``failures`` is the hook's count after it, None when the hook
    was deleted meanwhile."""

    delivered: int
    failed: int
    given_up: int
    failures: int | None


_WAITING: Final = """
d.state = 'pending' and d.next_attempt_at <= now()
and (d.claimed_until is null or d.claimed_until < now())
"""
_DUE_HOOKS: Final = f"""
select h.id, h.url, h.secret, h.secret_sealed, h.failures from change_hooks h
where not h.paused and (h.retry_at is null or h.retry_at <= now())
  and exists (select 1 from change_deliveries d where d.hook_id = h.id and {_WAITING})
order by h.id
"""
_CLAIM: Final = f"""
with due as (
    select d.id from change_deliveries d
    where d.hook_id = $1 and {_WAITING}
      and not exists (
          select 1 from change_deliveries e
          where e.hook_id = d.hook_id and e.ref = d.ref and e.id < d.id
      )
      and exists (
          select 1 from change_hooks h
          where h.id = $1 and not h.paused and (h.retry_at is null or h.retry_at <= now())
      )
    order by d.id
    limit $2
    for update of d skip locked
)
update change_deliveries d
set claim = $3, claimed_until = now() + make_interval(secs => $4), attempts = d.attempts + 1
from due where d.id = due.id
returning d.id, d.event_id, d.delivery_id, d.type, d.ref, d.occurred_at, d.entity, d.previous,
          d.attempts
"""
# $1 claim, $2 ids, $3 errors (null: delivered), $4 ids never sent (the lease was running out),
# $5 backoff base, $6 cap, $7 retry_for, $8 hook, $9 the batch's first error, $10 what the
# later changes of a ref given up on say. A ref's later changes are given up with it: they could
# only be sent after it.
_RECORD: Final = """
with outcome as (
    select * from unnest($2::bigint[], $3::text[]) as o(id, error)
), delivered as (
    delete from change_deliveries d using outcome o
    where d.id = o.id and d.claim = $1 and o.error is null
    returning d.id
), failed as (
    update change_deliveries d set
        claim = null, claimed_until = null, last_error = o.error,
        next_attempt_at = now() + make_interval(secs =>
            least($6::float8, $5::float8 * power(2, least(d.attempts - 1, 40)))
            * (0.5 + random() / 2)),
        state = case when now() - d.retry_from >= make_interval(secs => $7::float8)
                     then 'failed' else 'pending' end
    from outcome o
    where d.id = o.id and d.claim = $1 and o.error is not null
    returning d.id, d.ref, d.state
), behind as (
    update change_deliveries d set state = 'failed', last_error = $10
    from failed f
    where f.state = 'failed' and d.hook_id = $8 and d.ref = f.ref and d.id > f.id
      and d.state = 'pending'
), unsent as (
    update change_deliveries d set claim = null, claimed_until = null, attempts = d.attempts - 1
    where d.id = any($4::bigint[]) and d.claim = $1
), counts as (
    select (select count(*) from delivered) as delivered,
           (select count(*) from failed) as failed,
           (select count(*) from failed where state = 'failed') as given_up
)
update change_hooks h set
    last_delivered_at = case when c.delivered > 0 then now() else h.last_delivered_at end,
    failures = case when c.delivered > 0 then 0
                    when c.failed > 0 then h.failures + 1 else h.failures end,
    retry_at = case when c.delivered > 0 then null
                    when c.failed > 0 then now() + make_interval(secs =>
                        least($6::float8, $5::float8 * power(2, least(h.failures, 40)))
                        * (0.5 + random() / 2))
                    else h.retry_at end,
    last_error = coalesce($9, h.last_error),
    last_error_at = case when $9::text is null then h.last_error_at else now() end
from counts c
where h.id = $8
returning c.delivered, c.failed, c.given_up, h.failures
"""
# What waited retry_for, and the later changes of the same refs.
_GIVE_UP_BACKLOG: Final = """
update change_deliveries d set state = 'failed', last_error = coalesce(d.last_error, $3)
where d.hook_id = $1 and d.state = 'pending'
  and (d.claimed_until is null or d.claimed_until < now())
  and exists (
      select 1 from change_deliveries e
      where e.hook_id = d.hook_id and e.ref = d.ref and e.id <= d.id
        and (e.state = 'failed'
             or e.retry_from <= now() - make_interval(secs => $2::float8))
  )
"""
_BEHIND: Final = "not sent: an earlier change of its ref was given up"


async def due_hooks(db: Executor) -> list[HookDue]:
    """Hooks not paused nor waiting out a backoff, with deliveries waiting."""
    return [HookDue(**dict(row)) for row in await db.fetch(_DUE_HOOKS)]


async def claim(
    db: Database, hook_id: int, limit: int, claim_id: uuid.UUID, lease: float
) -> list[Claimed]:
    """Claim up to ``limit`` heads of the hook's refs for ``lease`` seconds, oldest first."""
    async with db.transaction() as tx:
        rows = await tx.fetch(_CLAIM, hook_id, limit, claim_id, lease)
    return sorted((Claimed(**dict(row)) for row in rows), key=lambda c: c.id)


async def record(
    db: Database,
    hook_id: int,
    claim_id: uuid.UUID,
    errors: dict[int, str | None],
    unsent: list[int],
    backoff: Backoff,
) -> Outcome:
    """Record what the receiver did with each claimed delivery (``errors``: None when it
    took it), and release those never sent. Rows claimed again by another replica after the
    lease ran out are theirs now, and left alone."""
    ids = list(errors)
    first_error = next((e for e in errors.values() if e is not None), None)
    async with db.transaction() as tx:
        row = await tx.fetchrow(
            _RECORD,
            claim_id,
            ids,
            [errors[i] for i in ids],
            unsent,
            backoff.base,
            backoff.cap,
            backoff.retry_for,
            hook_id,
            first_error,
            _BEHIND,
        )
        if row is None:
            return Outcome(0, 0, 0, None)
        if row["delivered"] == 0 and row["given_up"] > 0:
            # The receiver took nothing for retry_for: what waited as long is given up too.
            await tx.execute(_GIVE_UP_BACKLOG, hook_id, backoff.retry_for, first_error)
        return Outcome(row["delivered"], row["failed"], row["given_up"], row["failures"])
