"""The compute scenario: PinCompute's workload pages over emulated clusters.

20,000 PinApps (a quarter of them with a PinScaler), each annotated with one of 500 catalog
components owned by 50 teams, are put in 1 emulated cluster, and again spread over 5. Each
deployment gets its own app, booted with the PinCompute plugin and a kubeconfig naming its
clusters, as in production: its informers LIST (then watch) every cluster over HTTP. Two
requests are timed through the real ASGI app against a plain Starlette endpoint answering the
same bytes, as ``bench.harness`` does: a team's workloads (``pinApps`` filtered by owner) and
one workload's page (``pinApp``, without pods: those call the cluster). Both deployments run
side by side and are measured interleaved, so that the machine's drift between two runs does
not pass for a difference. Their queries read the informers' in-memory stores, indexed by
entity: the figure must not grow with the number of clusters. The 5-cluster/1-cluster ratio of
medians is printed and called flat or not (a statement, never a failure).

The clusters are kmock's Kubernetes API emulator on local ports, from the test harness:
``tests.kube`` is imported here on purpose (run from the repository root, as ``python -m
bench`` is: ``tests`` is not an installed package). Loading 20,000 objects through the
harness's HTTP ``put`` is quadratic (kmock scans every stored object to answer a create: 2,000
puts take 12 s; one cluster's 20,000 would take some 17 minutes), so the objects go into each
emulator's state directly (``emulator.objects[resource, namespace, name] = body``, kmock's own
API), stamped as the harness's emulator stamps a create (uid, creationTimestamp, a fresh
resourceVersion). No client is connected yet, so no watch misses an event; the plugin's
informers then LIST them over HTTP as from a real API server. The emulator ignores ``limit``:
each list is one page holding a whole cluster. kmock replays every object as ADDED when a
watch starts: the timings begin once those replays are over (no event for a second).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import logging
import math
import os
import secrets
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

import asyncpg
import httpx
import orjson
import yaml
from starlette.applications import Starlette

from atrium.app import create_app
from bench.database import _SAFE_NAME, ENV_URL, LOCAL_URL, _with_database
from bench.harness import BenchFailure, Measurement, _timed, _verify, baseline_app, sample
from bench.scenarios import Check, Scenario
from graph.services import Services
from graph.settings import Settings
from plugins.pincompute import PinComputePlugin, emulator
from plugins.pincompute.emulator import Resource
from plugins.pincompute.settings import ComputeSettings
from sources.catalog.documents import ParsedBatch
from sources.catalog.model import validate_entity
from sources.catalog.store import apply_batch
from sources.db import Database

__all__ = ["run_compute"]


class Cluster(Protocol):
    """What is used here of ``tests.kube.Cluster``."""

    name: str
    emulator: Any  # kmock's KubernetesEmulator, as bridged by the harness


# Imported by name, not with an import statement: mypy would follow that into the test
# harness, which is not held to strict mode (`make lint` checks the packages, not tests).
_kube: Any = importlib.import_module("tests.kube")
PINAPPS: Final = emulator.PINAPPS
PINSCALERS: Final = emulator.PINSCALERS


def start_clusters(*names: str) -> contextlib.AbstractAsyncContextManager[tuple[Cluster, ...]]:
    started: contextlib.AbstractAsyncContextManager[tuple[Cluster, ...]]
    started = _kube.start_clusters(*names)
    return started


def kubeconfig(*clusters: Cluster) -> dict[str, Any]:
    config: dict[str, Any] = _kube.kubeconfig(*clusters)
    return config


DEPARTMENTS: Final = 5
TEAMS: Final = 50  # 10 per department
MEMBERS: Final = 4  # users per team
COMPONENTS: Final = 500  # 10 per team
SCALED_EVERY: Final = 4  # one PinApp in 4 has a PinScaler
CLUSTER_COUNTS: Final = (1, 5)
PAGE: Final = 50
TEAM: Final = 7  # the team whose workloads are listed (every team has as many)
FLAT: Final = 1.15  # a 5-cluster median within 15% of the 1-cluster one counts as flat
SETTLE_S: Final = 1.0  # no watch event for this long: the watches' replays are over
SYNC_TIMEOUT_S: Final = 600.0
ORIGIN: Final = "bench:compute"

TEAM_WORKLOADS: Final = """
query TeamWorkloads($owner: String!) {
  pinApps(filter: {owner: $owner}, first: 50) {
    totalCount
    nodes { id name image replicas readyReplicas entity { ref } }
  }
}
"""

WORKLOAD_PAGE: Final = """
query WorkloadPage($cluster: String!, $namespace: String!, $name: String!) {
  pinApp(cluster: $cluster, namespace: $namespace, name: $name) {
    image replicas
    env { name value source }
    scaler { minReplicas maxReplicas }
    entity { ref }
  }
}
"""

CLUSTERS: Final = "{ clusters { name synced healthy pinApps pinScalers lastEventAt lastError } }"


# --- The data. ------------------------------------------------------------------------------


def _team(index: int) -> str:
    return f"team-{index:02d}"


def _component(index: int) -> str:
    """Component ``index``: team ``index // 10``'s, so each team owns 10 in a row."""
    return f"{_team(index * TEAMS // COMPONENTS)}-svc-{index % (COMPONENTS // TEAMS):02d}"


