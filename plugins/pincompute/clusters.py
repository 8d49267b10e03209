"""One kubernetes-asyncio ApiClient per cluster, and each cluster's health."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import plugins.pincompute.kube as kube

__all__ = ["Cluster", "ClusterHealth", "connect_clusters"]


@dataclass(slots=True)
class ClusterHealth:
    last_event_at: float | None = None  # unix seconds
    last_error: str | None = None
    last_error_at: float | None = None
    failing: bool = False  # the latest attempt failed and none succeeded since

    def ok(self) -> None:
        self.failing = False
        self.last_event_at = time.time()

    def error(self, message: str) -> None:
        self.failing = True
        self.last_error = message
        self.last_error_at = time.time()


@dataclass(slots=True)
class Cluster:
    name: str
    client: kube.ApiClient
    health: ClusterHealth = field(default_factory=ClusterHealth)
    expected_kinds: frozenset[str] = frozenset()
    synced_kinds: set[str] = field(default_factory=set)

    @property
    def synced(self) -> bool:
        """Every informer of this cluster has listed once."""
        return self.expected_kinds <= self.synced_kinds

    # Typed as Any: kubernetes-asyncio's generated hints mark optional arguments required and
    # know neither _content_type nor the raw responses of _preload_content=False.
    @property
    def custom(self) -> Any:
        return kube.CustomObjectsApi(self.client)

    @property
    def core(self) -> Any:
        return kube.CoreV1Api(self.client)

    @property
    def problem(self) -> str | None:
        """Why this cluster's data cannot be trusted right now, or None."""
        if self.health.failing:
            return f"cluster {self.name} is not answering: {self.health.last_error}"
        if not self.synced:
            return f"cluster {self.name} has not been listed yet"
        return None


@contextlib.asynccontextmanager
async def connect_clusters(kubeconfigs: list[dict[str, Any]]) -> AsyncIterator[list[Cluster]]:
    """An ApiClient for every context of every kubeconfig, all closed on exit. Created inside
    the running loop, as kubernetes-asyncio requires."""
    clusters: list[Cluster] = []
    try:
        for kubeconfig in kubeconfigs:
            for context in kubeconfig.get("contexts") or []:
                name = context["name"]
                if any(c.name == name for c in clusters):
                    raise ValueError(f"two clusters are named {name}")
                client = await kube.config.new_client_from_config_dict(kubeconfig, context=name)
                clusters.append(Cluster(name, client))
        yield clusters
    finally:
        for cluster in clusters:
            await cluster.client.close()
