"""Sessions of people signed in with the OpenID provider, and sign-ins under way, kept where
every replica finds them: Redis when Atrium has one, else PostgreSQL (migration 0009).

Keys are hashes (``secret_key``): what the store holds names no cookie or state a browser could
send. A session ends after ``idle`` seconds unused or at its absolute ``expires`` time, whichever
comes first; reading it (``touch``) pushes its idle end on. A sign-in is read once (``take``).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass
from typing import Any, Protocol

import orjson

from sources.db import Executor

__all__ = [
    "PendingSignIn",
    "PostgresSessions",
    "RedisSessions",
    "Session",
    "SessionStore",
    "secret_key",
]


def secret_key(secret: str) -> str:
    """How a store names a session id or a sign-in's state. They are random (256 bits): a fast
    hash is enough, nothing can be guessed back."""
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Session:
    ref: str  # the User entity the person is
    scopes: tuple[str, ...]  # ("read", "write"), or ("read",) for someone the directory lacks
    known: bool  # whether the directory knows them
    name: str | None  # as the provider names them
    picture: str | None
    id_token: str | None  # sent back to the provider when signing out there
    expires: float  # absolute end (Unix time)

    def encode(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def decode(cls, raw: bytes | str | dict[str, Any]) -> Session:
        data = raw if isinstance(raw, dict) else orjson.loads(raw)
        return cls(**{**data, "scopes": tuple(data["scopes"])})


@dataclass(frozen=True, slots=True)
class PendingSignIn:
    browser: str  # secret_key of the cookie that ties the sign-in to the browser starting it
    nonce: str
    verifier: str  # PKCE code verifier
    next: str  # the Atrium path to go to afterwards

    def encode(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def decode(cls, raw: bytes | str | dict[str, Any]) -> PendingSignIn:
        return cls(**(raw if isinstance(raw, dict) else orjson.loads(raw)))


class SessionStore(Protocol):
    async def create(self, key: str, session: Session, idle: float) -> None: ...

    async def touch(self, key: str, idle: float) -> Session | None:
        """The session, its idle end pushed on; None when it ended or never was."""

    async def delete(self, key: str) -> Session | None: ...

    async def begin(self, key: str, pending: PendingSignIn, ttl: float) -> None: ...

    async def take(self, key: str) -> PendingSignIn | None:
        """The sign-in, gone from the store: a state works once."""


class RedisSessions:
    """Sessions as Redis strings that expire by themselves (idle), checked against their
    absolute end when read; one round trip per read (GETEX)."""

    def __init__(self, redis: Any, prefix: str) -> None:
        self.redis = redis
        self.sessions = f"{prefix}:session:"
        self.sign_ins = f"{prefix}:signin:"

    async def create(self, key: str, session: Session, idle: float) -> None:
        ttl = min(idle, session.expires - time.time())
        await self.redis.set(self.sessions + key, session.encode(), px=max(1, int(ttl * 1000)))

    async def touch(self, key: str, idle: float) -> Session | None:
        raw = await self.redis.getex(self.sessions + key, px=max(1, int(idle * 1000)))
        if raw is None:
            return None
        session = Session.decode(raw)
        if session.expires <= time.time():
            await self.redis.delete(self.sessions + key)
            return None
        return session

    async def delete(self, key: str) -> Session | None:
        raw = await self.redis.getdel(self.sessions + key)
        return Session.decode(raw) if raw is not None else None

    async def begin(self, key: str, pending: PendingSignIn, ttl: float) -> None:
        await self.redis.set(self.sign_ins + key, pending.encode(), px=int(ttl * 1000))

    async def take(self, key: str) -> PendingSignIn | None:
        raw = await self.redis.getdel(self.sign_ins + key)
        return PendingSignIn.decode(raw) if raw is not None else None


_CREATE = """
insert into sessions (id_hash, data, idle_until, expires_at)
values ($1, $2::jsonb, least(now() + make_interval(secs => $3), to_timestamp($4)),
        to_timestamp($4))
"""
# Ended sessions go when a new one starts: the table holds live sessions and a few more.
_PURGE_SESSIONS = "delete from sessions where idle_until < now()"
_TOUCH = """
update sessions set idle_until = least(now() + make_interval(secs => $2), expires_at)
where id_hash = $1 and idle_until > now()
returning data
"""
_DELETE = "delete from sessions where id_hash = $1 returning data"
_BEGIN = """
insert into sign_ins (state_hash, data, expires_at)
values ($1, $2::jsonb, now() + make_interval(secs => $3))
"""
_PURGE_SIGN_INS = "delete from sign_ins where expires_at < now()"
_TAKE = "delete from sign_ins where state_hash = $1 and expires_at > now() returning data"


class PostgresSessions:
    """Sessions in PostgreSQL: one statement per read, and nothing that needs a session of
    the database's own (it works behind PgBouncer in transaction mode)."""

    def __init__(self, db: Executor) -> None:
        self.db = db

    async def create(self, key: str, session: Session, idle: float) -> None:
        await self.db.execute(_PURGE_SESSIONS)
        await self.db.execute(_CREATE, key, asdict(session), idle, session.expires)

    async def touch(self, key: str, idle: float) -> Session | None:
        data = await self.db.fetchval(_TOUCH, key, idle)
        return Session.decode(data) if data is not None else None

    async def delete(self, key: str) -> Session | None:
        data = await self.db.fetchval(_DELETE, key)
        return Session.decode(data) if data is not None else None

    async def begin(self, key: str, pending: PendingSignIn, ttl: float) -> None:
        await self.db.execute(_PURGE_SIGN_INS)
        await self.db.execute(_BEGIN, key, asdict(pending), ttl)

    async def take(self, key: str) -> PendingSignIn | None:
        data = await self.db.fetchval(_TAKE, key)
        return PendingSignIn.decode(data) if data is not None else None