def catalog_batch() -> ParsedBatch:
    """Departments with teams as children, users as members, components owned by teams."""
    documents: list[dict[str, Any]] = []
    for d in range(DEPARTMENTS):
        teams = [_team(t) for t in range(TEAMS) if t * DEPARTMENTS // TEAMS == d]
        documents.append(_group(f"dept-{d}", children=teams, members=[]))
    for t in range(TEAMS):
        members = [f"user-{t:02d}-{m}" for m in range(MEMBERS)]
        documents.append(_group(_team(t), children=[], members=members))
        documents += [
            {
                "apiVersion": "backstage.io/v1alpha1",
                "kind": "User",
                "metadata": {"name": name},
                "spec": {"profile": {"displayName": name, "email": f"{name}@bench.example"}},
            }
            for name in members
        ]
    documents += [
        {
            "apiVersion": "backstage.io/v1alpha1",
            "kind": "Component",
            "metadata": {"name": _component(c), "description": "a generated service"},
            "spec": {
                "type": "service",
                "lifecycle": "production",
                "owner": _team(c * TEAMS // COMPONENTS),
            },
        }
        for c in range(COMPONENTS)
    ]
    return ParsedBatch([(ORIGIN, validate_entity(doc)) for doc in documents], [], {ORIGIN})


def _group(name: str, *, children: list[str], members: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "backstage.io/v1alpha1",
        "kind": "Group",
        "metadata": {"name": name},
        "spec": {"type": "team", "children": children, "members": members},
    }


@dataclass(frozen=True, slots=True)
class App:
    """One generated PinApp: where it goes and what its page must show."""

    index: int
    component: int
    variant: int  # its number among its component's PinApps

    @property
    def team(self) -> int:
        return self.component * TEAMS // COMPONENTS

    @property
    def namespace(self) -> str:
        return _team(self.team)

    @property
    def name(self) -> str:
        return f"{_component(self.component)}-{self.variant:02d}"

    @property
    def entity_ref(self) -> str:
        return f"component:default/{_component(self.component)}"

    @property
    def image(self) -> str:
        version = f"1.{self.variant % 9}.{self.index % 4}"
        return f"registry.example/{_component(self.component)}:{version}"

    @property
    def replicas(self) -> int:
        return 1 + self.index % 6

    @property
    def ready(self) -> int:
        return self.replicas - (1 if self.index % 10 == 0 else 0)

    @property
    def scaled(self) -> bool:
        return self.variant % SCALED_EVERY == 0

    @property
    def bounds(self) -> tuple[int, int]:
        return self.replicas, self.replicas + 4

    def env(self) -> list[dict[str, Any]]:
        return [
            {"name": "LOG_LEVEL", "value": "info"},
            {"name": "REGION", "value": f"region-{self.index % 3}"},
            {"name": "DB_PASSWORD", "value": "not-shown"},
            {"name": "API_KEY", "valueFrom": {"secretKeyRef": {"name": "keys", "key": "api"}}},
            {"name": "FLAGS", "valueFrom": {"configMapKeyRef": {"name": "flags", "key": "all"}}},
        ]

    def expected_env(self) -> list[dict[str, Any]]:
        """``env`` as the API shows it: secret values never."""
        return [
            {"name": "LOG_LEVEL", "value": "info", "source": "value"},
            {"name": "REGION", "value": f"region-{self.index % 3}", "source": "value"},
            {"name": "DB_PASSWORD", "value": None, "source": "hidden"},
            {"name": "API_KEY", "value": None, "source": "secret:keys/api"},
            {"name": "FLAGS", "value": None, "source": "config:flags/all"},
        ]

    def pinapp(self) -> dict[str, Any]:
        return {
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {"app.kubernetes.io/part-of": _component(self.component)},
                "annotations": {"atrium.dev/entity-ref": self.entity_ref},
            },
            "spec": {
                "image": self.image,
                "replicas": self.replicas,
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "resources": {
                    "requests": {"cpu": "250m", "memory": "256Mi"},
                    "limits": {"cpu": "1", "memory": "512Mi"},
                },
                "env": self.env(),
                "ingress": {"host": f"{self.name}.{self.namespace}.apps.example"},
            },
            "status": {
                "replicas": self.replicas,
                "readyReplicas": self.ready,
                "updatedReplicas": self.replicas,
                "conditions": [
                    {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}
                ],
            },
        }

    def pinscaler(self) -> dict[str, Any]:
        low, high = self.bounds
        return {
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "targetRef": {"name": self.name},
                "minReplicas": low,
                "maxReplicas": high,
                "metrics": [{"type": "cpu", "targetAverageUtilization": 70}],
            },
            "status": {"currentReplicas": self.replicas, "desiredReplicas": self.replicas},
        }


