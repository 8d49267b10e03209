"""The change-events scenario: one catalog import of 10,000 entities with and without a change
hook, then the deliveries that follow.

With a hook, every change writes an outbox row in the import's own transaction (a trigger, one
statement per writing statement): the import is timed without a hook and with one, into an
emptied catalog each time, the rounds alternating, and printed as a ratio. Then the deliverer
(the settings' defaults) posts the import's changes to a receiver on 127.0.0.1, a minimal
HTTP/1.1 server that checks every signature, and their rate is printed. A change that does not
arrive, or a signature that does not verify, fails the run.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import statistics
import time
from collections.abc import Awaitable, Callable
from ipaddress import ip_network
from typing import Final

import orjson

from bench.catalog import SMALLEST, CatalogPlan, Shape
from bench.harness import BenchFailure
from bench.harness.database import scratch_database
from graph.settings import Settings
from sources.catalog.documents import ParsedBatch
from sources.catalog.model import validate_entity
from sources.catalog.store import apply_batch
from sources.changes.delivery import Deliverer
from sources.changes.hooks import create_hook
from sources.changes.secrets import SecretBox
from sources.db import Database
from sources.migrations import apply_migrations, core_migrations

__all__ = ["run_changes"]

ENTITIES: Final = 10_000
SECRET: Final = "the bench receiver's secret"
_EMPTY: Final = (
    "truncate entities, relations, facet_counts, search_terms, search_trigrams, change_deliveries"
)


class _Receiver:
    """Takes every POST with 204, keeping the ids of those signed right."""

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.unsigned = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:  # keep-alive: requests one after another on the connection
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                headers = dict(
                    (name.strip().lower(), value.strip())
                    for name, _, value in (line.partition(":") for line in head.split("\r\n")[1:])
                    if name
                )
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
                if hmac.compare_digest(expected, headers.get("x-atrium-signature-256", "")):
                    self.ids.add(orjson.loads(body)["id"])
                else:
                    self.unsigned += 1
                writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def _batch(total: int, seed: int) -> ParsedBatch:
    entities = [
        (origin, validate_entity(document))
        for origin, document in CatalogPlan(Shape.for_total(total), seed).documents()
    ]
    return ParsedBatch(entities, [], {origin for origin, _ in entities})


async def _timed(step: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await step()
    return time.perf_counter() - started


async def run_changes(*, rounds: int, seed: int, smoke: bool = False) -> None:
    """``rounds`` of an import without and with a hook, then the deliveries; ``smoke``: of the
    smallest catalog."""
    entities = SMALLEST if smoke else ENTITIES
    batch = _batch(entities, seed)
    receiver = _Receiver()
    await receiver.start()
    async with scratch_database() as scratch:
        db = await Database.connect(scratch.url, min_size=1, max_size=4)
        try:
            await apply_migrations(db, core_migrations())
            url = f"http://127.0.0.1:{receiver.port}/events"
            without: list[float] = []
            with_hook: list[float] = []
            for i in range(rounds * 2):
                with_a_hook = i % 2 == 1
                await db.execute(_EMPTY)
                await db.execute("delete from change_hooks")
                if with_a_hook:
                    await create_hook(
                        db, SecretBox(None), url=url, secret=SECRET, kinds=None, created_by="bench"
                    )
                seconds = await _timed(lambda: apply_batch(db, batch))
                (with_hook if with_a_hook else without).append(seconds)
            rows = await db.fetchval("select count(*) from change_deliveries")
            if rows != entities:
                raise BenchFailure(f"the import with a hook wrote {rows} outbox rows")

            policy = Settings(change_hooks_allowed_networks=[ip_network("127.0.0.1/32")])
            deliverer = Deliverer(db, policy.change_delivery, SecretBox(None))
            try:
                delivery = await _timed(deliverer.deliver_due)
            finally:
                await deliverer.aclose()
        finally:
            await db.close()
            await receiver.stop()
    left = entities - len(receiver.ids)
    if left or receiver.unsigned:
        raise BenchFailure(
            f"change events: {left} changes not delivered, {receiver.unsigned} badly signed"
        )
    plain, hooked = statistics.median(without), statistics.median(with_hook)
    each = "one round" if rounds == 1 else f"the median of {rounds} rounds"
    print(f"\nchange events: one import of {entities:,} entities, {each} each")
    print(f"  import without a hook   {plain:6.2f} s")
    print(
        f"  import with a change hook {hooked:4.2f} s   {hooked / plain:.2f}x the import "
        f"without ({entities:,} outbox rows in its transaction)"
    )
    print(
        f"  delivered {entities:,} changes in {delivery:.1f} s ({entities / delivery:,.0f} a "
        "second) to a receiver on 127.0.0.1, after the import, every signature valid"
    )
