"""The subscriptions scenario: many websocket subscriptions on one replica.

One ``atrium serve`` (``bench.harness.replica``: one worker, as production runs it) on a
scratch database holding one component, with PinCompute following one emulated cluster (kmock,
over HTTP) where one PinApp runs two pods. Client processes of their own open ``SUBSCRIPTIONS``
graphql-transport-ws subscriptions, one a connection: half follow the component's deploys
(``componentDeploys``), half the PinApp's log (``pinAppLogTail``). The replica's resident set is
read before and once every subscription is in place: what one subscription costs. Then one
deploy event is posted to its webhook and the time until each deploys subscriber has it is
noted (wall clock, one machine), then one line written to a pod's log and the same for the
log's. All of it twice, in a fresh replica each: the clients offering permessage-deflate as
Chromium does, then offering nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Final

import httpx
import orjson
import yaml

from bench.compute_data import Cluster, kubeconfig, start_clusters
from bench.harness import BenchFailure
from bench.harness.apps import started
from bench.harness.database import scratch_database
from bench.harness.host import rss
from bench.harness.replica import Replica, running_replicas
from bench.harness.tables import print_rows, print_target
from bench.harness.timing import percentile
from bench.subscriptions_clients import DEPLOYS, LOGS, ClientJob, run_clients
from graph.settings import Settings
from plugins.deployments.service import sign
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch

__all__ = ["run_subscriptions"]

SUBSCRIPTIONS: Final = 5_000
QUICK_SUBSCRIPTIONS: Final = 400
SMOKE_SUBSCRIPTIONS: Final = 20  # each kind on one client process, as with 400
WARM_SUBSCRIPTIONS: Final = 8
PER_PROCESS: Final = 1_250
TARGET_KB: Final = 50.0
TARGET_LAST_S: Final = 2.0
SECRET: Final = "the subscriptions scenario's webhook secret"
COMPONENT: Final = "component:default/checkout"
WORKLOAD: Final = {"c": "bench", "n": "shop", "p": "checkout"}
PODS: Final = ("checkout-a", "checkout-b")
REFRESH_S: Final = 20.0  # a new deploy this often while subscribing: each has a first message
SETTLE_S: Final = 3.0  # after subscriptions come or go, before the replica's memory is read
SMOKE_SETTLE_S: Final = 0.2
KB: Final = 1024

CATALOG: Final = """
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: checkout-team}
spec: {type: team}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: checkout}
spec: {type: service, lifecycle: production, owner: checkout-team}
"""


@dataclass(frozen=True, slots=True)
class Phase:
    deflate: bool
    opened: int
    rss_before: int
    rss_after: int
    deploy_lags: list[float]
    log_lags: list[float]

    @property
    def per_subscription_kb(self) -> float:
        return (self.rss_after - self.rss_before) / self.opened / KB


async def _cluster(cluster: Any) -> dict[str, Any]:
    """The PinApp, its pods and their logs, each log with a first line (the tail sent)."""
    await cluster.put(
        "pinapps",
        "shop",
        {
            "apiVersion": "compute.atrium.dev/v1",
            "kind": "PinApp",
            "metadata": {
                "name": "checkout",
                "namespace": "shop",
                "annotations": {"atrium.dev/entity-ref": COMPONENT},
            },
            "spec": {"image": "registry.example/checkout:1.0", "replicas": 2},
            "status": {"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2},
        },
    )
    logs = {}
    for pod in PODS:
        await cluster.put(
            "pods",
            "shop",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": pod, "labels": {"atrium.dev/pinapp": "checkout"}},
                "spec": {"containers": [{"name": "app", "image": "x"}]},
                "status": {"phase": "Running"},
            },
        )
        logs[pod] = cluster.pod_log("shop", pod, f"{pod} started\n")
    return logs


async def _post_deploy(replica: Replica, deploy_id: str, state: str, version: str) -> None:
    body = orjson.dumps(
        {
            "component": COMPONENT,
            "stage": "production",
            "deploy": {"id": deploy_id, "state": state, "actor": "bench"},
            "release": {"version": version},
        }
    )
    headers = {
        "Content-Type": "application/json",
        "X-Atrium-Delivery": str(uuid.uuid4()),
        "X-Atrium-Signature-256": sign(SECRET, body),
    }
    async with httpx.AsyncClient(timeout=60) as http:
        reply = await http.post(f"{replica.base}/hooks/deployments", content=body, headers=headers)
    if reply.status_code >= 300 or reply.json().get("outcome") != "applied":
        raise replica.failure(f"the deploy event: HTTP {reply.status_code} {reply.text[:300]}")


async def _refresh(replica: Replica) -> None:
    n = 0
    while True:
        n += 1
        await _post_deploy(replica, f"warm-{uuid.uuid4().hex[:8]}", "pending", f"0.{n}.0")
        await asyncio.sleep(REFRESH_S)


async def _receive(pipe: Connection, what: str) -> Any:
    message = await asyncio.get_running_loop().run_in_executor(None, pipe.recv)
    if message[0] == "failed":
        raise BenchFailure(f"a subscriptions client failed: {message[1]}")
    if message[0] != what:
        raise BenchFailure(f"a subscriptions client said {message[0]!r}, not {what!r}")
    return message[1]


@contextlib.asynccontextmanager
async def _clients(jobs: list[ClientJob]) -> AsyncIterator[list[tuple[ClientJob, Connection]]]:
    context = multiprocessing.get_context("spawn")
    started_: list[tuple[ClientJob, Connection, Any]] = []
    try:
        for job in jobs:
            ours, theirs = context.Pipe()
            process = context.Process(target=run_clients, args=(job, theirs), daemon=True)
            process.start()
            started_.append((job, ours, process))
        yield [(job, pipe) for job, pipe, _ in started_]
    finally:
        for _, pipe, _ in started_:
            with contextlib.suppress(OSError):
                pipe.send("close")
        for _, _, process in started_:
            await asyncio.get_running_loop().run_in_executor(None, process.join, 30)
            if process.is_alive():
                process.kill()


def _jobs(url: str, total: int, deflate: bool, event: str) -> list[ClientJob]:
    jobs = []
    for kind, variables, marker in ((DEPLOYS, {"c": COMPONENT}, event), (LOGS, WORKLOAD, event)):
        left = total // 2
        while left > 0:
            count = min(PER_PROCESS, left)
            jobs.append(ClientJob(url, kind, count, deflate, variables, marker))
            left -= count
    return jobs


async def _phase(
    replica: Replica, logs: dict[str, Any], total: int, deflate: bool, settle_s: float
) -> Phase:
    url = f"ws://127.0.0.1:{replica.port}/graphql"
    # Warm: a few subscriptions of each kind made and gone (imports, the first plans).
    event = f"event-{uuid.uuid4().hex[:8]}"  # the deploy's release, the log line's text
    async with _clients(_jobs(url, WARM_SUBSCRIPTIONS, deflate, event)) as warm:
        refresh = asyncio.create_task(_refresh(replica))
        try:
            for _, pipe in warm:
                await _receive(pipe, "ready")
        finally:
            refresh.cancel()
    await asyncio.sleep(settle_s)
    before = rss(replica.pid)
    async with _clients(_jobs(url, total, deflate, event)) as clients:
        refresh = asyncio.create_task(_refresh(replica))
        began = time.perf_counter()
        try:
            opened = sum([await _receive(pipe, "ready") for _, pipe in clients])
        finally:
            refresh.cancel()
        print(
            f"{'with' if deflate else 'without'} permessage-deflate: {opened:,} subscriptions "
            f"in place in {time.perf_counter() - began:.1f} s",
            flush=True,
        )
        await asyncio.sleep(settle_s)
        after = rss(replica.pid)
        if before is None or after is None:
            raise BenchFailure("a replica's memory is read from /proc (Linux)")
        lags: dict[str, list[float]] = {DEPLOYS: [], LOGS: []}
        missed: set[str] = set()
        for kind in (DEPLOYS, LOGS):
            at = time.time()
            if kind == DEPLOYS:
                await _post_deploy(replica, event, "succeeded", event)
            else:
                logs[PODS[0]].write(f"{event}\n")
            for job, pipe in clients:
                if job.kind == kind:
                    lags[kind] += [t - at for t in await _receive(pipe, "got")]
                    missed.update(await _receive(pipe, "missed"))
    for kind, got in lags.items():
        if len(got) != opened // 2:
            raise BenchFailure(
                f"{kind}: {len(got)} of {opened // 2} subscribers had the event; the others: "
                + "; ".join(sorted(missed)[:5])
            )
    return Phase(deflate, opened, before, after, lags[DEPLOYS], lags[LOGS])


def _report(phases: list[Phase], total: int) -> None:
    rows = []
    for phase in phases:
        for kind, lags in ((DEPLOYS, phase.deploy_lags), (LOGS, phase.log_lags)):
            rows.append(
                [
                    "permessage-deflate" if phase.deflate else "no compression",
                    kind,
                    f"{len(lags):,}",
                    f"{percentile(lags, 50) * 1000:,.0f} ms",
                    f"{max(lags) * 1000:,.0f} ms",
                ]
            )
    print(f"\nsubscriptions: {total:,} on one replica, one event each kind")
    print_rows(["websockets", "event", "subscribers", "p50", "last"], rows, left=2)
    print()
    print_rows(
        ["websockets", "RSS before", "RSS with them", "per subscription"],
        [
            [
                "permessage-deflate" if p.deflate else "no compression",
                f"{p.rss_before / KB / KB:,.0f} MB",
                f"{p.rss_after / KB / KB:,.0f} MB",
                f"{p.per_subscription_kb:,.1f} kB",
            ]
            for p in phases
        ],
    )
    for phase in phases:
        name = "with permessage-deflate" if phase.deflate else "without compression"
        print_target(
            f"at most {TARGET_KB:.0f} kB a subscription {name}",
            f"{phase.per_subscription_kb:.1f} kB",
            phase.per_subscription_kb <= TARGET_KB,
            miss="FAIL",
        )
        last = max(phase.deploy_lags + phase.log_lags)
        print_target(
            f"an event reaches the last subscriber within {TARGET_LAST_S:.0f} s {name}",
            f"{last:.2f} s",
            last <= TARGET_LAST_S,
            miss="FAIL",
        )


async def run_subscriptions(*, quick: bool, smoke: bool = False) -> None:
    """``smoke``: a few subscriptions, and short pauses before the memory is read: every step
    taken, nothing measured."""
    total = SMOKE_SUBSCRIPTIONS if smoke else QUICK_SUBSCRIPTIONS if quick else SUBSCRIPTIONS
    settle_s = SMOKE_SETTLE_S if smoke else SETTLE_S
    async with scratch_database() as scratch, start_clusters("bench") as clusters:
        cluster: Cluster = clusters[0]
        # kmock matches each request by scanning those it kept: keep none, or every follow and
        # tail read of thousands of subscribers makes the next slower.
        cluster.emulator.keep_requests = False
        async with started(Settings(database_url=scratch.url)) as app:  # the core's migrations
            batch = await apply_batch(app.services.database, parse_documents(CATALOG, "org.yaml"))
            if batch.errors:
                raise BenchFailure(f"the catalog: {batch.errors}")
        logs = await _cluster(cluster)
        with tempfile.TemporaryDirectory(prefix="atrium-bench-subscriptions-") as tmp:
            path = Path(tmp) / "kubeconfig"
            path.write_text(yaml.safe_dump(kubeconfig(cluster)))
            settings = {
                "ATRIUM_DATABASE_URL": scratch.url,
                "ATRIUM_LOG_LEVEL": "WARNING",
                "ATRIUM_KUBECONFIG": str(path),
                "ATRIUM_DEPLOYMENTS_WEBHOOK_SECRET": SECRET,
                "ATRIUM_DISABLED_PLUGINS": "observability",
                "ATRIUM_SHUTDOWN_GRACE": "0",
            }
            phases = []
            for deflate in (True, False):
                async with running_replicas(["subscriptions"], settings) as [replica]:
                    try:
                        phases.append(await _phase(replica, logs, total, deflate, settle_s))
                    except BenchFailure as exc:
                        raise replica.failure(str(exc)) from None
    _report(phases, total)
