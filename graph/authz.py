"""Authorization declared on fields, with an audit line each: what a viewer may do.

A mutation declares who may run it::

    @strawberry.mutation(extensions=[Authorize(EntityOwner("ref"), "catalog.deleteEntity")])

``Authorize`` asks the rule for the target, decides, writes the audit log (denied attempts
too), and only then runs the resolver. Denied is a GraphQL error with ``extensions.code``
``FORBIDDEN`` (or ``UNAUTHENTICATED`` for nobody), never a 500. Who the viewer is was worked
out before anything ran (``graph.auth``).

The audit line's ``before`` and ``after`` are the rule's picture of the target (an entity's row
for ``EntityOwner``). A plugin's mutation changing a record of its own says what that is with
``Authorize(rule, action, snapshot=hook)``: ``await hook(info, target, arguments)`` gives the
record as JSON values (or None), once allowed and before the resolver runs, and again after.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

import orjson
from strawberry.extensions import FieldExtension
from strawberry.types import Info

from graph.context import Context
from resolvers import ownership
from sources.audit import entity_snapshot, record_audit
from sources.auth import Viewer
from sources.catalog.refs import normalize_ref
from sources.errors import InvalidRef, NotAuthenticated, NotAuthorized

__all__ = [
    "AdminOnly",
    "AuditSnapshot",
    "Authorize",
    "EntityOwner",
    "Rule",
    "Target",
    "is_admin",
    "may_keep_own",
    "require_admin",
]

_MAX_ARGUMENT_CHARS = 4_000


async def is_admin(context: Context) -> bool:
    if context.admin is None:
        context.admin = await ownership.is_admin(
            context.loaders, context.viewer, context.settings.admin_group
        )
    return context.admin


async def require_admin(context: Context, what: str) -> None:
    """For a read that is for admins only (the audit log, change hooks): nobody is told to
    sign in (``UNAUTHENTICATED``), anyone else but an admin is refused (``FORBIDDEN``)."""
    if await is_admin(context):
        return
    if _nobody(context.viewer):
        raise NotAuthenticated(f"{what} needs a signed-in admin or an admin token")
    raise NotAuthorized(f"{what} is for admins only")


def may_keep_own(viewer: Viewer) -> bool:
    """Whether the viewer may change what is a person's own (their stars): a person, signed in
    or a token acting as one, with the right to write. The console shows a star to them only."""
    return (
        viewer.ref is not None
        and viewer.ref.startswith("user:")
        and bool(viewer.scopes & {"write", "admin"})
    )


def _nobody(viewer: Viewer) -> bool:
    """No one: no token, no user (an admin token names no one, and is someone)."""
    return viewer.ref is None and viewer.token_name is None and "admin" not in viewer.scopes


@dataclass(frozen=True, slots=True)
class Target:
    """What a mutation acts on: its ref, for the audit log, who owns it, and how it looks
    now (the audit log's "before")."""

    ref: str | None
    owner_ref: str | None
    exists: bool = True
    state: dict[str, Any] | None = None
    # Owners whose consent is needed too, e.g. the new owner when a change moves the target.
    other_owner_refs: tuple[str, ...] = ()
    # Owners any one of whom consents for all (a namespace's teams); when given, they stand in
    # for ``owner_ref``.
    any_owner_refs: tuple[str, ...] = ()
    # What else the change reaches (a scaler's workload, the namespace it lands in): each is
    # decided as a target of its own, and a refusal is audited under the first refused.
    touches: tuple[Target, ...] = ()
    # Why nobody, admins included, may make the change: it would take over what another owns.
    conflict: str | None = None


# A plugin's picture of what its mutation changes, for the audit log (see the module's docstring):
# given the field's info, the rule's target and the mutation's arguments.
AuditSnapshot: TypeAlias = Callable[
    [Info[Context, None], Target, dict[str, Any]], Awaitable[dict[str, Any] | None]
]


class Rule(Protocol):
    """Finds a mutation's target from its arguments, and pictures it again after the change.

    A rule may set ``owners_only = False``: what its mutations change is the viewer's own (their
    stars), so anyone signed in as a person may make them, whoever owns the target. A rule
    without the attribute is for owners (and admins)."""

    admin_only: bool

    async def target(self, info: Info[Context, None], arguments: dict[str, Any]) -> Target: ...

    async def snapshot(
        self, info: Info[Context, None], target: Target
    ) -> dict[str, Any] | None: ...


class EntityOwner:
    """Owners of the catalog entity named by an argument, and admins."""

    admin_only = False

    def __init__(self, argument: str = "ref") -> None:
        self.argument = argument

    async def target(self, info: Info[Context, None], arguments: dict[str, Any]) -> Target:
        try:
            ref = normalize_ref(str(arguments[self.argument]))
        except InvalidRef:
            return Target(None, None, exists=False)
        snapshot = await entity_snapshot(info.context.db, ref)
        if snapshot is None:
            return Target(ref, None, exists=False)
        return Target(ref, snapshot["owner_ref"], state=snapshot)

    async def snapshot(self, info: Info[Context, None], target: Target) -> dict[str, Any] | None:
        return await entity_snapshot(info.context.db, target.ref) if target.ref else None


class AdminOnly:
    """Admins only: members of the admin group, and admin tokens."""

    admin_only = True

    async def target(self, info: Info[Context, None], arguments: dict[str, Any]) -> Target:
        return Target(None, None)

    async def snapshot(self, info: Info[Context, None], target: Target) -> dict[str, Any] | None:
        return None


class Authorize(FieldExtension):
    """``secrets`` names arguments the audit log must not keep (a webhook's secret): it
    records that they were given, not their values. ``snapshot`` pictures what the mutation
    changes for the audit log's before and after, in place of the rule's target."""

    def __init__(
        self,
        rule: Rule,
        action: str,
        *,
        secrets: tuple[str, ...] = (),
        snapshot: AuditSnapshot | None = None,
    ) -> None:
        super().__init__()
        self.rule = rule
        self.action = action
        self.secrets = secrets
        self.snapshot = snapshot
        # Read once; rules written before the attribute existed are for owners.
        self.owners_only = bool(getattr(rule, "owners_only", True))

    async def resolve_async(
        self, next_: Any, source: Any, info: Info[Context, None], **kwargs: Any
    ) -> Any:
        context = info.context
        viewer = context.viewer
        arguments = _loggable(
            {k: "(secret, not recorded)" if k in self.secrets else v for k, v in kwargs.items()}
        )
        target = Target(None, None)

        async def audit(outcome: str, ref: str | None = None, **extra: Any) -> None:
            await record_audit(
                context.db,
                actor=viewer.actor,
                action=self.action,
                target_ref=ref or target.ref,
                outcome=outcome,
                arguments=arguments,
                **extra,
            )

        try:
            target = await self.rule.target(info, kwargs)
        except Exception as exc:  # a target that cannot be worked out: bad input, usually
            if _nobody(viewer):  # who may change nothing hears that first, not why the input is bad
                refusal = self._unauthenticated()
                await audit("denied", message=str(refusal))
                raise refusal from None
            await audit("failed", message=str(exc)[:1000])
            raise

        denial = await self._denial(context, target)
        if denial is not None:
            refused, error = denial
            await audit("denied", refused.ref, message=str(error))
            raise error
        hook = self.snapshot
        before = target.state if hook is None else await hook(info, target, kwargs)
        try:
            result = await next_(source, info, **kwargs)
        except Exception as exc:
            await audit("failed", before=before, message=str(exc)[:1000])
            raise
        after = (
            await self.rule.snapshot(info, target)
            if hook is None
            else await hook(info, target, kwargs)
        )
        await audit("allowed", before=before, after=after)
        return result

    async def _denial(
        self, context: Context, target: Target
    ) -> tuple[Target, NotAuthorized] | None:
        """Why the viewer may not change ``target`` (or what it touches), and which of them
        refused; None when they may."""
        viewer = context.viewer
        if _nobody(viewer):
            return target, self._unauthenticated()
        if viewer.ref is None and "admin" not in viewer.scopes:
            # A token's holder is known: what it may not do is a matter of its scope.
            if not self.owners_only:
                return _refusal(target, self._personal_denial(viewer))
            if "write" not in viewer.scopes:
                return target, NotAuthorized(f"{self.action} needs a token with the write scope")
            return target, NotAuthorized(
                f"{self.action} needs a token acting as a user or group (--subject), or an "
                "admin token"
            )
        if not self.owners_only:
            return _refusal(target, self._personal_denial(viewer))
        reached = (target, *target.touches)
        for touched in reached:
            if touched.conflict is not None:
                return touched, NotAuthorized(f"{self.action} {target.ref}: {touched.conflict}")
        if await is_admin(context):
            return None
        if self.rule.admin_only:
            return target, NotAuthorized(f"{self.action} is for admins only")
        if "write" not in viewer.scopes:
            return target, NotAuthorized(f"{self.action} needs a token with the write scope")
        if not target.exists:
            return target, NotAuthorized(
                f"{self.action}: {target.ref or 'the target'} does not exist"
            )
        for touched in reached:
            refused = await self._owners_refuse(context, touched)
            if refused is not None:
                return touched, refused
        return None

    async def _owners_refuse(self, context: Context, target: Target) -> NotAuthorized | None:
        """Whether the owners of ``target`` refuse the viewer: each one named must consent, or,
        for ``any_owner_refs``, one of them."""
        viewer = context.viewer
        if target.any_owner_refs:
            for one in target.any_owner_refs:
                if await ownership.may_change(context.loaders, viewer, one):
                    break
            else:
                return NotAuthorized(
                    f"{viewer.ref} may not {self.action} in {target.ref}: it belongs to "
                    f"{', '.join(target.any_owner_refs)}, and only their members and admins "
                    "may change what is in it"
                )
            owners: tuple[str | None, ...] = target.other_owner_refs
        else:
            owners = (target.owner_ref, *target.other_owner_refs)
        for owner_ref in owners:
            if not await ownership.may_change(context.loaders, viewer, owner_ref):
                return NotAuthorized(
                    f"{viewer.ref} may not {self.action} {target.ref}: it is owned by "
                    f"{owner_ref or 'nobody'}, and only its owners' members and admins may "
                    "change it"
                )
        return None

    def _unauthenticated(self) -> NotAuthenticated:
        return NotAuthenticated(f"{self.action} needs a signed-in user or an API token")

    def _personal_denial(self, viewer: Viewer) -> NotAuthorized | None:
        """What the viewer changes is theirs: it takes a person (a user, or a token acting as
        one) and the right to write."""
        if may_keep_own(viewer):
            return None
        if viewer.ref is None or not viewer.ref.startswith("user:"):
            return NotAuthorized(f"{self.action} is a person's own: it needs a signed-in user")
        return NotAuthorized(f"{self.action} needs a token with the write scope")


def _refusal(target: Target, error: NotAuthorized | None) -> tuple[Target, NotAuthorized] | None:
    return None if error is None else (target, error)


def _loggable(arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments as JSON the audit log can keep: long values cut, odd types as text."""
    text = orjson.dumps(arguments, default=lambda v: getattr(v, "__dict__", None) or str(v))
    value: dict[str, Any] = orjson.loads(text)
    for key, item in value.items():
        if isinstance(item, str) and len(item) > _MAX_ARGUMENT_CHARS:
            value[key] = item[:_MAX_ARGUMENT_CHARS] + f"... ({len(item)} characters)"
    return value
