"""The compute scenario: PinCompute's workload pages over emulated clusters.

20,000 PinApps (a quarter of them with a PinScaler), each annotated with one of 500 catalog
components owned by 50 teams, are put in 1 emulated cluster, and again spread over 5
(``bench.compute_data``). Each deployment gets its own app, booted with the PinCompute plugin
and a kubeconfig naming its clusters, as in production: its informers LIST (then watch) every
cluster over HTTP. Two requests are timed through the real ASGI app against a plain Starlette
endpoint answering the same bytes (``bench.harness.inprocess``): a team's workloads
(``pinApps`` filtered by owner) and one workload's page (``pinApp``, without pods: those call
the cluster). Both deployments run side by side and are measured interleaved, so that the
machine's drift between two runs does not pass for a difference. Their queries read the
informers' in-memory stores, indexed by entity: the figure must not grow with the number of
clusters. The 5-cluster/1-cluster ratio of medians is printed and called flat or not (a
statement, never a failure).

The emulator ignores ``limit``: each list is one page holding a whole cluster. kmock replays
every object as ADDED when a watch starts: the timings begin once those replays are over (no
event for a second).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx
import orjson
import yaml

from bench.compute_data import (
    COMPONENTS,
    DEPARTMENTS,
    PINAPPS,
    PINSCALERS,
    TEAMS,
    App,
    Cluster,
    catalog_batch,
    cluster_name,
    cluster_of,
    kubeconfig,
    plan_apps,
    put_direct,
    start_clusters,
    team_name,
)
from bench.harness import BenchFailure
from bench.harness.apps import AtriumApp, atrium, quiet
from bench.harness.database import scratch_database
from bench.harness.inprocess import (
    MEASURED,
    Check,
    Measurement,
    Scenario,
    measure_apps,
    measured_cells,
    page_problems,
)
from bench.harness.tables import print_rows
from bench.harness.timing import frozen_heap
from graph.settings import Settings
from plugins.pincompute import PinComputePlugin
from plugins.pincompute.settings import ComputeSettings
from sources.catalog.store import apply_batch

__all__ = ["run_compute"]

CLUSTER_COUNTS: Final = (1, 5)
PAGE: Final = 50
TEAM: Final = 7  # the team whose workloads are listed (every team has as many)
FLAT: Final = 1.15  # a 5-cluster median within 15% of the 1-cluster one counts as flat
SETTLE_S: Final = 1.0  # no watch event for this long: the watches' replays are over
SMOKE_SETTLE_S: Final = 0.2  # a few hundred objects replay in a few milliseconds
SYNC_TIMEOUT_S: Final = 600.0
BUDGET_S: Final = 150.0

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


# --- Booting and waiting. -------------------------------------------------------------------


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


async def _wait_settled(
    client: httpx.AsyncClient, clusters: tuple[Cluster, ...], settle_s: float
) -> None:
    """Until every informer watches and their replays are over: no event for ``settle_s``."""
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
        await asyncio.sleep(settle_s)


# --- The scenarios. -------------------------------------------------------------------------


def _team_check(expected: int, refs: frozenset[str]) -> Check:
    def check(data: dict[str, Any]) -> list[str]:
        nodes, problems = page_problems(data.get("pinApps"), expected, PAGE)
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
            {"owner": f"group:{team_name(TEAM)}"},
            _team_check(len(team), refs),
        ),
        Scenario(
            "workload page",
            math.inf,
            WORKLOAD_PAGE,
            {
                "cluster": cluster_of(page, clusters),
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
    app: AtriumApp
    emulated: tuple[Cluster, ...]
    steps: dict[str, float] = field(default_factory=dict)
    results: list[Measurement] = field(default_factory=list)

    def requests(self) -> tuple[int, int]:
        """(lists, watches) the app's informers sent to the clusters, over HTTP."""
        sent = [r for c in self.emulated for r in c.emulator.sent if r.method == "GET"]
        return sum(1 for r in sent if not r.is_watch), sum(1 for r in sent if r.is_watch)


