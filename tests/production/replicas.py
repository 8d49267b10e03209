"""Replicas of `atrium serve` behind Debian's HAProxy, for the production tests.

Production mode throughout: one PostgreSQL database and one Redis shared (with a cache prefix
of the test's own), only trusted documents run (the tests' own, trusted as `atrium persisted
load` trusts a manifest), writes with an API token, deploy events signed as a CD system signs
them, and a short shutdown grace. The subscription client is the console's own (graphql-ws
under Node, tests/clients/subscribe.mjs), connected through HAProxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import shutil
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.harness.haproxy import HAProxy, haproxy
from bench.harness.replica import Replica, free_port, serve_environment
from graph.persisted import trust
from sources.auth import create_token
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from sources.db import Database
from sources.persisted import document_hash

CLIENTS = Path(__file__).resolve().parent.parent / "clients"
GRACE = 1.5  # seconds a stopping replica serves on (production's default is 10)
WEBHOOK_SECRET = "the production tests' deploy events"

ENTITY = "query ReplicaEntity($ref: String!) { entity(ref: $ref) { ref title description } }"
APPLY = "mutation ReplicaApply($yaml: String!) { applyEntities(yaml: $yaml) { created updated errors { message } } }"
DEPLOYS = """subscription ReplicaDeploys($component: String!) {
  componentDeploys(component: $component) { state stage release { version } }
}"""
DOCUMENTS = (ENTITY, APPLY, DEPLOYS)

CATALOG = """
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: payments}
spec: {type: team}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: checkout, description: Takes the money}
spec: {type: service, lifecycle: production, owner: payments}
"""


def component(name: str, description: str) -> str:
    return (
        "apiVersion: backstage.io/v1alpha1\nkind: Component\n"
        f"metadata: {{name: {name}, description: {json.dumps(description)}}}\n"
        "spec: {type: service, lifecycle: production, owner: payments}\n"
    )


def settings(database_url: str, redis_url: str, cache_prefix: str, **extra: str) -> dict[str, str]:
    """The replicas' environment: production, shared database and Redis."""
    return {
        "ATRIUM_MODE": "production",
        "ATRIUM_DATABASE_URL": database_url,
        "ATRIUM_REDIS_URL": redis_url,
        "ATRIUM_CACHE_PREFIX": cache_prefix,
        "ATRIUM_SHUTDOWN_GRACE": str(GRACE),
        "ATRIUM_DATABASE_POOL_MAX": "5",
        # The API alone: no console build, no clusters, no Prometheus.
        "ATRIUM_WEB_DIR": "/nonexistent-console-build",
        "ATRIUM_DISABLED_PLUGINS": "pincompute,observability",
        "ATRIUM_DEPLOYMENTS_WEBHOOK_SECRET": WEBHOOK_SECRET,
        **extra,
    }


async def prepare(database_url: str) -> str:
    """The tests' documents trusted and the catalog loaded; an admin API token."""
    db = await Database.connect(database_url, min_size=1, max_size=2)
    try:
        await trust(db, [(document_hash(d), d, None) for d in DOCUMENTS])
        assert not (await apply_batch(db, parse_documents(CATALOG, "catalog.yaml"))).errors
        _, token = await create_token(db, "replica tests", ["admin"], None)
    finally:
        await db.close()
    return token


