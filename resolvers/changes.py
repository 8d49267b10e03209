"""Change hooks: registering one (its URL, secret and kinds checked first), listing, pausing,
resuming, deleting, and sending again what was given up on. Who may is the fields' business
(admins); what is checked here holds for anyone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from sources.catalog.refs import canonical_kind
from sources.changes import hooks
from sources.changes.hooks import ChangeHook
from sources.changes.secrets import SecretBox
from sources.changes.targets import IPNetwork, resolve_target
from sources.db import Database
from sources.errors import ChangeHookError, InvalidRef

__all__ = [
    "SECRET_MIN",
    "change_hook",
    "change_hooks",
    "create_change_hook",
    "delete_change_hook",
    "pause_change_hook",
    "redeliver_change_hook",
]

SECRET_MIN: Final = 16
SECRET_MAX: Final = 1000


async def create_change_hook(
    db: Database,
    box: SecretBox,
    *,
    url: str,
    secret: str,
    kinds: list[str] | None,
    created_by: str,
    allowed: Sequence[IPNetwork],
    resolve_within: float,
    production: bool,
) -> ChangeHook:
    if production and not box.sealing:
        raise ChangeHookError(
            "ATRIUM_CHANGE_HOOKS_KEY is not set: production keeps hook secrets sealed, and "
            "has no key to seal this one with"
        )
    if not SECRET_MIN <= len(secret) <= SECRET_MAX or secret != secret.strip():
        raise ChangeHookError(
            f"secret: {SECRET_MIN} to {SECRET_MAX} characters without surrounding spaces (a "
            "long random value: receivers verify signatures with it)"
        )
    target = await resolve_target(url, allowed, resolve_within)
    hook_id = await hooks.create_hook(
        db,
        box,
        url=target.url,
        secret=secret,
        kinds=_kinds(kinds),
        created_by=created_by,
    )
    found = await hooks.get_hook(db, hook_id)
    assert found is not None
    return found


def _kinds(kinds: list[str] | None) -> list[str] | None:
    if kinds is None:
        return None
    if not kinds:
        raise ChangeHookError("kinds: name at least one kind, or leave kinds out for all")
    try:
        return sorted({canonical_kind(kind) for kind in kinds})
    except InvalidRef as exc:
        raise ChangeHookError(f"kinds: {exc}") from None


async def change_hooks(db: Database) -> list[ChangeHook]:
    return await hooks.list_hooks(db)


async def change_hook(db: Database, hook_id: int) -> ChangeHook | None:
    return await hooks.get_hook(db, hook_id)


async def pause_change_hook(db: Database, hook_id: int, paused: bool) -> ChangeHook | None:
    if not await hooks.set_paused(db, hook_id, paused):
        return None
    return await hooks.get_hook(db, hook_id)


async def delete_change_hook(db: Database, hook_id: int) -> bool:
    return await hooks.delete_hook(db, hook_id)


async def redeliver_change_hook(db: Database, hook_id: int) -> ChangeHook | None:
    if not await hooks.redeliver(db, hook_id):
        return None
    return await hooks.get_hook(db, hook_id)