@contextlib.asynccontextmanager
async def _deploy(
    database_url: str, apps: list[App], clusters: int, settle_s: float
) -> AsyncIterator[Deployment]:
    names = [cluster_name(slot) for slot in range(clusters)]
    async with start_clusters(*names) as emulated:
        steps: dict[str, float] = {}
        started = time.perf_counter()
        expected: dict[str, tuple[int, int]] = {}
        by_name = {c.name: c for c in emulated}
        for name in names:
            mine = [a for a in apps if cluster_of(a, clusters) == name]
            put_direct(by_name[name], PINAPPS, [a.pinapp() for a in mine])
            put_direct(by_name[name], PINSCALERS, [a.pinscaler() for a in mine if a.scaled])
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
            app = atrium(Settings(database_url=database_url), [PinComputePlugin(compute)])
            started = time.perf_counter()
            async with (
                app.router.lifespan_context(app),
                httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as client,
            ):
                steps["app booted"] = time.perf_counter() - started
                applied = time.perf_counter()
                result = await apply_batch(app.services.database, catalog_batch())
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
                await _wait_settled(client, emulated, settle_s)
                steps["watch replays settled"] = time.perf_counter() - started
                yield deployment


async def run_compute(
    *, total: int = 20_000, quick: bool = False, rounds: int = 100, smoke: bool = False
) -> None:
    """The compute scenario over 1 and over 5 emulated clusters, in a scratch database;
    ``smoke``: one warm-up round, and a shorter quiet time for the watches' replays."""
    begun = time.perf_counter()
    quiet()
    if quick:
        total, rounds = min(total, 2_000), min(rounds, 30)
    warmup = 1 if smoke else 5 if quick else 10
    settle_s = SMOKE_SETTLE_S if smoke else SETTLE_S
    apps = plan_apps(total)
    print(
        f"\ncompute: {total:,} PinApps ({sum(1 for a in apps if a.scaled):,} with a PinScaler) "
        f"of {COMPONENTS} components owned by {TEAMS} teams in {DEPARTMENTS} departments, over "
        f"{' and over '.join(str(c) for c in CLUSTER_COUNTS)} emulated clusters (kmock)"
    )
    async with scratch_database() as scratch, contextlib.AsyncExitStack() as stack:
        deployments: list[Deployment] = []
        for clusters in CLUSTER_COUNTS:
            deployment = await stack.enter_async_context(
                _deploy(scratch.url, apps, clusters, settle_s)
            )
            deployments.append(deployment)
            steps = ", ".join(
                f"{step} {seconds:.1f} s" for step, seconds in deployment.steps.items()
            )
            lists, watches = deployment.requests()
            print(
                f"{clusters} cluster{'s' if clusters > 1 else ''}: {steps} "
                f"({lists} LIST and {watches} watch requests over HTTP)"
            )
        # The loaded state lives for the run.
        with frozen_heap():
            subjects = [(d.app, compute_scenarios(apps, d.clusters)) for d in deployments]
            measured = await measure_apps(subjects, rounds=rounds, warmup=warmup, budget_s=BUDGET_S)
        for deployment, results in zip(deployments, measured, strict=True):
            deployment.results = results
    _print_results(deployments, apps)
    print(f"\ncompute scenario took {time.perf_counter() - begun:.0f} s; scratch database dropped")


def _print_results(deployments: list[Deployment], apps: list[App]) -> None:
    rows = [
        (str(d.clusters), r.scenario.name, *measured_cells(r))
        for d in deployments
        for r in d.results
    ]
    print()
    print_rows(("clusters", "scenario", *MEASURED), rows, left=2)
    samples = min(len(r.app_ms) for d in deployments for r in d.results)
    team = sum(1 for a in apps if a.team == TEAM)
    print(
        f"{samples} samples per scenario and baseline, sequential, after warm-up, the "
        f"deployments interleaved; baseline: a plain Starlette endpoint returning the same "
        f"bytes; team workloads: group:{team_name(TEAM)}'s {team:,} PinApps, the first {PAGE}"
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
