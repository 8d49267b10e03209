"""A rolling restart of three replicas behind HAProxy, under steady load, drops nothing.

Each replica in turn is stopped as a platform stops it (SIGTERM; it drains and exits 0),
started again, and waited for until HAProxy sees it up, while clients keep sending persisted
GETs, mutations and deploy events through HAProxy, and the console's subscription client
follows the deploys. HAProxy neither retries nor redispatches: a request a replica dropped
would fail here. Every request must succeed, and the subscription must come back by itself
and hear every deploy, the last one made after all three restarts.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.production.replicas import Fleet, component, fleet, prepare, settings, subscriber

REF = "component:default/checkout"
READERS = 3


@dataclass
class Load:
    """Clients sending requests through HAProxy until told to stop; every outcome counted."""

    fleet: Fleet
    running: bool = True
    sent: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)

    def count(self, kind: str) -> None:
        self.sent[kind] = self.sent.get(kind, 0) + 1

    async def guarded(
        self, kind: str, request: asyncio.Future[httpx.Response] | object
    ) -> httpx.Response | None:
        try:
            response: httpx.Response = await request  # type: ignore[misc]
        except httpx.HTTPError as exc:
            self.failures.append(f"{kind}: {exc!r}")
            return None
        self.count(kind)
        if response.status_code != 200:
            self.failures.append(f"{kind}: HTTP {response.status_code} {response.text[:300]}")
            return None
        return response

    async def read(self) -> None:
        while self.running:
            response = await self.guarded("GET", self.fleet.entity(REF))
            if response is not None and "errors" in response.json():
                self.failures.append(f"GET: {response.text[:300]}")
            await asyncio.sleep(0.05)

    async def write(self) -> None:
        for n in itertools.count():
            if not self.running:
                return
            response = await self.guarded(
                "mutation", self.fleet.apply(component("checkout", f"Takes the money ({n})"))
            )
            if response is not None and response.json().get("data", {}).get(
                "applyEntities", {}
            ).get("updated") != [REF]:
                self.failures.append(f"mutation: {response.text[:300]}")
            await asyncio.sleep(0.2)

    async def deploy(self) -> None:
        for n in itertools.count():
            if not self.running:
                return
            version = f"2.0.{n}"
            response = await self.guarded("deploy event", self.fleet.deploy(version))
            if response is not None:
                self.versions.append(version)
            await asyncio.sleep(0.3)


async def test_a_rolling_restart_under_load_drops_nothing(
    database_url: str, redis_url: str, cache_prefix: str, tmp_path: Path
) -> None:
    token = await prepare(database_url)
    env = settings(database_url, redis_url, cache_prefix)
    async with fleet(env, tmp_path, token) as three, subscriber(three.ws(), REF) as deploys:
        await deploys.until(lambda s: bool(s.of("connected")), "a connection")
        load = Load(three)
        clients = [
            asyncio.create_task(work())
            for work in (*[load.read] * READERS, load.write, load.deploy)
        ]
        assert three.proxy is not None
        for replica in three.replicas:
            before = dict(load.sent)
            assert await replica.stop() == 0  # SIGTERM: it drained, then exited
            await replica.start()
            await replica.ready()
            await three.proxy.until(replica.name, "UP")
            assert all(load.sent.get(kind, 0) > n for kind, n in before.items()), load.sent
        load.running = False
        await asyncio.gather(*clients)

        assert load.failures == [], load.failures
        assert (
            load.sent["GET"] > 100 and load.sent["mutation"] > 10 and load.sent["deploy event"] > 10
        )
        # The subscription came back by itself: closed with 1012 (Service Restart) by the
        # replica that held it, connected again, and heard every deploy meanwhile.
        await deploys.until(
            lambda s: len(s.of("connected")) == len(s.of("closed")) + 1, "a connection again"
        )
        assert 1012 in {e["code"] for e in deploys.of("closed")}
        assert all(e["retry"] for e in deploys.of("connected")[1:])
        await deploys.until(lambda s: set(load.versions) <= s.versions(), "every deploy")
        # And one made after all three restarts.
        assert (await three.deploy("3.0.0")).json()["outcome"] == "applied"
        await deploys.until(lambda s: "3.0.0" in s.versions(), "the deploy after the restarts")
        assert not deploys.of("error")
    for replica in three.replicas:  # stopping and starting again went without an error
        assert '"level":"error"' not in replica.log_text(), replica.log_text()
