"""Who is asking: the viewer of a request, from its headers.

In this order: a bearer token (an API token ``atr_...``, or the provider's JWT when
``oidc_audience`` is set), else a user header from a trusted proxy, else a session (or, in
development, the demo's cookie), else anonymous. ``viewer_without_token`` answers without I/O
whenever it can, which is most requests: the HTTP view asks it first.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from ipaddress import ip_address
from typing import Any
from urllib.parse import unquote

from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response

from graph.auth.identity import Identity
from graph.auth.sessions import SessionCache
from graph.auth.tokens import TokenCache
from graph.settings import Settings
from sources.auth import Viewer, token_id_of, verify_token
from sources.db import Database
from sources.errors import NotAuthenticated
from sources.ldap.records import normalise_name

__all__ = [
    "ANONYMOUS_READ_OFF",
    "DEMO_USER_COOKIE",
    "for_readers",
    "may_read",
    "resolve_viewer",
    "viewer_of",
    "viewer_without_token",
]

ANONYMOUS_READ_OFF = "sign in or use an API token: anonymous reading is off"

# The name its log lines have always had, which operators' queries know.
log = logging.getLogger("atrium.authz")


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


def may_read(viewer: Viewer) -> bool:
    """Whether the viewer may read anything: the one rule of every face that answers with data
    (the console's pages, /graphql, /api/catalog, subscriptions). With ATRIUM_ANONYMOUS_READ
    off, nobody (no token, session or trusted proxy's user) may; each face refuses in its own
    protocol's words with ``ANONYMOUS_READ_OFF``."""
    return bool(viewer.scopes)


def for_readers(
    endpoint: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """A plugin's endpoint that answers with data (``builder.route(..., viewer=True)``) behind
    ``may_read``: a bad token, or nobody while anonymous reading is off, is answered 401
    (``no-store``) before it runs; it finds the viewer in ``request.state.viewer``."""

    def refused(message: str) -> Response:
        headers = {"WWW-Authenticate": "Bearer", "Cache-Control": "no-store"}
        return JSONResponse({"error": message}, 401, headers=headers)

    async def guarded(request: Request) -> Response:
        try:
            viewer = await request.app.state.services.viewer(request)
        except NotAuthenticated as exc:
            return refused(str(exc))
        if not may_read(viewer):
            return refused(ANONYMOUS_READ_OFF)
        request.state.viewer = viewer
        return await endpoint(request)

    return guarded


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
