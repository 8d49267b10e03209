"""Delivering change events: claim a batch, post each event signed, record what came of it.

A delivery is a ``POST`` of ``{id, type, ref, occurredAt, entity, previous}`` as JSON with
``X-Atrium-Event`` (the type), ``X-Atrium-Delivery`` (the same id on every retry) and
``X-Atrium-Signature-256: sha256=<hex HMAC-SHA256 of the body with the hook's secret>``, as
GitHub signs its webhooks. The body is made from the stored row, byte for byte the same on
every retry. Any 2xx answer is taken; anything else, a redirect included (never followed: the
target was checked, where it points was not), no answer within ``timeout`` or no connection is
a failure, retried (``sources.changes.outbox``).

Hooks are served side by side, each in batches of up to ``batch`` deliveries with ``IN_FLIGHT``
of them out at once (a batch holds one delivery per ref, so their order does not matter), on
connections kept open from one delivery to the next (each answer is read to its end). A
request is only started while the claim's lease leaves it ``timeout`` to finish: whatever a
replica sent has finished, one way or the other, before another replica may claim it again.

Each hook has a pool of connections of its own, pinned to the address that was checked
(``sources.changes.wire``, imported when the first hook is served).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import ssl
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import orjson

from sources.changes.outbox import Backoff, Claimed, HookDue, Outcome, claim, due_hooks, record
from sources.changes.secrets import SecretBox
from sources.changes.targets import IPNetwork, Target, resolve_target
from sources.db import Database
from sources.errors import ChangeHookError

if TYPE_CHECKING:
    from sources.changes.wire import HookClient

__all__ = ["IN_FLIGHT", "Deliverer", "DeliveryPolicy", "payload", "sign"]

log = logging.getLogger("atrium.changes")

IN_FLIGHT: Final = 16  # requests out at once per hook and replica
_USER_AGENT: Final = "Atrium-Change-Events"
_ERROR_CHARS: Final = 500


@dataclass(frozen=True, slots=True)
class DeliveryPolicy:
    timeout: float  # seconds a request may take, connecting included
    lease: float  # seconds a claim holds its rows
    batch: int  # deliveries claimed at once per hook
    backoff: Backoff
    allowed_networks: Sequence[IPNetwork] = ()


def sign(secret: str, body: bytes) -> str:
    """``sha256=<hex>``, the HMAC-SHA256 of the body, as GitHub signs (and so does Atrium)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def payload(delivery: Claimed) -> bytes:
    """The body, made from the stored row alone: the same bytes on every retry."""
    return orjson.dumps(
        {
            "id": str(delivery.event_id),
            "type": delivery.type,
            "ref": delivery.ref,
            "occurredAt": delivery.occurred_at,
            "entity": delivery.entity,
            "previous": delivery.previous,
        },
        option=orjson.OPT_UTC_Z,
    )


