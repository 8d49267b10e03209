"""Who a session cookie or a provider's JWT names, without a round trip on every request.

``SessionCache`` keeps sessions verified a moment ago in this process: a signed-in person's
requests cost one store read (which also pushes the session's idle end on) per ``ttl``, not one
each. Signing out is announced on the caches' channel (``session:<hash>``), so every replica
forgets the session at once; without Redis, other replicas forget it within ``ttl``.

``BearerJwts`` verifies the provider's access tokens (``Authorization: Bearer <JWT>``) and keeps
each verified one until it expires, so a tool asking often pays the verification once.

``Identity`` holds both, the provider and the session store; the lifespan connects it
(``connect_identity``) when ``oidc_issuer`` is set.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Final

import httpx

from graph.settings import Settings
from loaders.cache import Caches
from sources.auth import Viewer
from sources.db import Database, Executor
from sources.errors import NotAuthenticated
from sources.oidc import OpenIDProvider, ProviderUnavailable, TokenRejected
from sources.people import group_named, person_named
from sources.sessions import PostgresSessions, RedisSessions, SessionStore, secret_key

__all__ = [
    "BearerJwts",
    "Identity",
    "SessionCache",
    "connect_identity",
    "read_cookie",
    "session_viewer",
]

log = logging.getLogger("atrium.identity")

WRITER: Final = frozenset({"read", "write"})
READER: Final = frozenset({"read"})


def read_cookie(header: bytes, name: bytes) -> str | None:
    """A cookie's value from a ``Cookie`` header (the first of that name), or None."""
    for part in header.split(b";"):
        key, sep, value = part.strip().partition(b"=")
        if sep and key == name:
            text = value.strip(b'"').decode("latin-1")
            return text or None
    return None


def session_viewer(
    ref: str, scopes: tuple[str, ...], known: bool, name: str | None, picture: str | None
) -> Viewer:
    return Viewer(ref, "session", frozenset(scopes), known=known, name=name, picture=picture)


class SessionCache:
    """Sessions verified a moment ago, by the hash of their cookie's value."""

    def __init__(
        self,
        store: SessionStore,
        cookie: bytes,
        idle: float,
        anonymous: Viewer,
        *,
        ttl: float = 10.0,
        size: int = 10_000,
    ) -> None:
        self.store = store
        self.cookie = cookie
        self.idle = idle
        self.anonymous = anonymous
        self.ttl = ttl
        self.size = size
        self._items: dict[str, tuple[float, Viewer]] = {}  # hash → (until, viewer)

    def peek(self, cookie_header: bytes) -> Viewer | None:
        """The viewer a Cookie header's session names, if verified a moment ago (anonymous for
        a session that had ended); None when it must be read from the store."""
        value = read_cookie(cookie_header, self.cookie)
        if value is None:
            return self.anonymous
        item = self._items.get(secret_key(value))
        if item is not None and item[0] > time.monotonic():
            return item[1]
        return None

    async def verify(self, cookie_header: bytes) -> Viewer:
        """The viewer the session names, read from the store (anonymous when it ended or
        the store cannot be read: a person then sees the console as a visitor does)."""
        value = read_cookie(cookie_header, self.cookie)
        if value is None:
            return self.anonymous
        key = secret_key(value)
        try:
            session = await self.store.touch(key, self.idle)
        except Exception as exc:
            log.warning("the session store could not be read", extra={"error": str(exc)})
            return self.anonymous
        now = time.monotonic()
        if session is None:
            viewer, until = self.anonymous, now + self.ttl
        else:
            viewer = session_viewer(
                session.ref, session.scopes, session.known, session.name, session.picture
            )
            until = min(now + self.ttl, now + session.expires - time.time())
        if len(self._items) >= self.size:
            self._items.clear()
        self._items[key] = (until, viewer)
        return viewer

    def forget(self, key: str) -> None:
        self._items.pop(key, None)

    async def invalidate(self, keys: list[str]) -> None:
        for key in keys:
            if key.startswith("session:"):
                self._items.pop(key.removeprefix("session:"), None)

    def clear_local(self) -> None:
        self._items.clear()