@dataclass
class Fleet:
    """Replicas, HAProxy in front of them, and what the tests send through it."""

    replicas: list[Replica]
    token: str
    proxy: HAProxy | None = None
    http: httpx.AsyncClient = field(default_factory=lambda: httpx.AsyncClient(timeout=30))

    def __getitem__(self, name: str) -> Replica:
        return next(r for r in self.replicas if r.name == name)

    @property
    def front(self) -> str:
        """Where clients reach the replicas: HAProxy."""
        assert self.proxy is not None, "no HAProxy in front"
        return self.proxy.base

    async def entity(self, ref: str, base: str | None = None) -> httpx.Response:
        """A persisted GET of the entity, as the console sends it (by hash)."""
        extensions = {"persistedQuery": {"version": 1, "sha256Hash": document_hash(ENTITY)}}
        return await self.http.get(
            f"{base or self.front}/graphql",
            params={"extensions": json.dumps(extensions), "variables": json.dumps({"ref": ref})},
            headers={"apollo-require-preflight": "true", "accept": "application/json"},
        )

    async def description(self, ref: str, base: str | None = None) -> str:
        response = await self.entity(ref, base)
        body = response.json()
        assert response.status_code == 200 and "errors" not in body, body
        return str(body["data"]["entity"]["description"])

    async def apply(self, yaml: str, base: str | None = None) -> httpx.Response:
        return await self.http.post(
            f"{base or self.front}/graphql",
            json={"query": APPLY, "variables": {"yaml": yaml}},
            headers={"authorization": f"Bearer {self.token}", "accept": "application/json"},
        )

    async def deploy(self, version: str, base: str | None = None) -> httpx.Response:
        """A CD system's deploy event for checkout's staging, signed."""
        body = json.dumps(
            {
                "component": "component:default/checkout",
                "stage": "staging",
                "deploy": {"id": f"deploy-{version}", "state": "in_progress", "actor": "ci"},
                "release": {
                    "version": version,
                    "commitSha": "9f2c",
                    "artifact": f"checkout:{version}",
                },
            }
        ).encode()
        signature = hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
        return await self.http.post(
            f"{base or self.front}/hooks/deployments",
            content=body,
            headers={
                "content-type": "application/json",
                "X-Atrium-Delivery": str(uuid.uuid4()),
                "X-Atrium-Signature-256": f"sha256={signature}",
            },
        )

    def ws(self, base: str | None = None) -> str:
        return (base or self.front).replace("http://", "ws://") + "/graphql"


@contextlib.asynccontextmanager
async def fleet(
    env: dict[str, str],
    directory: Path,
    token: str,
    names: Sequence[str] = ("a", "b", "c"),
) -> AsyncIterator[Fleet]:
    """The replicas started together, then HAProxy once all are ready and it sees them up;
    everything stopped on the way out."""
    replicas = [Replica(name, serve_environment(env), directory) for name in names]
    try:
        await asyncio.gather(*(replica.start() for replica in replicas))
        await asyncio.gather(*(replica.ready() for replica in replicas))
        servers = {replica.name: replica.port for replica in replicas}
        async with haproxy(free_port(), servers) as proxy:
            for replica in replicas:
                await proxy.until(replica.name, "UP")
            fleet = Fleet(replicas, token, proxy)
            try:
                yield fleet
            finally:
                await fleet.http.aclose()
    finally:
        for replica in replicas:
            await replica.kill()


class Subscriber:
    """The console's subscription client in Node: its events, as they come."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.events: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for line in self.process.stdout:
            self.events.append(json.loads(line))
            self._changed.set()
        self._changed.set()

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == kind]

    def versions(self) -> set[str]:
        """Release versions of the deploys received."""
        return {
            e["value"]["data"]["componentDeploys"]["release"]["version"]
            for e in self.of("next")
            if e["value"].get("data")
        }

    async def until(
        self, check: Callable[[Subscriber], bool], what: str, within: float = 60
    ) -> None:
        async def wait() -> None:
            while not check(self):
                if self.process.returncode is not None and self._reader.done():
                    raise AssertionError(f"the subscriber stopped: {self.events}")
                self._changed.clear()
                await self._changed.wait()

        try:
            await asyncio.wait_for(wait(), within)
        except TimeoutError:
            raise AssertionError(f"the subscriber never got {what}: {self.events}") from None


@contextlib.asynccontextmanager
async def subscriber(url: str, component: str) -> AsyncIterator[Subscriber]:
    """Subscribe to a component's deploys through ``url`` with the console's client."""
    node = shutil.which("node")
    assert node is not None, "Node is not installed (make test installs Debian's)"
    operation = {"query": DEPLOYS, "variables": {"component": component}}
    process = await asyncio.create_subprocess_exec(
        node,
        "--no-warnings",
        "--experimental-websocket",
        str(CLIENTS / "subscribe.mjs"),
        url,
        json.dumps(operation),
        cwd=CLIENTS,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    client = Subscriber(process)
    try:
        yield client
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()
        await client._reader
