"""PinCompute's running state: clusters, informers, stores, and the calls made on demand."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import plugins.pincompute.kube as kube
from graph.plugin import Fanout
from plugins.pincompute.clusters import Cluster, connect_clusters
from plugins.pincompute.informer import GROUP, VERSION, Informer, Resource
from plugins.pincompute.settings import ComputeSettings
from plugins.pincompute.store import Key, ObjectStore, StoredObject

__all__ = ["PINAPP", "PINSCALER", "Compute", "ComputeError", "running"]

PINAPP = Resource("PinApp", "pinapps")
PINSCALER = Resource("PinScaler", "pinscalers")
POD_LABEL = "atrium.dev/pinapp"
MERGE_PATCH = "application/merge-patch+json"


def pod_of(item: dict[str, Any], key: Key) -> bool:
    """Whether a pod (as listed) belongs to the PinApp ``key`` (its ``atrium.dev/pinapp``)."""
    labels = (item.get("metadata") or {}).get("labels") or {}
    return bool(labels.get(POD_LABEL) == key.name)


class ComputeError(Exception):
    """A cluster refused or failed a call; the message says which and why."""


def _started_by_subscriber(pod: tuple[str, str, str]) -> Any:
    raise AssertionError(f"the follow of {pod} is made by its first subscriber")


@dataclass(slots=True)
class Compute:
    settings: ComputeSettings
    clusters: dict[str, Cluster]
    pinapps: ObjectStore = field(default_factory=lambda: ObjectStore("PinApp"))
    pinscalers: ObjectStore = field(default_factory=lambda: ObjectStore("PinScaler"))
    informers: list[Informer] = field(default_factory=list)
    # (cluster, namespace, kind) → (fetched at, items): pods and events, briefly cached.
    # Pods' logs followed, one follow a pod for every subscriber (``logs.PodFollow``).
    follows: Fanout[tuple[str, str, str], Any] = field(
        default_factory=lambda: Fanout(_started_by_subscriber, name="log of")
    )
    _cache: dict[tuple[str, str, str], tuple[float, list[dict[str, Any]]]] = field(
        default_factory=dict
    )

    def cluster(self, name: str) -> Cluster:
        try:
            return self.clusters[name]
        except KeyError:
            raise ComputeError(f"no cluster named {name}") from None

    def store(self, kind: str) -> ObjectStore:
        return self.pinapps if kind == "PinApp" else self.pinscalers

    def scaler_for(self, key: Key) -> Any:
        """The PinScaler pointing at a PinApp (by spec.targetRef.name in its namespace)."""
        return next(iter(self.scalers_of(key)), None)

    def scalers_of(self, key: Key) -> list[StoredObject]:
        """Every PinScaler pointing at a PinApp (by spec.targetRef.name in its namespace)."""
        return [
            scaler
            for scaler in self.pinscalers.in_namespace(key.namespace)
            if scaler.key.cluster == key.cluster
            and ((scaler.body.get("spec") or {}).get("targetRef") or {}).get("name") == key.name
        ]

    def problems(self, clusters: list[str] | None = None) -> dict[str, str]:
        """Clusters whose data is missing or stale, with why."""
        found = {}
        for name, cluster in self.clusters.items():
            if clusters is not None and name not in clusters:
                continue
            if cluster.problem:
                found[name] = cluster.problem
        return found

    def _timeout(self) -> tuple[float, float]:
        return (self.settings.compute_request_timeout, self.settings.compute_request_timeout)

    async def namespace_items(
        self, cluster: str, namespace: str, kind: str
    ) -> list[dict[str, Any]]:
        """Pods or events of one namespace, from a cache a few seconds fresh; one call per
        namespace serves every workload in it (the loaders batch by namespace)."""
        cache_key = (cluster, namespace, kind)
        cached = self._cache.get(cache_key)
        now = time.monotonic()
        if cached is not None and now - cached[0] < self.settings.compute_pod_cache_seconds:
            return cached[1]
        core = self.cluster(cluster).core
        try:
            if kind == "pods":
                result = await core.list_namespaced_pod(
                    namespace, label_selector=POD_LABEL, _request_timeout=self._timeout()
                )
            else:
                result = await core.list_namespaced_event(
                    namespace,
                    field_selector=f"involvedObject.namespace={namespace}",
                    _request_timeout=self._timeout(),
                )
        except (TimeoutError, kube.ApiException, OSError) as exc:
            raise ComputeError(
                f"cluster {cluster}: listing {kind} in {namespace} failed: {_why(exc)}"
            ) from exc
        items = [item.to_dict() for item in result.items]
        self._cache[cache_key] = (now, items)
        return items

    async def pod_log(
        self,
        cluster: str,
        namespace: str,
        pod: str,
        *,
        container: str | None,
        tail_lines: int | None,
        since_seconds: int | None,
        previous: bool,
        timestamps: bool,
    ) -> str:
        try:
            response = await self.cluster(cluster).core.read_namespaced_pod_log(
                pod,
                namespace,
                container=container,
                tail_lines=tail_lines,
                since_seconds=since_seconds,
                previous=previous,
                timestamps=timestamps,
                _preload_content=False,
                _request_timeout=self._timeout(),
            )
            try:
                raw: bytes = await response.read()
                _check_status(response.status, raw)
                return raw.decode("utf-8", errors="replace")
            finally:
                response.release()
        except (TimeoutError, kube.ApiException, OSError) as exc:
            raise ComputeError(
                f"cluster {cluster}: reading the log of {namespace}/{pod} failed: {_why(exc)}"
            ) from exc

    async def follow_log(
        self,
        cluster: str,
        namespace: str,
        pod: str,
        *,
        container: str | None,
        tail_lines: int | None,
        timestamps: bool = False,
    ) -> AsyncIterator[str]:
        """Lines as the pod writes them, until it stops or the subscriber goes away."""
        try:
            response = await self.cluster(cluster).core.read_namespaced_pod_log(
                pod,
                namespace,
                container=container,
                tail_lines=tail_lines,
                timestamps=timestamps,
                follow=True,
                _preload_content=False,
                _request_timeout=(self.settings.compute_request_timeout, None),
            )
        except (TimeoutError, kube.ApiException, OSError) as exc:
            raise ComputeError(
                f"cluster {cluster}: following the log of {namespace}/{pod} failed: {_why(exc)}"
            ) from exc
        try:
            if response.status >= 300:
                try:
                    _check_status(response.status, await response.read())
                except kube.ApiException as exc:
                    raise ComputeError(
                        f"cluster {cluster}: following the log of {namespace}/{pod} failed: "
                        f"{_why(exc)}"
                    ) from exc
            async for line in response.content:
                yield line.decode("utf-8", errors="replace").rstrip("\n")
        finally:
            response.release()

    async def merge_patch(self, kind: str, key: Key, patch: dict[str, Any]) -> dict[str, Any]:
        resource = PINAPP if kind == "PinApp" else PINSCALER
        try:
            body = await self.cluster(key.cluster).custom.patch_namespaced_custom_object(
                GROUP,
                VERSION,
                key.namespace,
                resource.plural,
                key.name,
                patch,
                _content_type=MERGE_PATCH,
                _request_timeout=self._timeout(),
            )
        except (TimeoutError, kube.ApiException, OSError) as exc:
            what = f"patching {kind} {key.namespace}/{key.name}"
            raise ComputeError(f"cluster {key.cluster}: {what} failed: {_why(exc)}") from exc
        # The watch will bring it too; storing it now lets the caller read its own write.
        return self.store(kind).upsert(key.cluster, body).body

    async def create(self, kind: str, cluster: str, body: dict[str, Any]) -> dict[str, Any]:
        resource = PINAPP if kind == "PinApp" else PINSCALER
        namespace = body["metadata"]["namespace"]
        try:
            created = await self.cluster(cluster).custom.create_namespaced_custom_object(
                GROUP, VERSION, namespace, resource.plural, body, _request_timeout=self._timeout()
            )
        except (TimeoutError, kube.ApiException, OSError) as exc:
            what = f"creating {kind} {namespace}/{body['metadata']['name']}"
            raise ComputeError(f"cluster {cluster}: {what} failed: {_why(exc)}") from exc
        return self.store(kind).upsert(cluster, created).body


def _check_status(status: int, body: bytes) -> None:
    """Raise the API server's refusal: with ``_preload_content=False`` (logs, read raw),
    kubernetes-asyncio hands back an error's body as if it were the answer."""
    if not 200 <= status < 300:
        text = body.decode("utf-8", errors="replace")
        with contextlib.suppress(ValueError, AttributeError):
            text = str(json.loads(text).get("message") or text)
        raise kube.ApiException(status=status, reason=text[:500])


def _why(exc: BaseException) -> str:
    if isinstance(exc, kube.ApiException):
        return f"{exc.status} {exc.reason}".strip()
    if isinstance(exc, asyncio.TimeoutError):
        return "timed out"
    return str(exc) or type(exc).__name__


@contextlib.asynccontextmanager
async def running(settings: ComputeSettings) -> AsyncIterator[Compute]:
    """Connect every cluster and run an informer per cluster and kind until the app stops."""
    async with connect_clusters(settings.kubeconfig_dicts()) as clusters:
        compute = Compute(settings, {c.name: c for c in clusters})
        for cluster in clusters:
            cluster.expected_kinds = frozenset({PINAPP.kind, PINSCALER.kind})
            for resource, store in ((PINAPP, compute.pinapps), (PINSCALER, compute.pinscalers)):
                compute.informers.append(
                    Informer(
                        cluster,
                        resource,
                        store,
                        namespace=settings.compute_namespace,
                        watch_timeout=settings.compute_watch_timeout,
                        request_timeout=settings.compute_request_timeout,
                    )
                )
        tasks = [
            asyncio.create_task(i.run(), name=f"informer {i.cluster.name} {i.resource.kind}")
            for i in compute.informers
        ]
        try:
            yield compute
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
