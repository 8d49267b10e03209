"""Who is asking: API tokens (stored hashed) and the viewer they, or a proxy header, name."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from sources.db import Executor

__all__ = [
    "SCOPES",
    "TokenInfo",
    "Viewer",
    "create_token",
    "list_tokens",
    "revoke_token",
    "token_id_of",
    "verify_token",
]

SCOPES: Final = ("read", "write", "admin")
_PREFIX: Final = "atr"
_TOKEN_ID: Final = re.compile("[0-9a-f]{1,32}")


@dataclass(frozen=True, slots=True)
class Viewer:
    """The subject of a request: a user (or group) ref, or nobody."""

    ref: str | None
    via: str  # "proxy", "session" (signed in with the provider), "token", or "anonymous"
    scopes: frozenset[str]
    token_name: str | None = None
    # Whether the directory has the ref's entity. Someone it lacks (signed in with the
    # provider all the same) may read, not change; the console says so.
    known: bool = True
    # How the provider names the person, for pages to show when the directory cannot.
    name: str | None = None
    picture: str | None = None

    @property
    def actor(self) -> str:
        """How the audit log names this viewer."""
        if self.token_name is not None:
            return f"token:{self.token_name}" + (f" ({self.ref})" if self.ref else "")
        return self.ref or "anonymous"

    @classmethod
    def anonymous(cls, may_read: bool) -> Viewer:
        return _ANONYMOUS_READER if may_read else _NOBODY


_ANONYMOUS_READER = Viewer(None, "anonymous", frozenset({"read"}))
_NOBODY = Viewer(None, "anonymous", frozenset())


@dataclass(frozen=True, slots=True)
class TokenInfo:
    id: str
    name: str
    subject_ref: str | None
    scopes: list[str]
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


_INSERT = """
insert into api_tokens (id, secret_hash, name, subject_ref, scopes) values ($1, $2, $3, $4, $5)
"""
_LOOKUP = """
update api_tokens set last_used_at = now()
where id = $1 and revoked_at is null
returning secret_hash, name, subject_ref, scopes
"""
_REVOKE = "update api_tokens set revoked_at = now() where id = $1 and revoked_at is null"
_LIST = """
select id, name, subject_ref, scopes, created_at, last_used_at, revoked_at
from api_tokens order by created_at, id
"""


def _hash(secret: str) -> str:
    # The secret is 256 random bits: a fast hash is enough, nothing can be guessed.
    return hashlib.sha256(secret.encode()).hexdigest()


async def create_token(
    db: Executor, name: str, scopes: list[str], subject_ref: str | None
) -> tuple[str, str]:
    """(token id, the whole token): the token is shown once and never stored."""
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown or not scopes:
        raise ValueError(f"scopes must be among {', '.join(SCOPES)}; got {', '.join(unknown)}")
    token_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    await db.execute(_INSERT, token_id, _hash(secret), name, subject_ref, sorted(set(scopes)))
    return token_id, f"{_PREFIX}_{token_id}_{secret}"


def token_id_of(token: str) -> str | None:
    """The id part of a well-formed token (``atr_<id>_<secret>``), else None."""
    prefix, _, rest = token.partition("_")
    token_id, _, secret = rest.partition("_")
    if prefix != _PREFIX or not secret or _TOKEN_ID.fullmatch(token_id) is None:
        # Ids are hex (create_token): anything else from an Authorization header, a NUL
        # say, is no token, and must not reach a query.
        return None
    return token_id


async def verify_token(db: Executor, token: str) -> Viewer | None:
    """The viewer a token stands for, or None for a token that is malformed, unknown or revoked."""
    token_id = token_id_of(token)
    if token_id is None:
        return None
    secret = token.split("_", 2)[2]
    row = await db.fetchrow(_LOOKUP, token_id)
    if row is None or not hmac.compare_digest(row["secret_hash"], _hash(secret)):
        return None
    return Viewer(row["subject_ref"], "token", frozenset(row["scopes"]), token_name=row["name"])


async def revoke_token(db: Executor, token_id: str) -> bool:
    return bool(await db.execute(_REVOKE, token_id) == "UPDATE 1")


async def list_tokens(db: Executor) -> list[TokenInfo]:
    return [TokenInfo(**dict(row)) for row in await db.fetch(_LIST)]
