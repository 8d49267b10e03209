"""The identity provider as the lifespan connects it: ``Identity`` holds the provider's client,
the session store and the caches in front of them (sessions, bearer JWTs);
``connect_identity`` makes it when ``oidc_issuer`` is set."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx

from graph.auth.jwts import BearerJwts
from graph.auth.sessions import SessionCache
from graph.settings import Settings
from loaders.cache import Caches
from sources.auth import Viewer
from sources.db import Database
from sources.oidc import OpenIDProvider
from sources.sessions import PostgresSessions, RedisSessions, SessionStore

__all__ = ["Identity", "connect_identity"]


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
