"""Authentication of requests, and authorization declared on fields, with an audit line each.

A mutation declares who may run it::

    @strawberry.mutation(extensions=[Authorize(EntityOwner("ref"), "catalog.deleteEntity")])

``Authorize`` asks the rule for the target, decides, writes the audit log (denied attempts
too), and only then runs the resolver. Denied is a GraphQL error with ``extensions.code``
``FORBIDDEN`` (or ``UNAUTHENTICATED`` for nobody), never a 500.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from dataclasses import dataclass
from ipaddress import ip_address
from typing import Any, Protocol
from urllib.parse import unquote

import orjson
from starlette.requests import HTTPConnection
from strawberry.extensions import FieldExtension
from strawberry.types import Info

from graph.context import Context
from graph.identity import Identity, SessionCache
from graph.settings import Settings
from resolvers import ownership
from sources.audit import entity_snapshot, record_audit
from sources.auth import Viewer, token_id_of, verify_token
from sources.catalog.refs import normalize_ref
from sources.db import Database
from sources.errors import InvalidRef, NotAuthenticated, NotAuthorized
from sources.ldap.records import normalise_name

__all__ = [
    "AdminOnly",
    "Authorize",
    "EntityOwner",
    "Rule",
    "Target",
    "TokenCache",
    "is_admin",
    "resolve_viewer",
    "viewer_of",
    "viewer_without_token",
]

log = logging.getLogger("atrium.authz")

_MAX_ARGUMENT_CHARS = 4_000


class TokenCache:
    """Tokens verified a moment ago. A tool asking many times a second costs one lookup (and
    last-use update) per ``ttl``, not one per request. A revocation announced on the caches'
    channel (``token:<id>``, as ``atrium token revoke`` does) drops the token at once in every
    replica; without Redis, a revoked token stops working within ``ttl``."""

    def __init__(self, ttl: float = 10.0, size: int = 10_000) -> None:
        self.ttl = ttl
        self.size = size
        self._items: dict[str, tuple[float, str, Viewer]] = {}  # id → (until, hash, viewer)

    async def verify(self, db: Database, token: str) -> Viewer | None:
        token_id = token_id_of(token)
        if token_id is None:
            return None
        digest = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        item = self._items.get(token_id)
        if item is not None and item[0] > now and hmac.compare_digest(item[1], digest):
            return item[2]
        viewer = await verify_token(db, token)
        if viewer is None:
            self._items.pop(token_id, None)
            return None
        if len(self._items) >= self.size:
            self._items.clear()
        self._items[token_id] = (now + self.ttl, digest, viewer)
        return viewer

    async def invalidate(self, keys: list[str]) -> None:
        for key in keys:
            if key.startswith("token:"):
                self._items.pop(key.removeprefix("token:"), None)

    def clear_local(self) -> None:
        self._items.clear()


async def resolve_viewer(
    connection: HTTPConnection | None,
    settings: Settings,
    db: Database,
    tokens: TokenCache | None = None,
    identity: Identity | None = None,
) -> Viewer:
    """The viewer of a request (or websocket); see ``viewer_of``."""
    if connection is None:
        return Viewer.anonymous(settings.anonymous_read)
    client = connection.client.host if connection.client else None
    return await viewer_of(
        dict(connection.scope["headers"]), client, settings, db, tokens, identity
    )


async def viewer_of(
    headers: dict[bytes, bytes],
    client: str | None,
    settings: Settings,
    db: Database,
    tokens: TokenCache | None = None,
    identity: Identity | None = None,
) -> Viewer:
    """The viewer named by a request's headers (lowercase names, as ASGI gives them): a
    bearer token (``atr_...``, or the provider's JWT when ``oidc_audience`` is set), else a
    user header from a trusted proxy, else a session, else anonymous. A bad token is an error,
    not anonymity: a tool with a revoked token should hear about it. An ended session is
    anonymity: the person signs in again."""
    sessions = identity.sessions if identity is not None else None
    found = viewer_without_token(headers, client, settings, sessions)
    if found is not None:
        return found
    authorization = headers.get(b"authorization")
    if not authorization:
        assert sessions is not None  # nothing else is left to look up
        return await sessions.verify(headers[b"cookie"])
    scheme, _, token = authorization.decode("latin-1").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer":
        raise NotAuthenticated("the Authorization header must be a bearer token")
    if token_id_of(token) is not None:
        viewer = await (tokens.verify(db, token) if tokens else verify_token(db, token))
        if viewer is None:
            raise NotAuthenticated("the API token is malformed, unknown or revoked")
        return viewer
    if identity is not None and identity.jwts is not None:
        return await identity.jwts.viewer(token)
    raise NotAuthenticated("the API token is malformed, unknown or revoked")


def viewer_without_token(
    headers: dict[bytes, bytes],
    client: str | None,
    settings: Settings,
    sessions: SessionCache | None = None,
) -> Viewer | None:
    """The viewer of a request that carries no Authorization header (a proxy's user, a
    session verified a moment ago, or anonymous), worked out without I/O; None when there is a
    token or a session to verify."""
    if headers.get(b"authorization"):
        return None
    raw_user = headers.get(settings.user_header.lower().encode("latin-1"))
    user = raw_user.decode("latin-1") if raw_user else None
    if user:
        if client is not None and _trusted(client, settings):
            name = normalise_name(user)
            if name:
                return Viewer(f"user:default/{name}", "proxy", frozenset({"read", "write"}))
        else:
            log.warning(
                "user header from an untrusted address ignored",
                extra={"client": client, "header": settings.user_header},
            )
        return Viewer.anonymous(settings.anonymous_read)
    cookie = headers.get(b"cookie")
    if cookie is None:
        return Viewer.anonymous(settings.anonymous_read)
    if sessions is not None and sessions.cookie in cookie:
        return sessions.peek(cookie)
    if not settings.production and DEMO_USER_COOKIE in cookie:
        demo = _demo_user(cookie)
        if demo:
            return Viewer(f"user:default/{demo}", "demo", frozenset({"read", "write"}))
    return Viewer.anonymous(settings.anonymous_read)


# In development (the demo) the console lets a person act as any user: the cookie names them.
# Never read in production, where a session or the trusted proxy says who is asking.
DEMO_USER_COOKIE = b"atrium_demo_user"


def _demo_user(cookie: bytes) -> str | None:
    for part in cookie.split(b";"):
        key, _, value = part.strip().partition(b"=")
        if key == DEMO_USER_COOKIE:
            return normalise_name(unquote(value.decode("latin-1")).strip('"')) or None
    return None


def _trusted(host: str, settings: Settings) -> bool:
    networks = settings.trusted_proxies
    key = (host, id(networks))
    found = _TRUSTED.get(key)
    if found is not None and found[0] is networks:
        return found[1]
    try:
        address = ip_address(host)
    except ValueError:
        trusted = False
    else:
        trusted = any(address in network for network in networks)
    if len(_TRUSTED) > 1024:
        _TRUSTED.clear()
    _TRUSTED[key] = (networks, trusted)
    return trusted


# Whether a client address is a trusted proxy, by address and list of networks: a proxy asks
# again and again. The list is kept with the answer, so its id cannot be reused meanwhile.
_TRUSTED: dict[tuple[str, int], tuple[list[Any], bool]] = {}


async def is_admin(context: Context) -> bool:
    if context.admin is None:
        context.admin = await ownership.is_admin(
            context.loaders, context.viewer, context.settings.admin_group
        )
    return context.admin


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
    records that they were given, not their values."""

    def __init__(self, rule: Rule, action: str, *, secrets: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.rule = rule
        self.action = action
        self.secrets = secrets
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

        async def audit(outcome: str, **extra: Any) -> None:
            await record_audit(
                context.db,
                actor=viewer.actor,
                action=self.action,
                target_ref=target.ref,
                outcome=outcome,
                arguments=arguments,
                **extra,
            )

        try:
            target = await self.rule.target(info, kwargs)
        except Exception as exc:  # a target that cannot be worked out: bad input, usually
            await audit("failed", message=str(exc)[:1000])
            raise

        denial = await self._denial(context, target)
        if denial is not None:
            await audit("denied", message=str(denial))
            raise denial
        before = target.state
        try:
            result = await next_(source, info, **kwargs)
        except Exception as exc:
            await audit("failed", before=before, message=str(exc)[:1000])
            raise
        await audit("allowed", before=before, after=await self.rule.snapshot(info, target))
        return result

    async def _denial(self, context: Context, target: Target) -> NotAuthorized | None:
        viewer = context.viewer
        if viewer.ref is None and "admin" not in viewer.scopes:
            return NotAuthenticated(f"{self.action} needs a signed-in user or an API token")
        if not self.owners_only:
            return self._personal_denial(viewer)
        if await is_admin(context):
            return None
        if self.rule.admin_only:
            return NotAuthorized(f"{self.action} is for admins only")
        if "write" not in viewer.scopes:
            return NotAuthorized(f"{self.action} needs a token with the write scope")
        if not target.exists:
            return NotAuthorized(f"{self.action}: {target.ref or 'the target'} does not exist")
        for owner_ref in (target.owner_ref, *target.other_owner_refs):
            if not await ownership.may_change(context.loaders, viewer, owner_ref):
                return NotAuthorized(
                    f"{viewer.ref} may not {self.action} {target.ref}: it is owned by "
                    f"{owner_ref or 'nobody'}, and only its owners' members and admins may "
                    "change it"
                )
        return None

    def _personal_denial(self, viewer: Viewer) -> NotAuthorized | None:
        """What the viewer changes is theirs: it takes a person (a user, or a token acting as
        one) and the right to write."""
        if viewer.ref is None or not viewer.ref.startswith("user:"):
            return NotAuthorized(f"{self.action} is a person's own: it needs a signed-in user")
        if not viewer.scopes & {"write", "admin"}:
            return NotAuthorized(f"{self.action} needs a token with the write scope")
        return None


def _loggable(arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments as JSON the audit log can keep: long values cut, odd types as text."""
    text = orjson.dumps(arguments, default=lambda v: getattr(v, "__dict__", None) or str(v))
    value: dict[str, Any] = orjson.loads(text)
    for key, item in value.items():
        if isinstance(item, str) and len(item) > _MAX_ARGUMENT_CHARS:
            value[key] = item[:_MAX_ARGUMENT_CHARS] + f"... ({len(item)} characters)"
    return value
