"""The demo cluster's controller: what makes the emulated API server behave like a cluster.

Each round (a second) a PinApp's ready replicas move one step towards its spec, a PinScaler
keeps replicas within its bounds, a new image or a restart rolls the pods (with an event),
there is one pod per replica, and every running pod writes a log line. A PinApp annotated
``demo.atrium.dev/crash-looping-pods: "N"`` has N pods that never become ready: they crash
every little while (restarts counted, a ``BackOff`` warning event, the crash in their log),
so the demo has a workload that needs attention.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
from dataclasses import dataclass, field
from typing import Any, Final

import aiohttp

from plugins.pincompute.emulator import (
    EVENTS,
    PINAPPS,
    PINSCALERS,
    PODS,
    PodLog,
    Resource,
    now,
)

__all__ = ["CRASH_LOOPING", "POD_LABEL", "Api", "Controller"]

log = logging.getLogger("atrium.pincompute.demo")

POD_LABEL: Final = "atrium.dev/pinapp"
CRASH_LOOPING: Final = "demo.atrium.dev/crash-looping-pods"
TICK: Final = 1.0  # seconds between the controller's rounds
LOG_LINES: Final = 500  # kept per pod
FIRST_CRASH: Final = 3  # rounds a crash-looping pod runs before its first crash
CRASH_EVERY: Final = 15  # rounds between its crashes after that (the kubelet's back-off)


class Api:
    """The few calls the controller makes to the emulated API server."""

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


@dataclass(slots=True)
class Controller:
    api: Api
    logs: dict[tuple[str, str], PodLog]
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    rounds: int = 0
    # Crash-looping pods: (namespace, pod) → the round it started, its restarts, its image.
    crashing: dict[tuple[str, str], tuple[int, int, str]] = field(default_factory=dict)

    async def run(self) -> None:
        """Status follows spec, pods follow replicas, logs grow, until cancelled."""
        while True:
            try:
                await self.round()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("the demo cluster's controller failed a round")
            await asyncio.sleep(TICK)

    async def round(self) -> None:
        self.rounds += 1
        apps = await self.api.items(PINAPPS)
        pods = await self.api.items(PODS)
        scalers = {
            (s["metadata"]["namespace"], (s.get("spec") or {}).get("targetRef", {}).get("name")): s
            for s in await self.api.items(PINSCALERS)
        }
        for app in apps:
            key = (app["metadata"]["namespace"], app["metadata"]["name"])
            await _scale(self.api, app, scalers.get(key))
            await self.reconcile(app, pods)
        for key, pod_log in self.logs.items():
            if key in self.crashing:
                await self.crash_when_due(key)
            else:
                pod_log.write(_log_line(self.rng))

    async def reconcile(self, app: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        metadata, spec = app["metadata"], app.get("spec") or {}
        namespace, name = metadata["namespace"], metadata["name"]
        status = app.get("status") or {}
        wanted = int(spec.get("replicas") or 0)
        annotations = metadata.get("annotations") or {}
        broken = min(wanted, int(annotations.get(CRASH_LOOPING) or 0))
        serving = wanted - broken
        ready = int(status.get("readyReplicas") or 0)
        # What a rollout replaces the pods for: the image, and a restart's pod-template
        # annotation.
        template = (spec.get("image"), (spec.get("template") or {}).get("annotations"))
        version = hashlib.sha256(repr(template).encode()).hexdigest()[:8]
        rolled = status.get("templateHash") == version
        if not rolled:
            ready = 0  # a new template: the pods are replaced, ready again one by one
        elif ready != serving:
            ready += 1 if ready < serving else -1
        done = ready == serving
        if not done:
            condition = {"type": "Available", "status": "False", "reason": "RollingOut"}
        elif broken:
            condition = {
                "type": "Available",
                "status": "False",
                "reason": "MinimumReplicasUnavailable",
                "message": f"{broken} of {wanted} pods crash-looping (CrashLoopBackOff)",
            }
        else:
            condition = {
                "type": "Available",
                "status": "True",
                "reason": "MinimumReplicasAvailable",
            }
        before: dict[str, Any] = next(iter(status.get("conditions") or []), {})
        if (
            not rolled
            or ready != int(status.get("readyReplicas") or 0)
            or "replicas" not in status
            or before.get("reason") != condition["reason"]
        ):
            await self.api.patch(
                PINAPPS,
                namespace,
                name,
                {
                    "status": {
                        "observedGeneration": metadata.get("generation", 1),
                        "replicas": wanted,
                        "readyReplicas": ready,
                        # Crash-looping pods run the new template too; they are just not ready.
                        "updatedReplicas": ready + (broken if done else 0),
                        "templateHash": version,
                        "conditions": [condition | {"lastTransitionTime": now()}],
                    }
                },
            )
            if not rolled:
                await _event(
                    api=self.api,
                    namespace=namespace,
                    name=name,
                    reason="Rollout",
                    message=f"rolling out {spec.get('image')}",
                )
        mine = sorted(
            p["metadata"]["name"]
            for p in pods
            if p["metadata"].get("namespace") == namespace
            and (p["metadata"].get("labels") or {}).get(POD_LABEL) == name
        )
        keep = {f"{name}-{version}-{i}": False for i in range(ready)}
        if done:
            keep |= {f"{name}-{version}-{serving + i}": True for i in range(broken)}
        for pod in mine:
            if pod not in keep:
                await self.api.delete(PODS, namespace, pod)
                self.logs.pop((namespace, pod), None)
                self.crashing.pop((namespace, pod), None)
        for pod, crash_looping in sorted(keep.items()):
            if pod in mine:
                continue
            image = str(spec.get("image") or "")
            await self.api.create(
                PODS, namespace, _pod(namespace, pod, name, image, ready=not crash_looping)
            )
            started = f"INFO started ({image})\n"
            self.logs[namespace, pod] = PodLog(started, keep=LOG_LINES)
            if crash_looping:
                self.crashing[namespace, pod] = (self.rounds, 0, image)

    async def crash_when_due(self, key: tuple[str, str]) -> None:
        """A crash-looping pod's round: it crashes when due, is restarted, and says so."""
        namespace, pod = key
        since, restarts, image = self.crashing[key]
        due = since + FIRST_CRASH + restarts * CRASH_EVERY
        if self.rounds < due:
            return
        restarts += 1
        self.crashing[key] = (since, restarts, image)
        app = pod.rsplit("-", 2)[0]
        stamp = now()
        # The kubelet times each line and the console names its pod: the text is the app's.
        self.logs[key].write(
            "ERROR loading the model: MemoryError: 612Mi needed, the container is limited to "
            f"512Mi\nINFO started (restart {restarts})\n"
        )
        await self.api.patch(
            PODS,
            namespace,
            pod,
            {"status": {"containerStatuses": [_crashed(app, pod, image, restarts, stamp)]}},
        )
        message = f"Back-off restarting failed container {app} in pod {pod}"
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{pod}.backoff"},
            "involvedObject": {"kind": "Pod", "namespace": namespace, "name": pod},
            "type": "Warning",
            "reason": "BackOff",
            "message": message,
            "count": restarts,
            "lastTimestamp": stamp,
        }
        if restarts == 1:
            await self.api.create(EVENTS, namespace, event)
        else:
            await self.api.patch(
                EVENTS, namespace, f"{pod}.backoff", {"count": restarts, "lastTimestamp": stamp}
            )


