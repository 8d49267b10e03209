"""Bearer JWTs: the provider's access tokens (``Authorization: Bearer <JWT>``), verified and
kept until they expire, so a tool asking often pays the verification once."""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any, Final

from graph.settings import Settings
from sources.auth import Viewer
from sources.db import Executor
from sources.errors import NotAuthenticated
from sources.oidc import OpenIDProvider, ProviderUnavailable, TokenRejected
from sources.people import group_named, person_named

__all__ = ["BearerJwts"]

log = logging.getLogger("atrium.identity")

WRITER: Final = frozenset({"read", "write"})
READER: Final = frozenset({"read"})


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
