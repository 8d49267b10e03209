"""Root fields of change events: the hooks, for admins only, every change audited (the
secret given to ``createChangeHook`` is not kept in the audit log)."""

from __future__ import annotations

import strawberry

from graph.authz import AdminOnly, Authorize, require_admin
from graph.changes.types import ChangeHook
from graph.context import Context, Info
from graph.plugin import UserError
from resolvers import changes as resolve
from sources.changes.delivery import Deliverer
from sources.changes.hooks import ChangeHook as StoredHook
from sources.errors import ChangeHookError

__all__ = ["PLUGIN_ID", "ChangeHookMutation", "ChangeHookQuery"]

PLUGIN_ID = "changes"


def _hook_id(value: strawberry.ID) -> int:
    text = str(value)
    if not text.isdigit() or len(text) > 18:
        raise ChangeHookError(f"id: {text[:40]!r} is not a change hook's id")
    return int(text)


def _found(hook: StoredHook | None, value: strawberry.ID) -> ChangeHook:
    if hook is None:
        raise UserError(f"no change hook has the id {str(value)[:40]!r}", "NOT_FOUND")
    return ChangeHook.of(hook)


def _deliverer(context: Context) -> Deliverer:
    deliverer: Deliverer = context.extras[PLUGIN_ID]
    return deliverer


@strawberry.type
class ChangeHookQuery:
    @strawberry.field(
        description="The webhooks change events go to, with how delivery is going. Admins only."
    )
    async def change_hooks(self, info: Info) -> list[ChangeHook]:
        await require_admin(info.context, "change hooks")
        return [ChangeHook.of(hook) for hook in await resolve.change_hooks(info.context.db)]

    @strawberry.field(description="One change hook by id. Admins only.")
    async def change_hook(self, info: Info, id: strawberry.ID) -> ChangeHook | None:
        await require_admin(info.context, "change hooks")
        hook = await resolve.change_hook(info.context.db, _hook_id(id))
        return ChangeHook.of(hook) if hook is not None else None


@strawberry.type
class ChangeHookMutation:
    @strawberry.mutation(
        description="Register a webhook: every change to an entity (of `kinds`, or of every "
        "kind) committed from now on is POSTed to `url` as JSON, signed with `secret` "
        "(X-Atrium-Signature-256: sha256=<HMAC-SHA256 of the body>), at least once and in "
        "order per ref. The URL must reach a public address unless "
        "ATRIUM_CHANGE_HOOKS_ALLOWED_NETWORKS allows it; the secret (16 characters or more) "
        "is kept sealed and never shown again. Admins only; audited without the secret.",
        extensions=[Authorize(AdminOnly(), "changes.createChangeHook", secrets=("secret",))],
    )
    async def create_change_hook(
        self, info: Info, url: str, secret: str, kinds: list[str] | None = None
    ) -> ChangeHook:
        context = info.context
        settings = context.settings
        hook = await resolve.create_change_hook(
            context.db,
            _deliverer(context).box,
            url=url,
            secret=secret,
            kinds=kinds,
            created_by=context.viewer.actor,
            allowed=settings.change_hooks_allowed_networks,
            resolve_within=settings.change_hooks_timeout,
            production=settings.production,
        )
        return ChangeHook.of(hook)

    @strawberry.mutation(
        description="Stop delivering to a hook; changes keep being recorded for it. Admins "
        "only; audited.",
        extensions=[Authorize(AdminOnly(), "changes.pauseChangeHook")],
    )
    async def pause_change_hook(self, info: Info, id: strawberry.ID) -> ChangeHook:
        return _found(await resolve.pause_change_hook(info.context.db, _hook_id(id), True), id)

    @strawberry.mutation(
        description="Deliver to a paused hook again, what waited first. Admins only; audited.",
        extensions=[Authorize(AdminOnly(), "changes.resumeChangeHook")],
    )
    async def resume_change_hook(self, info: Info, id: strawberry.ID) -> ChangeHook:
        return _found(await resolve.pause_change_hook(info.context.db, _hook_id(id), False), id)

    @strawberry.mutation(
        description="Send again the deliveries a hook gave up on (failedDeliveries), in order, "
        "retried afresh. Admins only; audited.",
        extensions=[Authorize(AdminOnly(), "changes.redeliverChangeHook")],
    )
    async def redeliver_change_hook(self, info: Info, id: strawberry.ID) -> ChangeHook:
        return _found(await resolve.redeliver_change_hook(info.context.db, _hook_id(id)), id)

    @strawberry.mutation(
        description="Delete a hook and what it had yet to deliver; false when there was no "
        "such hook. Admins only; audited.",
        extensions=[Authorize(AdminOnly(), "changes.deleteChangeHook")],
    )
    async def delete_change_hook(self, info: Info, id: strawberry.ID) -> bool:
        return await resolve.delete_change_hook(info.context.db, _hook_id(id))
