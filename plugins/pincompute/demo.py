"""The demo's cluster: ``atrium serve --demo`` runs an emulated Kubernetes API (the emulator the
tests use, over HTTP on 127.0.0.1) holding, for each service of the demo organisation, a
production PinApp in a namespace named after its system (with a PinScaler for tier-1 ones) and
a staging PinApp in ``<system>-staging``, and PinCompute watches it as it would any cluster,
named ``demo (emulated)``. The deployments plugin's demo sets their images to the releases its
history says each stage runs; until then they run a placeholder release.

It behaves like a cluster where the console can tell (``demo_controller``): each PinApp's
status moves towards its spec, one pod per replica, pods that write log lines as they run, so
``podLogTail`` follows something live; and one service (``CRASH_LOOPING_SERVICE``) has a pod
crash-looping in production, so something needs attention. It runs in a thread of its own, in
the process that starts the server (so every worker sees the one cluster), and stops with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import aiohttp.web
import kmock
import yaml

from plugins.pincompute.demo_controller import CRASH_LOOPING, Api, Controller
from plugins.pincompute.emulator import (
    DEFAULT_RESOURCES,
    PINAPPS,
    PINSCALERS,
    PODS,
    BridgedEmulator,
    PodLog,
    register,
)

__all__ = ["CLUSTER", "CRASH_LOOPING_SERVICE", "STAGING_SUFFIX", "demo_cluster", "demo_workloads"]

log = logging.getLogger("atrium.pincompute.demo")

CLUSTER = "demo (emulated)"
STAGING_SUFFIX = "-staging"  # a system's staging namespace: ``<system>-staging``
# The service whose production PinApp has a pod crash-looping (its model outgrew its memory).
CRASH_LOOPING_SERVICE = "recommendations-service"
_REGISTRY = "registry.junipermarket.example"


def demo_workloads(catalog: Path) -> list[dict[str, Any]]:
    """PinApps for the services of a demo catalog: one per component of type service in a
    namespace named after its system (with a PinScaler for tier-1 services), and one for its
    staging in ``<system>-staging``."""
    objects: list[dict[str, Any]] = []
    for path in sorted(catalog.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not isinstance(doc, dict) or doc.get("kind") != "Component":
                continue
            spec = doc.get("spec") or {}
            if spec.get("type") != "service":
                continue
            name = str(doc["metadata"]["name"])
            system = str(spec.get("system") or "default").rpartition("/")[2]
            seed = int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)
            replicas = 2 + seed % 3
            annotations = {"atrium.dev/entity-ref": f"component:default/{name}"}
            image = f"{_REGISTRY}/{name}:1.{seed % 40}.{seed % 7}"
            production = _pinapp(name, system, annotations, image, replicas, "250m", "256Mi")
            if name == CRASH_LOOPING_SERVICE:
                production["metadata"]["annotations"] = annotations | {CRASH_LOOPING: "1"}
            objects.append(production)
            staging = f"{system}{STAGING_SUFFIX}"
            objects.append(_pinapp(name, staging, annotations, image, 1, "100m", "128Mi"))
            if "tier-1" in (doc["metadata"].get("tags") or []):
                objects.append(
                    {
                        "apiVersion": PINSCALERS.api_version,
                        "kind": "PinScaler",
                        "metadata": {
                            "name": name,
                            "namespace": system,
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


def _pinapp(
    name: str,
    namespace: str,
    annotations: dict[str, str],
    image: str,
    replicas: int,
    cpu: str,
    memory: str,
) -> dict[str, Any]:
    return {
        "apiVersion": PINAPPS.api_version,
        "kind": "PinApp",
        "metadata": {"name": name, "namespace": namespace, "annotations": dict(annotations)},
        "spec": {
            "image": image,
            "replicas": replicas,
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
            "resources": {
                "requests": {"cpu": cpu, "memory": memory},
                "limits": {"cpu": "1", "memory": "512Mi"},
            },
            "env": [{"name": "LOG_LEVEL", "value": "info"}],
        },
    }


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
        # No line per request. A watch whose client went away ends then, as on a real API
        # server, instead of holding the stop up for the shutdown's whole second below.
        server = aiohttp.web.Server(emulator, access_log=None, handler_cancellation=True)
        listener = await asyncio.get_running_loop().create_server(server, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        base = f"http://127.0.0.1:{port}"
        try:
            async with aiohttp.ClientSession(base_url=base) as session:
                api = Api(session)
                for obj in demo_workloads(catalog):
                    resource = PINAPPS if obj["kind"] == "PinApp" else PINSCALERS
                    await api.create(resource, obj["metadata"]["namespace"], obj)
                url.append(base)
                ready.set()
                await Controller(api, logs).run()
        finally:
            listener.close()
            await server.shutdown(1)