def plan_apps(total: int) -> list[App]:
    """``total`` PinApps, as many per component (give or take one)."""
    return [App(i, i % COMPONENTS, i // COMPONENTS) for i in range(total)]


def _cluster_name(slot: int) -> str:
    return f"cluster-{slot + 1}"


def _cluster_of(app: App, clusters: int) -> str:
    return _cluster_name(app.index % clusters)


def _put_direct(cluster: Cluster, resource: Resource, bodies: list[dict[str, Any]]) -> None:
    """Into the emulator's state, stamped as its create would be (see the module docstring)."""
    emulator = cluster.emulator
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for body in bodies:
        metadata = body["metadata"]
        emulator.last_resource_version += 1
        metadata.update(
            uid=str(uuid.uuid4()),
            creationTimestamp=now,
            resourceVersion=str(emulator.last_resource_version),
        )
        body["apiVersion"] = resource.api_version
        body["kind"] = resource.kind
        emulator.objects[resource.key, metadata["namespace"], metadata["name"]] = body


# --- Booting and waiting. -------------------------------------------------------------------


@contextlib.asynccontextmanager
async def _scratch(admin_url: str) -> AsyncIterator[str]:
    """A fresh database on ``admin_url``'s server, dropped on the way out (bench.database's
    naming and URL helpers; its ``scratch_database`` picks its own server)."""
    name = f"atrium_bench_{os.getpid()}_{secrets.token_hex(4)}"
    assert _SAFE_NAME.match(name)  # generated here, never from input: safe to quote as is
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'create database "{name}"')
        try:
            yield _with_database(admin_url, name)
        finally:
            await admin.execute(f'drop database if exists "{name}" with (force)')
    finally:
        await admin.close()


async def _graphql(client: httpx.AsyncClient, query: str) -> dict[str, Any]:
    response = await client.post("http://bench/graphql", json={"query": query})
    payload: dict[str, Any] = orjson.loads(response.content)
    if response.status_code != 200 or payload.get("errors"):
        raise BenchFailure(f"HTTP {response.status_code}: {payload.get('errors')!r:.600}")
    data: dict[str, Any] = payload["data"]
    return data


async def _wait_synced(client: httpx.AsyncClient, expected: dict[str, tuple[int, int]]) -> None:
    """Until ``clusters`` reports every cluster synced and healthy, with all its objects."""
    deadline = time.perf_counter() + SYNC_TIMEOUT_S
    while True:
        clusters = (await _graphql(client, CLUSTERS))["clusters"]
        counts = {c["name"]: (c["pinApps"], c["pinScalers"]) for c in clusters}
        if all(c["synced"] and c["healthy"] for c in clusters) and counts == expected:
            return
        if time.perf_counter() > deadline:
            raise BenchFailure(f"clusters not synced in {SYNC_TIMEOUT_S:.0f} s: {clusters!r:.800}")
        await asyncio.sleep(0.1)


async def _wait_settled(client: httpx.AsyncClient, clusters: tuple[Cluster, ...]) -> None:
    """Until every informer watches and their replays are over: no event for ``SETTLE_S``."""
    deadline = time.perf_counter() + SYNC_TIMEOUT_S
    for cluster in clusters:
        for resource in (PINAPPS, PINSCALERS):
            while cluster.emulator.open_watches[resource.plural] < 1:
                if time.perf_counter() > deadline:
                    raise BenchFailure(f"{cluster.name}: no watch of {resource.plural}")
                await asyncio.sleep(0.05)
    last: list[Any] = []
    while True:
        clusters_now = (await _graphql(client, CLUSTERS))["clusters"]
        now = [(c["lastEventAt"], c["healthy"]) for c in clusters_now]
        if now == last and all(healthy for _, healthy in now):
            return
        if time.perf_counter() > deadline:
            raise BenchFailure("the informers' watches did not settle")
        last = now
        await asyncio.sleep(SETTLE_S)


# --- The scenarios. -------------------------------------------------------------------------


def _team_check(expected: int, refs: frozenset[str]) -> Check:
    def check(data: dict[str, Any]) -> list[str]:
        page = data.get("pinApps") or {}
        nodes = page.get("nodes") or []
        problems = []
        if page.get("totalCount") != expected:
            problems.append(f"totalCount is {page.get('totalCount')}, expected {expected}")
        if len(nodes) != min(PAGE, expected):
            problems.append(f"{len(nodes)} nodes, expected {min(PAGE, expected)}")
        strangers = {str((n.get("entity") or {}).get("ref")) for n in nodes} - refs
        if strangers:
            problems.append(f"nodes of other entities: {sorted(strangers)[:3]}")
        if any(not n.get("image") or n.get("replicas") is None for n in nodes):
            problems.append("a node has no image or replicas")
        return problems

    return check


def _page_check(app: App) -> Check:
    low, high = app.bounds
    expected = {
        "image": app.image,
        "replicas": app.replicas,
        "env": app.expected_env(),
        "scaler": {"minReplicas": low, "maxReplicas": high},
        "entity": {"ref": app.entity_ref},
    }

    def check(data: dict[str, Any]) -> list[str]:
        found = data.get("pinApp")
        if not found:
            return ["pinApp is null"]
        return [
            f"{key} is {found.get(key)!r}, expected {value!r}"
            for key, value in expected.items()
            if found.get(key) != value
        ]

    return check


def compute_scenarios(apps: list[App], clusters: int) -> list[Scenario]:
    team = [a for a in apps if a.team == TEAM]
    refs = frozenset(a.entity_ref for a in team)
    # A scaled workload of the team, the same whatever the number of clusters: in the last
    # of 5 clusters (any cluster would do: the store is keyed by cluster, namespace, name).
    scaled = [a for a in team if a.scaled]
    last = CLUSTER_COUNTS[-1] - 1
    page = next((a for a in scaled if a.index % CLUSTER_COUNTS[-1] == last), scaled[0])
    return [
        Scenario(
            "team workloads",
            math.inf,  # no target: what matters is that it stays flat across cluster counts
            TEAM_WORKLOADS,
            {"owner": f"group:{_team(TEAM)}"},
            _team_check(len(team), refs),
        ),
        Scenario(
            "workload page",
            math.inf,
            WORKLOAD_PAGE,
            {
                "cluster": _cluster_of(page, clusters),
                "namespace": page.namespace,
                "name": page.name,
            },
            _page_check(page),
        ),
    ]


# --- The deployments, measured side by side. ------------------------------------------------


@dataclass(slots=True)
class Deployment:
    """Emulated clusters holding every PinApp, and an app whose informers mirror them."""

    clusters: int
    app: Starlette
    emulated: tuple[Cluster, ...]
    steps: dict[str, float] = field(default_factory=dict)
    results: list[Measurement] = field(default_factory=list)

    def requests(self) -> tuple[int, int]:
        """(lists, watches) the app's informers sent to the clusters, over HTTP."""
        sent = [r for c in self.emulated for r in c.emulator.sent if r.method == "GET"]
        return sum(1 for r in sent if not r.is_watch), sum(1 for r in sent if r.is_watch)


@contextlib.asynccontextmanager
async def _deploy(database_url: str, apps: list[App], clusters: int) -> AsyncIterator[Deployment]:
    names = [_cluster_name(slot) for slot in range(clusters)]
    async with start_clusters(*names) as emulated:
        steps: dict[str, float] = {}
        started = time.perf_counter()
        expected: dict[str, tuple[int, int]] = {}
        by_name = {c.name: c for c in emulated}
        for name in names:
            mine = [a for a in apps if _cluster_of(a, clusters) == name]
            _put_direct(by_name[name], PINAPPS, [a.pinapp() for a in mine])
            _put_direct(by_name[name], PINSCALERS, [a.pinscaler() for a in mine if a.scaled])
            expected[name] = (len(mine), sum(1 for a in mine if a.scaled))
        steps["emulators loaded"] = time.perf_counter() - started

        with tempfile.TemporaryDirectory(prefix="atrium-bench-kube-") as tmp:
            path = Path(tmp) / "kubeconfig"
            path.write_text(yaml.safe_dump(kubeconfig(*emulated)))
            compute = ComputeSettings(
                kubeconfig=str(path),
                # One watch for the whole run: each new one makes kmock replay every object.
                compute_watch_timeout=3600,
            )
            app = create_app(
                Settings(database_url=database_url), plugins=[PinComputePlugin(compute)]
            )
            started = time.perf_counter()
            async with (
                app.router.lifespan_context(app),
                httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as client,
            ):
                steps["app booted"] = time.perf_counter() - started
                services: Services = app.state.services
                applied = time.perf_counter()
                result = await apply_batch(services.database, catalog_batch())
                if result.errors:
                    raise BenchFailure(f"catalog: {result.errors[0]}")
                if result.created:  # the second deployment finds it there
                    steps["catalog applied"] = time.perf_counter() - applied
                await _wait_synced(client, expected)
                steps["every cluster listed and synced, from boot"] = time.perf_counter() - started
                deployment = Deployment(clusters, app, emulated, steps)
                lists, _ = deployment.requests()
                if lists < 2 * clusters:  # a PinApp and a PinScaler informer per cluster
                    raise BenchFailure(f"{lists} LIST requests reached {clusters} clusters")
                started = time.perf_counter()
                await _wait_settled(client, emulated)
                steps["watch replays settled"] = time.perf_counter() - started
                yield deployment


async def _measure(
    deployments: list[Deployment],
    apps: list[App],
    *,
    rounds: int,
    warmup: int,
    budget_s: float,
) -> None:
    """bench.harness.measure, over several apps at once: every (deployment, scenario) pair in
    each round, in an order that rotates, so that a slow moment of the machine hits every
    deployment alike rather than whichever was measured then."""
    pairs: list[tuple[Measurement, Database, httpx.AsyncClient, httpx.AsyncClient, bytes]] = []
    clients: list[httpx.AsyncClient] = []
    try:
        for deployment in deployments:
            client = httpx.AsyncClient(transport=httpx.ASGITransport(app=deployment.app))
            clients.append(client)
            db = deployment.app.state.services.database
            for scenario in compute_scenarios(apps, deployment.clusters):
                payload = orjson.dumps(scenario.payload)
                _, first = await _timed(client, payload)
                _verify(scenario, first)
                app = baseline_app(first.content, first.headers["content-type"])
                baseline = httpx.AsyncClient(transport=httpx.ASGITransport(app=app))
                clients.append(baseline)
                result = Measurement(scenario, first.content)
                deployment.results.append(result)
                pairs.append((result, db, client, baseline, payload))
        for _ in range(warmup):
            for result, _db, client, baseline, payload in pairs:
                _, response = await _timed(client, payload)
                if response.content != result.body:
                    _verify(result.scenario, response)
                await _timed(baseline, payload)

        started = time.perf_counter()
        for round_ in range(rounds):
            if round_ >= 20 and time.perf_counter() - started > budget_s:
                break
            shift = round_ % len(pairs)
            for index in [*range(shift, len(pairs)), *range(shift)]:
                result, db, client, baseline, payload = pairs[index]
                await sample(result, db, client, baseline, payload, app_first=round_ % 2 == 0)
    finally:
        for client in clients:
            await client.aclose()


async def run_compute(
    admin_url: str, *, total: int = 20_000, quick: bool = False, rounds: int = 100
) -> None:
    """The compute scenario over 1 and over 5 emulated clusters, in a scratch database."""
    started = time.perf_counter()
    logging.getLogger("atrium").setLevel(logging.WARNING)
    if quick:
        total, rounds = min(total, 2_000), min(rounds, 30)
    warmup = 5 if quick else 10
    apps = plan_apps(total)
    print(
        f"\ncompute: {total:,} PinApps ({sum(1 for a in apps if a.scaled):,} with a PinScaler) "
        f"of {COMPONENTS} components owned by {TEAMS} teams in {DEPARTMENTS} departments, over "
        f"{' and over '.join(str(c) for c in CLUSTER_COUNTS)} emulated clusters (kmock)"
    )
    async with _scratch(admin_url) as url, contextlib.AsyncExitStack() as stack:
        deployments: list[Deployment] = []
        for clusters in CLUSTER_COUNTS:
            deployment = await stack.enter_async_context(_deploy(url, apps, clusters))
            deployments.append(deployment)
            steps = ", ".join(
                f"{step} {seconds:.1f} s" for step, seconds in deployment.steps.items()
            )
            lists, watches = deployment.requests()
            print(
                f"{clusters} cluster{'s' if clusters > 1 else ''}: {steps} "
                f"({lists} LIST and {watches} watch requests over HTTP)"
            )
        # The loaded state lives for the run: keep the collector from rescanning it in the
        # timings, as bench.run does.
        gc.collect()
        gc.freeze()
        try:
            await _measure(deployments, apps, rounds=rounds, warmup=warmup, budget_s=150.0)
        finally:
            gc.unfreeze()
    _print_results(deployments, apps)
    print(
        f"\ncompute scenario took {time.perf_counter() - started:.0f} s; scratch database dropped"
    )


def _queries(values: list[int]) -> str:
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}-{high}"