class BearerJwts:
    """The provider's access tokens: verified (sources.oidc), mapped to a viewer, kept by the
    hash of the token until it expires (an hour at most)."""

    def __init__(
        self, provider: OpenIDProvider, db: Executor, settings: Settings, *, size: int = 10_000
    ) -> None:
        assert settings.oidc_audience is not None
        self.provider = provider
        self.db = db
        self.audience = settings.oidc_audience
        self.user_claim = settings.oidc_user_claim
        self.group_claim = settings.oidc_client_group_claim
        self.size = size
        self._items: dict[str, tuple[float, Viewer]] = {}  # hash → (until, viewer)

    async def viewer(self, token: str) -> Viewer:
        """The viewer a JWT stands for; NotAuthenticated (saying why) when it does not verify."""
        digest = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        item = self._items.get(digest)
        if item is not None and item[0] > now:
            return item[1]
        try:
            claims = await self.provider.verify(token, audience=self.audience)
        except TokenRejected as exc:
            raise NotAuthenticated(f"the bearer token is refused: {exc}") from None
        except ProviderUnavailable as exc:
            log.warning("the provider's keys could not be read", extra={"error": str(exc)})
            raise NotAuthenticated(
                "the bearer token cannot be verified now: the identity provider is unreachable"
            ) from None
        viewer = await self._viewer_of(claims)
        until = now + min(3600.0, float(claims["exp"]) - time.time())
        if len(self._items) >= self.size:
            self._items.clear()
        self._items[digest] = (until, viewer)
        return viewer

    async def _viewer_of(self, claims: dict[str, Any]) -> Viewer:
        """A person's token is that person (read-only if the directory lacks them); a client's
        (client credentials: no user claim, or its subject is the client) acts as the group
        its group claim names, or may only read."""
        client = claims.get("client_id") or claims.get("azp")
        name = f"oidc:{client or claims.get('sub') or 'client'}"
        user = claims.get(self.user_claim)
        if isinstance(user, str) and user and claims.get("sub") != client:
            person = await person_named(self.db, user, by_email=self.user_claim == "email")
            if person is not None:
                scopes = WRITER if person.known else READER
                return Viewer(person.ref, "token", scopes, token_name=name, known=person.known)
        group = claims.get(self.group_claim)
        if isinstance(group, str) and group:
            ref = await group_named(self.db, group)
            if ref is not None:
                return Viewer(ref, "token", WRITER, token_name=name)
        return Viewer(None, "token", READER, token_name=name)

    def clear_local(self) -> None:
        self._items.clear()


@dataclass(slots=True)
class Identity:
    """Sign-in and the provider's tokens, as the lifespan connected them."""

    provider: OpenIDProvider
    store: SessionStore
    sessions: SessionCache
    jwts: BearerJwts | None  # None unless oidc_audience is set
    sign_in_cookie: str
    secure: bool  # cookies marked Secure (everywhere but development)


@contextlib.asynccontextmanager
async def connect_identity(
    settings: Settings, db: Database, caches: Caches | None
) -> AsyncIterator[Identity | None]:
    """The provider's client, the session store (Redis if there is one, else PostgreSQL) and
    the caches in front of them; None when no issuer is configured."""
    if not settings.oidc_issuer:
        yield None
        return
    async with httpx.AsyncClient(timeout=httpx.Timeout(5.0), follow_redirects=False) as http:
        secret = settings.oidc_client_secret
        provider = OpenIDProvider(
            settings.oidc_issuer,
            settings.oidc_client_id or "",
            secret.get_secret_value() if secret else "",
            http,
        )
        store: SessionStore = (
            RedisSessions(caches.redis, settings.cache_prefix)
            if caches is not None and caches.redis is not None
            else PostgresSessions(db)
        )
        secure = settings.production
        prefix = "__Host-" if secure else ""
        anonymous = Viewer.anonymous(settings.anonymous_read)
        sessions = SessionCache(
            store, f"{prefix}atrium_session".encode(), settings.session_idle_timeout, anonymous
        )
        identity = Identity(
            provider=provider,
            store=store,
            sessions=sessions,
            jwts=BearerJwts(provider, db, settings) if settings.oidc_audience else None,
            sign_in_cookie=f"{prefix}atrium_signin",
            secure=secure,
        )
        if caches is not None:
            caches.subscribers.append(sessions)
        yield identity
