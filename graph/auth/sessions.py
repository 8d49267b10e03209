"""Sessions: who a session cookie names, without a round trip on every request.

``SessionCache`` keeps sessions verified a moment ago in this process: a signed-in person's
requests cost one store read (which also pushes the session's idle end on) per ``ttl``, not one
each. Signing out is announced on the caches' channel (``session:<hash>``), so every replica
forgets the session at once; without Redis, other replicas forget it within ``ttl``. The
sessions themselves are kept by ``sources.sessions``; sign-in makes them (``graph.auth.signin``).
"""

from __future__ import annotations

import logging
import time

from sources.auth import Viewer
from sources.sessions import SessionStore, secret_key

__all__ = ["SessionCache", "read_cookie", "session_viewer"]

log = logging.getLogger("atrium.identity")


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

    def drop_local(self, keys: list[str]) -> None:
        for key in keys:
            if key.startswith("session:"):
                self._items.pop(key.removeprefix("session:"), None)

    async def drop_shared(self, keys: list[str]) -> None:
        """Nothing shared: kept in this process alone."""

    def clear_local(self) -> None:
        self._items.clear()
