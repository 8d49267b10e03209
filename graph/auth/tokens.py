"""API tokens (``Authorization: Bearer atr_...``) verified without a round trip on every
request: ``TokenCache``. Tokens themselves (made, listed, revoked, checked against their hash)
are ``sources.auth``'s."""

from __future__ import annotations

import hashlib
import hmac
import time

from sources.auth import Viewer, token_id_of, verify_token
from sources.db import Database

__all__ = ["TokenCache"]


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

    def drop_local(self, keys: list[str]) -> None:
        for key in keys:
            if key.startswith("token:"):
                self._items.pop(key.removeprefix("token:"), None)

    async def drop_shared(self, keys: list[str]) -> None:
        """Nothing shared: kept in this process alone."""

    def clear_local(self) -> None:
        self._items.clear()
