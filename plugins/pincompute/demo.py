"""The demo's cluster: ``atrium serve --demo`` runs an emulated Kubernetes API (the emulator the
tests use, over HTTP on 127.0.0.1) holding a PinApp for each service of the demo organisation,
some with a PinScaler, and PinCompute watches it as it would any cluster, named
``demo (emulated)``.

It behaves like a cluster where the console can tell: a small controller moves each PinApp's
status towards its spec (a replica more ready each second, a new image rolled out, a restart
rolling the pods), keeps one pod per replica, and the pods write log lines as they run, so
``podLogTail`` follows something live. It runs in a thread of its own, in the process that
starts the server (so every worker sees the one cluster), and stops with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import aiohttp.web
import kmock
import yaml

from plugins.pincompute.emulator import (
    DEFAULT_RESOURCES,
    EVENTS,
    PINAPPS,
    PINSCALERS,
    PODS,
    BridgedEmulator,
    PodLog,
    Resource,
    now,
    register,
)

__all__ = ["CLUSTER", "demo_cluster", "demo_workloads"]

log = logging.getLogger("atrium.pincompute.demo")

CLUSTER = "demo (emulated)"
POD_LABEL = "atrium.dev/pinapp"
_TICK = 1.0  # seconds between the controller's rounds
_REGISTRY = "registry.junipermarket.example"
_LOG_LINES = 500  # kept per pod


def demo_workloads(catalog: Path) -> list[dict[str, Any]]:
    """PinApps (and PinScalers for tier-1 services) for the services of a demo catalog: one per
    component of type service, in a namespace named after its system."""
    objects: list[dict[str, Any]] = []
    for path in sorted(catalog.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not isinstance(doc, dict) or doc.get("kind") != "Component":
                continue
            spec = doc.get("spec") or {}
            if spec.get("type") != "service":
                continue
            name = str(doc["metadata"]["name"])
            namespace = str(spec.get("system") or "default").rpartition("/")[2]
            seed = int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)
            replicas = 2 + seed % 3
            annotations = {"atrium.dev/entity-ref": f"component:default/{name}"}
            objects.append(
                {
                    "apiVersion": PINAPPS.api_version,
                    "kind": "PinApp",
                    "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
                    "spec": {
                        "image": f"{_REGISTRY}/{name}:1.{seed % 40}.{seed % 7}",
                        "replicas": replicas,
                        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                        "resources": {
                            "requests": {"cpu": "250m", "memory": "256Mi"},
                            "limits": {"cpu": "1", "memory": "512Mi"},
                        },
                        "env": [{"name": "LOG_LEVEL", "value": "info"}],
                    },
                }
            )
            if "tier-1" in (doc["metadata"].get("tags") or []):
                objects.append(
                    {
                        "apiVersion": PINSCALERS.api_version,
                        "kind": "PinScaler",
                        "metadata": {
                            "name": name,
                            "namespace": namespace,
                            "annotations": annotations,
                        },
                        "spec": {
                            "targetRef": {"name": name},
                            "minReplicas": replicas,
                            "maxReplicas": replicas * 4,
                            "metrics": [{"type": "cpu", "targetAverageUtilization": 70}],
                        },
                    }
                )
    return objects


@contextlib.contextmanager
def demo_cluster(catalog: Path, kubeconfig: Path) -> Iterator[str]:
    """Run the demo's cluster while the block runs; yields the kubeconfig's path, written with
    one context, ``demo (emulated)``."""
    ready = threading.Event()
    stop: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[None]]] = []
    failure: list[BaseException] = []
    url: list[str] = []

    def run() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)  # this thread's own
        task = loop.create_task(_serve(catalog, url, ready))
        stop.append((loop, task))
        try:
            loop.run_until_complete(task)
        except BaseException as exc:  # reported to the starting thread
            failure.append(exc)
            ready.set()
        finally:
            # What the server still runs (a watch's handler, say) ends before the loop does.
            pending = asyncio.all_tasks(loop)
            for leftover in pending:
                leftover.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

    thread = threading.Thread(target=run, name="demo-cluster", daemon=True)
    thread.start()
    ready.wait(30)
    if failure or not url:
        raise RuntimeError(f"the demo's cluster did not start: {failure or 'timed out'}")
    kubeconfig.parent.mkdir(parents=True, exist_ok=True)
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": CLUSTER, "cluster": {"server": url[0]}}],
                "users": [{"name": CLUSTER, "user": {"token": "demo"}}],
                "contexts": [{"name": CLUSTER, "context": {"cluster": CLUSTER, "user": CLUSTER}}],
                "current-context": CLUSTER,
            }
        ),
        encoding="utf-8",
    )
    log.info("demo cluster serving", extra={"cluster": CLUSTER, "url": url[0]})
    try:
        yield str(kubeconfig)
    finally:
        # One cancellation, of the serving task, which stops everything it started; a loop
        # already closed (the server failed) has nothing left to stop.
        loop, task = stop[0]
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(task.cancel)
        thread.join(10)


async def _serve(catalog: Path, url: list[str], ready: threading.Event) -> None:
    emulator = BridgedEmulator()
    register(emulator, DEFAULT_RESOURCES)
    logs: dict[tuple[str, str], PodLog] = {}

    def serve_log(request: kmock.Request) -> kmock.Payload:
        found = logs.get((request.namespace or "", request.name or ""))
        if found is None:
            raise kmock.KubernetesObjectNotFoundError(message=f"no pod {request.name}")
        return found.serve(request.params)

    reactions = emulator**-1
    reactions[kmock.action.CREATE] << 201 << emulator._serve_create  # as the API server answers
    log_route = reactions[kmock.method.GET, PODS.key, kmock.subresource("log")]
    log_route << {"Content-Type": "text/plain"} << serve_log

    async with emulator:
        server = aiohttp.web.Server(emulator, access_log=None)  # no line per request
        listener = await asyncio.get_running_loop().create_server(server, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        base = f"http://127.0.0.1:{port}"
        try:
            async with aiohttp.ClientSession(base_url=base) as session:
                api = _Api(session)
                for obj in demo_workloads(catalog):
                    resource = PINAPPS if obj["kind"] == "PinApp" else PINSCALERS
                    await api.create(resource, obj["metadata"]["namespace"], obj)
                url.append(base)
                ready.set()
                await _control(api, logs)
        finally:
            listener.close()
            await server.shutdown(1)


class _Api:
    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session

    async def create(self, resource: Resource, namespace: str, body: dict[str, Any]) -> None:
        async with self.session.post(resource.path(namespace), json=body) as response:
            response.raise_for_status()

    async def patch(self, resource: Resource, namespace: str, name: str, body: Any) -> None:
        headers = {"Content-Type": "application/merge-patch+json"}
        path = resource.path(namespace, name)
        async with self.session.patch(path, json=body, headers=headers) as response:
            response.raise_for_status()

    async def delete(self, resource: Resource, namespace: str, name: str) -> None:
        async with self.session.delete(resource.path(namespace, name)) as response:
            response.raise_for_status()

    async def items(self, resource: Resource) -> list[dict[str, Any]]:
        path = resource.path(None)
        async with self.session.get(path) as response:
            response.raise_for_status()
            listing: dict[str, Any] = await response.json()
        return list(listing.get("items") or [])


async def _control(api: _Api, logs: dict[tuple[str, str], PodLog]) -> None:
    """The controller: status follows spec, pods follow replicas, logs grow."""
    rng = random.Random(7)
    while True:
        try:
            apps = await api.items(PINAPPS)
            pods = await api.items(PODS)
            scalers = {
                (
                    s["metadata"]["namespace"],
                    (s.get("spec") or {}).get("targetRef", {}).get("name"),
                ): s
                for s in await api.items(PINSCALERS)
            }
            for app in apps:
                key = (app["metadata"]["namespace"], app["metadata"]["name"])
                await _scale(api, app, scalers.get(key))
                await _reconcile(api, app, pods, logs)
            for (_, pod), pod_log in logs.items():
                pod_log.write(_log_line(rng, pod))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("the demo cluster's controller failed a round")
        await asyncio.sleep(_TICK)


async def _scale(api: _Api, app: dict[str, Any], scaler: dict[str, Any] | None) -> None:
    """The PinScaler's part: keep the app's replicas within its bounds."""
    if scaler is None:
        return
    bounds = scaler.get("spec") or {}
    spec = app.setdefault("spec", {})
    replicas = int(spec.get("replicas") or 0)
    wanted = max(int(bounds.get("minReplicas") or 1), replicas)
    wanted = min(int(bounds.get("maxReplicas") or wanted), wanted)
    if wanted != replicas:
        metadata = app["metadata"]
        await api.patch(
            PINAPPS, metadata["namespace"], metadata["name"], {"spec": {"replicas": wanted}}
        )
        spec["replicas"] = wanted


async def _reconcile(
    api: _Api, app: dict[str, Any], pods: list[dict[str, Any]], logs: dict[tuple[str, str], PodLog]
) -> None:
    metadata, spec = app["metadata"], app.get("spec") or {}
    namespace, name = metadata["namespace"], metadata["name"]
    status = app.get("status") or {}
    wanted = int(spec.get("replicas") or 0)
    ready = int(status.get("readyReplicas") or 0)
    # What a rollout replaces the pods for: the image, and a restart's pod-template annotation.
    template = (spec.get("image"), (spec.get("template") or {}).get("annotations"))
    version = hashlib.sha256(repr(template).encode()).hexdigest()[:8]
    rolled = status.get("templateHash") == version
    if not rolled:
        ready = 0  # a new template: the pods are replaced, ready again one by one
    elif ready != wanted:
        ready += 1 if ready < wanted else -1
    if not rolled or ready != int(status.get("readyReplicas") or 0) or "replicas" not in status:
        done = ready == wanted
        condition = {
            "type": "Available",
            "status": "True" if done else "False",
            "reason": "MinimumReplicasAvailable" if done else "RollingOut",
            "lastTransitionTime": now(),
        }
        await api.patch(
            PINAPPS,
            namespace,
            name,
            {
                "status": {
                    "observedGeneration": metadata.get("generation", 1),
                    "replicas": wanted,
                    "readyReplicas": ready,
                    "updatedReplicas": ready,
                    "templateHash": version,
                    "conditions": [condition],
                }
            },
        )
        if not rolled:
            await _event(api, namespace, name, "Rollout", f"rolling out {spec.get('image')}")
    mine = sorted(
        p["metadata"]["name"]
        for p in pods
        if p["metadata"].get("namespace") == namespace
        and (p["metadata"].get("labels") or {}).get(POD_LABEL) == name
    )
    keep = {f"{name}-{version}-{i}" for i in range(ready)}
    for pod in mine:
        if pod not in keep:
            await api.delete(PODS, namespace, pod)
            logs.pop((namespace, pod), None)
    for pod in sorted(keep - set(mine)):
        await api.create(PODS, namespace, _pod(namespace, pod, name, spec))
        started = f"{now()} INFO {pod} started ({spec.get('image')})\n"
        logs[namespace, pod] = PodLog(started, keep=_LOG_LINES)


def _pod(namespace: str, pod: str, app: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod, "namespace": namespace, "labels": {POD_LABEL: app}},
        "spec": {"containers": [{"name": app, "image": spec.get("image")}], "nodeName": "demo-1"},
        "status": {
            "phase": "Running",
            "startTime": now(),
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {
                    "name": app,
                    "ready": True,
                    "restartCount": 0,
                    "image": spec.get("image"),
                    "imageID": f"{spec.get('image')}@sha256:{_digest(pod)}",
                }
            ],
        },
    }


async def _event(api: _Api, namespace: str, name: str, reason: str, message: str) -> None:
    stamp = now()
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{hashlib.sha256(stamp.encode()).hexdigest()[:10]}"},
        "involvedObject": {"kind": "PinApp", "namespace": namespace, "name": name},
        "type": "Normal",
        "reason": reason,
        "message": message,
        "count": 1,
        "lastTimestamp": stamp,
    }
    await api.create(EVENTS, namespace, event)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _log_line(rng: random.Random, pod: str) -> str:
    path = rng.choice(["/healthz", "/api/v1/items", "/api/v1/orders", "/metrics"])
    status = rng.choice([200, 200, 200, 200, 201, 404, 500])
    level = "ERROR" if status >= 500 else "INFO"
    return f"{now()} {level} {pod} GET {path} {status} {rng.randint(2, 90)}ms\n"
