"""The compute scenario's data: an organisation's catalog, its PinApps and PinScalers, and
emulated clusters holding them.

The clusters are kmock's Kubernetes API emulator on local ports, from the test harness:
``tests.kube`` is imported here on purpose (run from the repository's root, as ``python -m
bench`` is: neither ``tests`` nor ``bench`` is an installed package). Loading 20,000 objects
through the harness's HTTP ``put`` is quadratic (kmock scans every stored object to answer a
create: 2,000 puts take 12 s; one cluster's 20,000 would take some 17 minutes), so the objects
go into each emulator's state directly (``emulator.objects[resource, namespace, name] =
body``, kmock's own API), stamped as the harness's emulator stamps a create (uid,
creationTimestamp, a fresh resourceVersion). No client is connected yet, so no watch misses an
event; the plugin's informers then LIST them over HTTP as from a real API server.
"""

from __future__ import annotations

import contextlib
import importlib
import time
import uuid
from dataclasses import dataclass
from typing import Any, Final, Protocol

from plugins.pincompute import emulator
from plugins.pincompute.emulator import Resource
from sources.catalog.documents import ParsedBatch
from sources.catalog.model import validate_entity

__all__ = [
    "COMPONENTS",
    "DEPARTMENTS",
    "PINAPPS",
    "PINSCALERS",
    "TEAMS",
    "App",
    "Cluster",
    "catalog_batch",
    "cluster_name",
    "cluster_of",
    "kubeconfig",
    "plan_apps",
    "put_direct",
    "start_clusters",
    "team_name",
]

DEPARTMENTS: Final = 5
TEAMS: Final = 50  # 10 per department
MEMBERS: Final = 4  # users per team
COMPONENTS: Final = 500  # 10 per team
SCALED_EVERY: Final = 4  # one PinApp in 4 has a PinScaler
ORIGIN: Final = "bench:compute"


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


def team_name(index: int) -> str:
    return f"team-{index:02d}"


def _component(index: int) -> str:
    """Component ``index``: team ``index // 10``'s, so each team owns 10 in a row."""
    return f"{team_name(index * TEAMS // COMPONENTS)}-svc-{index % (COMPONENTS // TEAMS):02d}"


def catalog_batch() -> ParsedBatch:
    """Departments with teams as children, users as members, components owned by teams."""
    documents: list[dict[str, Any]] = []
    for d in range(DEPARTMENTS):
        teams = [team_name(t) for t in range(TEAMS) if t * DEPARTMENTS // TEAMS == d]
        documents.append(_group(f"dept-{d}", children=teams, members=[]))
    for t in range(TEAMS):
        members = [f"user-{t:02d}-{m}" for m in range(MEMBERS)]
        documents.append(_group(team_name(t), children=[], members=members))
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
                "owner": team_name(c * TEAMS // COMPONENTS),
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
        return team_name(self.team)

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


def cluster_name(slot: int) -> str:
    return f"cluster-{slot + 1}"


def cluster_of(app: App, clusters: int) -> str:
    return cluster_name(app.index % clusters)


def put_direct(cluster: Cluster, resource: Resource, bodies: list[dict[str, Any]]) -> None:
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