async def _scale(api: Api, app: dict[str, Any], scaler: dict[str, Any] | None) -> None:
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


def _pod(namespace: str, pod: str, app: str, image: str, *, ready: bool) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod, "namespace": namespace, "labels": {POD_LABEL: app}},
        "spec": {"containers": [{"name": app, "image": image}], "nodeName": "demo-1"},
        "status": {
            "phase": "Running",
            "startTime": now(),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [
                {
                    "name": app,
                    "ready": ready,
                    "restartCount": 0,
                    "image": image,
                    "imageID": f"{image}@sha256:{_digest(pod)}",
                }
            ],
        },
    }


def _crashed(app: str, pod: str, image: str, restarts: int, stamp: str) -> dict[str, Any]:
    """A crash-looping container's status, as the kubelet reports it between restarts."""
    return {
        "name": app,
        "ready": False,
        "restartCount": restarts,
        "image": image,
        "imageID": f"{image}@sha256:{_digest(pod)}",
        "state": {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off restarting failed container {app} in pod {pod}",
            }
        },
        "lastState": {
            "terminated": {
                "exitCode": 137,
                "reason": "OOMKilled",
                "startedAt": stamp,
                "finishedAt": stamp,
            }
        },
    }


async def _event(*, api: Api, namespace: str, name: str, reason: str, message: str) -> None:
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


def _log_line(rng: random.Random) -> str:
    """An access log line as an app writes it: the kubelet times it (the console shows that
    time) and the console names its pod, so the text holds neither."""
    path = rng.choice(["/healthz", "/api/v1/items", "/api/v1/orders", "/metrics"])
    status = rng.choice([200, 200, 200, 200, 201, 404, 500])
    level = "ERROR" if status >= 500 else "INFO"
    return f"{level} GET {path} {status} {rng.randint(2, 90)}ms\n"
