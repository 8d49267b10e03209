"""PinCompute, registered through the public plugin API only."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from graph.plugin import DataLoader, LoaderServices, PluginBuilder
from plugins.pincompute.attention import workload_attention
from plugins.pincompute.compute import Compute, ComputeError, pod_of, running
from plugins.pincompute.fields import ComponentWorkloads, ComputeQuery, ComputeSubscription
from plugins.pincompute.mutations import ComputeMutation
from plugins.pincompute.scaling import owned_loader
from plugins.pincompute.service import Workloads
from plugins.pincompute.settings import ComputeSettings
from plugins.pincompute.store import Key
from plugins.pincompute.types import PLUGIN_ID, PinApp, PinScaler

__all__ = ["PinComputePlugin"]

CRDS = Path(__file__).parent / "crds"


class PinComputePlugin:
    id = PLUGIN_ID

    def __init__(self, settings: ComputeSettings | None = None) -> None:
        self._settings = settings

    def setup(self, builder: PluginBuilder) -> None:
        # Given to the constructor (as tests do), or read from the environment and atrium.toml.
        settings = self._settings or builder.plugin_settings(ComputeSettings)
        builder.query(ComputeQuery)
        builder.mutation(ComputeMutation)
        builder.subscription(ComputeSubscription)
        builder.types(PinApp, PinScaler)  # other plugins may extend them
        builder.extend_type("Component", ComponentWorkloads)
        builder.loader("pods", _namespace_loader("pods"))
        builder.loader("events", _namespace_loader("events"))
        # What an owner owns directly, for quotas (OWNED_LOADER): one statement a batch.
        builder.loader("owned", owned_loader)
        # Workloads short of ready replicas, for the console's home (Viewer.attention).
        builder.attention(workload_attention)

        @contextlib.asynccontextmanager
        async def lifespan(services: Any) -> AsyncIterator[Compute]:
            async with running(settings) as compute:
                yield compute

        builder.lifespan(lifespan)
        # Other plugins roll PinApps out through this (the deployments plugin does).
        builder.provide("workloads", Workloads)
        builder.gauge(
            "compute_cluster_healthy",
            "1 when a cluster's informers are synced and answering",
            ("cluster",),
            _health,
        )
        builder.gauge("compute_objects", "Objects in the informers' stores", ("kind",), _objects)

        @contextlib.contextmanager
        def demo(catalog: Path, data_dir: Path) -> Iterator[dict[str, str]]:
            if settings.kubeconfig or settings.clusters:
                yield {}  # real clusters are configured: the demo shows them
                return
            from plugins.pincompute.demo import demo_cluster

            with demo_cluster(catalog, data_dir / "demo-kubeconfig.yaml") as kubeconfig:
                yield {"ATRIUM_KUBECONFIG": kubeconfig}

        builder.demo(demo)


def _namespace_loader(kind: str) -> Any:
    """PinApp key → its pods (or events): one API call per namespace, however many apps."""

    def factory(services: LoaderServices) -> DataLoader[Key, list[dict[str, Any]]]:
        async def load(keys: list[Key]) -> list[list[dict[str, Any]] | BaseException]:
            compute: Compute = services.extras[PLUGIN_ID]
            by_namespace: dict[tuple[str, str], list[dict[str, Any]] | BaseException] = {}
            for cluster, namespace in {(k.cluster, k.namespace) for k in keys}:
                try:
                    by_namespace[cluster, namespace] = await compute.namespace_items(
                        cluster, namespace, kind
                    )
                except ComputeError as exc:
                    by_namespace[cluster, namespace] = exc
            results: list[list[dict[str, Any]] | BaseException] = []
            for key in keys:
                items = by_namespace[key.cluster, key.namespace]
                if isinstance(items, BaseException):
                    results.append(items)
                else:
                    results.append([i for i in items if _belongs(i, key, kind)])
            return results

        return DataLoader(load_fn=load)

    return factory


def _belongs(item: dict[str, Any], key: Key, kind: str) -> bool:
    if kind == "pods":
        return pod_of(item, key)
    involved = item.get("involved_object") or {}
    name = involved.get("name") or ""
    return name == key.name or name.startswith(f"{key.name}-")


async def _health(services: Any) -> dict[tuple[str, ...], float]:
    compute: Compute | None = services.extras.get(PLUGIN_ID)
    if compute is None:
        return {}
    return {(c.name,): 0.0 if c.problem else 1.0 for c in compute.clusters.values()}


async def _objects(services: Any) -> dict[tuple[str, ...], float]:
    compute: Compute | None = services.extras.get(PLUGIN_ID)
    if compute is None:
        return {}
    return {
        ("PinApp",): float(len(compute.pinapps)),
        ("PinScaler",): float(len(compute.pinscalers)),
    }
