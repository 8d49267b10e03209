"""``Component.onCall`` and the ``overrideOnCall`` mutation."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any

from graph.plugin import (
    Authorize,
    EntityOwner,
    EntityParent,
    Info,
    InvalidRef,
    Parent,
    Target,
    User,
    UserError,
    announce_changes,
    change_key,
    entity,
    entity_owner,
    normalize_ref,
    strawberry,
)

from atrium_oncall.rotations import Rotations, now
from atrium_oncall.settings import OnCallSettings
from atrium_oncall.store import Override, save_override
from atrium_oncall.types import ONCALL_CACHE, OnCall

__all__ = ["PLUGIN_ID", "ComponentOnCall", "OnCallMutation", "OnCallState", "on_call_of"]

PLUGIN_ID = "oncall"
MAX_REASON = 500


@dataclass(frozen=True, slots=True)
class OnCallState:
    """What the plugin's lifespan holds for its resolvers (``info.context.extras["oncall"]``)."""

    settings: OnCallSettings
    rotations: Rotations


def _state(info: Info) -> OnCallState:
    state: OnCallState = info.context.extras[PLUGIN_ID]
    return state


def _rotations(info: Info) -> Rotations:
    rotations = _state(info).rotations
    # Once a request: the file is looked at (its time and size) and read again if it changed.
    if PLUGIN_ID not in info.context.state:
        info.context.state[PLUGIN_ID] = True
        rotations.refresh()
    return rotations


async def on_call_of(info: Info, ref: str, saved: Override | None = None) -> OnCall | None:
    """Who is on call for the component ``ref`` now; None when no rotation covers its owner.
    Batched: the owner from the request's catalog loader, the override from ``oncall.overrides``
    (or ``saved``, one just stored)."""
    # Announced by overrideOnCall: an answer with this component's on-call is dropped then.
    info.context.depends_on(change_key(PLUGIN_ID, ref))
    rotation = _rotations(info).of_team(await entity_owner(info.context, ref))
    if rotation is None:
        return None
    override: Override | None = saved or await info.context.loaders["oncall.overrides"].load(ref)
    moment = now()
    current = rotation.at(moment)
    until = override.until if override is not None else current.until
    # No answer outlives the hand-over it shows.
    info.context.cache_hint(max_age=max(0.0, min(60.0, (until - moment).total_seconds())))
    return OnCall(component_ref=ref, now=current, override_row=override)


@strawberry.type
class ComponentOnCall:
    @strawberry.field(
        description="Who is on call for it now (its owner's rotation, or an override); null "
        "when no rotation covers its owner.",
        directives=[ONCALL_CACHE],
    )
    async def on_call(self, parent: Parent[EntityParent], info: Info) -> OnCall | None:
        return await on_call_of(info, parent.ref)


async def _override_record(
    info: Info, target: Target, arguments: dict[str, Any]
) -> dict[str, Any] | None:
    """What overrideOnCall changes, for the audit log: the component's override in force."""
    if target.ref is None:
        return None
    rows = await info.context.db.fetch(
        "select component_ref, primary_ref, until, reason, created_by, created_at"
        " from oncall_overrides where component_ref = $1 and until > now()",
        target.ref,
    )
    return Override(**dict(rows[0])).to_json() if rows else None


@strawberry.type
class OnCallMutation:
    @strawberry.mutation(
        description="Put someone on call for a component in place of its rotation's primary "
        "until a time (at most oncall_max_override_days ahead); a later override replaces it. "
        "For the component's owners and admins; audited.",
        extensions=[
            Authorize(EntityOwner("component"), "oncall.override", snapshot=_override_record)
        ],
    )
    async def override_on_call(
        self,
        info: Info,
        component: Annotated[
            str, strawberry.argument(description="The component's ref: component:default/checkout.")
        ],
        primary: Annotated[
            str, strawberry.argument(description="Who is paged first: a user ref or name.")
        ],
        until: Annotated[
            datetime, strawberry.argument(description="When the rotation takes over again.")
        ],
        reason: Annotated[
            str | None, strawberry.argument(description="Why, for the team and the audit log.")
        ] = None,
    ) -> OnCall:
        try:
            ref = normalize_ref(component, default_kind="component")
        except InvalidRef as exc:
            raise UserError(f"component: {exc}") from None
        if not ref.startswith("component:"):
            raise UserError(f"{component} is not a component")
        try:
            primary_ref = normalize_ref(primary, default_kind="user")
        except InvalidRef as exc:
            raise UserError(f"primary: {exc}") from None
        if not isinstance(await entity(info, primary_ref), User):
            raise UserError(f"primary: no user {primary_ref} in the catalog", "NOT_FOUND")
        if until.tzinfo is None:
            raise UserError("until: give a time zone (2026-01-05T09:00:00Z)")
        moment = now()
        days = _state(info).settings.oncall_max_override_days
        if not moment < until <= moment + timedelta(days=days):
            raise UserError(f"until: a time in the next {days} days")
        if reason is not None and len(reason) > MAX_REASON:
            raise UserError(f"reason: at most {MAX_REASON} characters")
        if _rotations(info).of_team(await entity_owner(info.context, ref)) is None:
            raise UserError(f"no rotation covers {ref}'s owner", "FAILED_PRECONDITION")
        saved = await save_override(
            info.context.db, ref, primary_ref, until, reason or None, info.context.viewer.actor
        )
        await announce_changes(info.context, [change_key(PLUGIN_ID, ref)])
        found = await on_call_of(info, ref, saved)
        if found is None:
            raise UserError(f"no rotation covers {ref}'s owner", "FAILED_PRECONDITION")
        return found