class Deliverer:
    """Delivers what is due, for every hook; ``aclose`` when done."""

    def __init__(self, db: Database, policy: DeliveryPolicy, box: SecretBox) -> None:
        self.db = db
        self.policy = policy
        self.box = box
        self._clients: dict[int, tuple[tuple[str, str], HookClient]] = {}
        self._tls: ssl.SSLContext | None = None  # made for the first https hook

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for _, client in clients:
            await client.close()

    async def deliver_due(self) -> int:
        """Deliver until no hook has anything due; returns how many the receivers took."""
        total = 0
        seen: set[int] = set()
        while hooks := await due_hooks(self.db):
            seen.update(hook.id for hook in hooks)
            taken = await asyncio.gather(*(self._drain(hook) for hook in hooks))
            total += sum(taken)
            if not any(taken):
                break  # what is left waits for a backoff, or another replica has it
        # Connections of hooks that had nothing to deliver (or are gone) are not kept.
        for hook_id in set(self._clients) - seen:
            await self._clients.pop(hook_id)[1].close()
        return total

    async def _drain(self, hook: HookDue) -> int:
        """Batches for one hook until it has nothing due or its receiver took nothing."""
        taken = 0
        failures: int | None = hook.failures
        while failures is not None:
            claim_id = uuid.uuid4()
            # The lease is counted from before the claim: it ends no later than the database's.
            deadline = time.monotonic() + self.policy.lease * 0.9
            limit = 1 if failures else self.policy.batch
            batch = await claim(self.db, hook.id, limit, claim_id, self.policy.lease)
            if not batch:
                break
            errors: dict[int, str | None] = {}  # filled as answers come: None when taken
            try:
                await self._send(hook, batch, deadline, errors)
            except asyncio.CancelledError:
                # Stopping (a rolling restart): what had no answer is released at once rather
                # than held for the lease. It may have reached the receiver: the next attempt
                # carries the same delivery id.
                await self._record(hook, claim_id, batch, errors)
                raise
            outcome = await self._record(hook, claim_id, batch, errors)
            taken += outcome.delivered
            if outcome.given_up:
                log.warning(
                    "change deliveries given up",
                    extra={"hook": hook.id, "given_up": outcome.given_up},
                )
            if outcome.delivered == 0:
                break
            failures = outcome.failures
        return taken

    async def _record(
        self,
        hook: HookDue,
        claim_id: uuid.UUID,
        batch: list[Claimed],
        errors: dict[int, str | None],
    ) -> Outcome:
        unsent = [delivery.id for delivery in batch if delivery.id not in errors]
        return await record(self.db, hook.id, claim_id, errors, unsent, self.policy.backoff)

    async def _send(
        self, hook: HookDue, batch: list[Claimed], deadline: float, errors: dict[int, str | None]
    ) -> None:
        """Post the batch, noting each answer in ``errors``; a delivery the lease leaves no
        time for is not sent (and not noted)."""
        try:
            secret = self.box.open(hook.secret, hook.secret_sealed, hook.url)
            target = await resolve_target(
                hook.url, self.policy.allowed_networks, self.policy.timeout
            )
            client = await self._client(hook.id, target)
        except ChangeHookError as exc:
            errors.update((delivery.id, str(exc)) for delivery in batch)
            return
        except ValueError as exc:  # a URL the check let through and the client does not take
            errors.update((delivery.id, f"url: {exc}"[:_ERROR_CHARS]) for delivery in batch)
            return
        slots = asyncio.Semaphore(IN_FLIGHT)

        async def one(delivery: Claimed) -> None:
            async with slots:
                if deadline - time.monotonic() >= self.policy.timeout:
                    errors[delivery.id] = await self._post(client, secret, delivery)

        await asyncio.gather(*(one(delivery) for delivery in batch))

    async def _client(self, hook_id: int, target: Target) -> HookClient:
        """The hook's pool, made again when its URL changes or its host resolves elsewhere: a
        connection made (and its certificate checked) for one name and address is never used
        for another. Raises ValueError for a URL the client cannot spell."""
        from sources.changes.wire import HookClient

        key = (target.request_url, str(target.address))
        kept = self._clients.get(hook_id)
        if kept is not None:
            if kept[0] == key:
                return kept[1]
            del self._clients[hook_id]  # closed, never handed out again
            await kept[1].close()
        tls = self._authorities() if target.scheme == "https" else None
        client = HookClient(target, IN_FLIGHT, self.policy.timeout, tls)
        self._clients[hook_id] = (key, client)
        return client

    def _authorities(self) -> ssl.SSLContext:
        """The system's trusted authorities, or SSL_CERT_FILE's as it is when the first https
        hook is served (aiohttp's default context is made once, when aiohttp is imported)."""
        if self._tls is None:
            self._tls = ssl.create_default_context()
        return self._tls

    async def _post(self, client: HookClient, secret: str, delivery: Claimed) -> str | None:
        body = payload(delivery)
        headers = {
            "Content-Type": "application/json",
            "User-Agent": _USER_AGENT,
            "X-Atrium-Event": delivery.type,
            "X-Atrium-Delivery": str(delivery.delivery_id),
            "X-Atrium-Signature-256": sign(secret, body),
        }
        answer = await client.post(body, headers)
        if isinstance(answer, str):
            return answer[:_ERROR_CHARS]
        if 200 <= answer < 300:
            return None
        if 300 <= answer < 400:
            return f"answered HTTP {answer}: redirects are not followed"
        return f"answered HTTP {answer}"
