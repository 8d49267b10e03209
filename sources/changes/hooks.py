"""Change hooks as stored: registering, listing with their delivery state, pausing, deleting,
and sending again what was given up on.

A hook receives the changes committed after it was registered (the outbox triggers fan each
change out to the hooks there are when it is written). Its secret is kept sealed
(``sources.changes.secrets``) and never read back here: only the deliverer opens it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final

from sources.changes.secrets import SecretBox
from sources.db import Database, Executor
from sources.errors import ChangeHookError

__all__ = [
    "MAX_HOOKS",
    "ChangeHook",
    "create_hook",
    "delete_hook",
    "get_hook",
    "list_hooks",
    "redeliver",
    "set_paused",
]

# Every change is written once per hook in the transaction that makes it: the number of hooks
# multiplies what a big import writes, so it is bounded.
MAX_HOOKS: Final = 50


@dataclass(frozen=True, slots=True)
class ChangeHook:
    id: int
    url: str
    kinds: list[str] | None
    paused: bool
    created_by: str
    created_at: datetime
    failures: int  # consecutive claims of which the receiver took nothing
    retry_at: datetime | None
    last_delivered_at: datetime | None
    last_error: str | None
    last_error_at: datetime | None
    pending: int  # deliveries waiting (or being retried)
    failed: int  # deliveries given up on, waiting for ``redeliver``

    @property
    def failing(self) -> bool:
        return self.failures > 0 or self.failed > 0


_COLUMNS: Final = """
h.id, h.url, h.kinds, h.paused, h.created_by, h.created_at, h.failures, h.retry_at,
h.last_delivered_at, h.last_error, h.last_error_at,
(select count(*) from change_deliveries d where d.hook_id = h.id and d.state = 'pending')
    as pending,
(select count(*) from change_deliveries d where d.hook_id = h.id and d.state = 'failed')
    as failed
"""
_LIST: Final = f"select {_COLUMNS} from change_hooks h order by h.id"
_ONE: Final = f"select {_COLUMNS} from change_hooks h where h.id = $1"
_COUNT: Final = "select count(*) from change_hooks"
_INSERT: Final = """
insert into change_hooks (url, secret, secret_sealed, kinds, created_by)
values ($1, $2, $3, $4, $5) returning id
"""
# Resuming restarts the retry clock: time spent paused does not count towards giving up.
_PAUSE: Final = "update change_hooks set paused = $2 where id = $1 returning id"
_RESTART_CLOCK: Final = """
update change_deliveries set retry_from = now() where hook_id = $1 and state = 'pending'
"""
_DELETE: Final = "delete from change_hooks where id = $1 returning id"
# In the order of the changes: each ref's first failed delivery is again its head.
_REDELIVER: Final = """
update change_deliveries set
    state = 'pending', attempts = 0, retry_from = now(), next_attempt_at = now()
where hook_id = $1 and state = 'failed'
"""
_RESET_HOOK: Final = """
update change_hooks set failures = 0, retry_at = null where id = $1 returning id
"""


async def create_hook(
    db: Database,
    box: SecretBox,
    *,
    url: str,
    secret: str,
    kinds: list[str] | None,
    created_by: str,
) -> int:
    """Store a hook whose URL and kinds were checked; its secret sealed. Returns its id."""
    stored, sealed = box.seal(secret, url)
    async with db.transaction() as tx:
        # Registrations are rare: serialise them so that two at once cannot pass the bound.
        await tx.execute("lock table change_hooks in share row exclusive mode")
        if await tx.fetchval(_COUNT) >= MAX_HOOKS:
            raise ChangeHookError(f"at most {MAX_HOOKS} change hooks; delete one first")
        return int(await tx.fetchval(_INSERT, url, stored, sealed, kinds, created_by))


async def list_hooks(db: Executor) -> list[ChangeHook]:
    return [ChangeHook(**dict(row)) for row in await db.fetch(_LIST)]


async def get_hook(db: Executor, hook_id: int) -> ChangeHook | None:
    row = await db.fetchrow(_ONE, hook_id)
    return ChangeHook(**dict(row)) if row is not None else None


async def set_paused(db: Database, hook_id: int, paused: bool) -> bool:
    """Pause or resume; False when there is no such hook."""
    async with db.transaction() as tx:
        if await tx.fetchval(_PAUSE, hook_id, paused) is None:
            return False
        if not paused:
            await tx.execute(_RESTART_CLOCK, hook_id)
        return True


async def delete_hook(db: Executor, hook_id: int) -> bool:
    """Delete a hook and what it had still to deliver; False when there was no such hook."""
    return await db.fetchval(_DELETE, hook_id) is not None


async def redeliver(db: Database, hook_id: int) -> bool:
    """Send the deliveries given up on again, from the first, with a fresh retry period."""
    async with db.transaction() as tx:
        if await tx.fetchval(_RESET_HOOK, hook_id) is None:
            return False
        await tx.execute(_REDELIVER, hook_id)
        return True