def _rows(header: Sequence[str], rows: Sequence[Sequence[str]]) -> Iterator[str]:
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    for i, row in enumerate((header, *rows)):
        yield "  ".join(
            cell.ljust(width) if column < 2 else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        )
        if i == 0:
            yield "  ".join("-" * width for width in widths)


def _print_results(deployments: list[Deployment], apps: list[App]) -> None:
    header = (
        "clusters",
        "scenario",
        "median ms",
        "p95 ms",
        "baseline median ms",
        "ratio",
        "SQL/req",
    )
    rows = [
        (
            str(d.clusters),
            r.scenario.name,
            f"{r.median:.2f}",
            f"{r.p95:.2f}",
            f"{r.baseline_median:.2f}",
            f"{r.ratio:.1f}x",
            _queries(r.queries),
        )
        for d in deployments
        for r in d.results
    ]
    print()
    for line in _rows(header, rows):
        print(line)
    samples = min(len(r.app_ms) for d in deployments for r in d.results)
    team = sum(1 for a in apps if a.team == TEAM)
    print(
        f"{samples} samples per scenario and baseline, sequential, after warm-up, the "
        f"deployments interleaved; baseline: a plain Starlette endpoint returning the same "
        f"bytes; team workloads: group:{_team(TEAM)}'s {team:,} PinApps, the first {PAGE}"
    )
    one, many = deployments[0], deployments[-1]
    for few, lots in zip(one.results, many.results, strict=True):
        ratio = lots.median / few.median
        baselines = lots.baseline_median / few.baseline_median
        verdict = "flat" if ratio <= FLAT else "GROWS"
        print(
            f"{few.scenario.name}: {many.clusters}-cluster/{one.clusters}-cluster ratio of "
            f"medians {ratio:.2f} ({lots.median:.2f} / {few.median:.2f} ms; of the baselines' "
            f"{baselines:.2f}): {verdict} (flat: at most {FLAT:.2f}, the noise of this measure)"
        )
    for d in deployments:
        for r in d.results:
            if r.differing:
                print(
                    f"note: {d.clusters} clusters, {r.scenario.name}: {r.differing} responses "
                    "differed from the first (still valid)"
                )


if __name__ == "__main__":  # python -m bench.compute [--quick]
    asyncio.run(run_compute(os.environ.get(ENV_URL) or LOCAL_URL, quick="--quick" in sys.argv[1:]))
