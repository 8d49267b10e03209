"""GraphQL types of PinCompute: PinApp and PinScaler (their parts are
``plugins.pincompute.details``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Self

from graph.plugin import (
    JSON,
    CacheControl,
    CacheScope,
    Entity,
    Info,
    UserError,
    entity,
    entity_owner,
    strawberry,
    viewer_may_change,
)
from plugins.pincompute.compute import Compute, ComputeError
from plugins.pincompute.details import (
    MAX_EVENTS,
    Condition,
    ContainerPort,
    EnvVar,
    KubeEvent,
    MetricTarget,
    Pod,
    PodLogError,
    ScaleDecision,
    ScaleSchedule,
    WorkloadLogLine,
    WorkloadLogs,
    check_log_bounds,
    pod_of_item,
    when,
)
from plugins.pincompute.logs import MAX_LINES, needle_of, pod_names, read_workload
from plugins.pincompute.model import env_of
from plugins.pincompute.scaling import room
from plugins.pincompute.store import Key, StoredObject

__all__ = ["PLUGIN_ID", "PinApp", "PinScaler", "compute_of"]

PLUGIN_ID = "pincompute"


def compute_of(info: Info) -> Compute:
    compute: Compute | None = info.context.extras.get(PLUGIN_ID)
    if compute is None:
        raise ComputeError("PinCompute is not running")
    return compute


@strawberry.type
class _Workload:
    stored: strawberry.Private[StoredObject]
    cluster: str
    namespace: str
    name: str

    @strawberry.field(description="cluster/namespace/name")
    def id(self) -> str:
        return str(self.stored.key)

    @classmethod
    def of(cls, stored: StoredObject) -> Self:
        key = stored.key
        return cls(stored=stored, cluster=key.cluster, namespace=key.namespace, name=key.name)

    @property
    def _metadata(self) -> dict[str, Any]:
        return self.stored.body.get("metadata") or {}

    @property
    def _spec(self) -> dict[str, Any]:
        return self.stored.body.get("spec") or {}

    @property
    def _status(self) -> dict[str, Any]:
        return self.stored.body.get("status") or {}


@strawberry.type(description="A workload: deployment, service, ingress and config in one.")
class PinApp(_Workload):
    @strawberry.field(description="The catalog entity it belongs to (atrium.dev/entity-ref).")
    def entity_ref(self) -> str | None:
        return self.stored.entity_ref

    @strawberry.field
    async def entity(self, info: Info) -> Entity | None:
        return await entity(info, self.stored.entity_ref) if self.stored.entity_ref else None

    @strawberry.field(
        description="Whether the viewer may scale, restart and set the image of this PinApp "
        "(its entity's owners and admins): for showing buttons; each mutation checks again.",
        directives=[CacheControl(max_age=60, scope=CacheScope.PRIVATE)],
    )
    async def viewer_can_manage(self, info: Info) -> bool:
        ref = self.stored.entity_ref
        owner = await entity_owner(info.context, ref) if ref else None
        return await viewer_may_change(info.context, owner)

    @strawberry.field
    def image(self) -> str | None:
        return self._spec.get("image")

    @strawberry.field(description="Replicas asked for in the spec (a PinScaler may decide).")
    def replicas(self) -> int | None:
        return self._spec.get("replicas")

    @strawberry.field(
        description="The most replicas the owning team's quota leaves for this PinApp besides "
        "its other workloads (replicas, or its PinScaler's maxReplicas, count against it; so "
        "do CPU and memory at its requests per replica): scaleWorkload refuses more. Null "
        "when no quota limits it."
    )
    async def max_replicas_allowed(self, info: Info) -> int | None:
        found = await room(info.context, compute_of(info), self.stored)
        return found.allowed if found is not None else None

    @strawberry.field
    def ports(self) -> list[ContainerPort]:
        return [
            ContainerPort(
                name=p.get("name"),
                container_port=int(p.get("containerPort", 0)),
                protocol=p.get("protocol") or "TCP",
            )
            for p in self._spec.get("ports") or []
            if isinstance(p, dict)
        ]

    @strawberry.field
    def resources(self) -> JSON:
        return JSON(self._spec.get("resources") or {})

    @strawberry.field(description="Environment; secret values are never shown.")
    def env(self) -> list[EnvVar]:
        return [EnvVar(name=e.name, value=e.value, source=e.source) for e in env_of(self._spec)]

    @strawberry.field
    def ingress_host(self) -> str | None:
        return (self._spec.get("ingress") or {}).get("host")

    @strawberry.field
    def ready_replicas(self) -> int:
        return int(self._status.get("readyReplicas") or 0)

    @property
    def _desired(self) -> int:
        return int(self._status.get("replicas") or self._spec.get("replicas") or 0)

    @strawberry.field
    def desired_replicas(self) -> int:
        return self._desired

    @strawberry.field(description="Share of replicas on the current template, 0 to 1.")
    def rollout_progress(self) -> float:
        desired = self._desired
        updated = int(self._status.get("updatedReplicas") or 0)
        return 1.0 if desired == 0 else min(1.0, updated / desired)

    @strawberry.field
    def conditions(self) -> list[Condition]:
        return [
            Condition(
                type=c.get("type", ""),
                status=c.get("status", "Unknown"),
                reason=c.get("reason"),
                message=c.get("message"),
                last_transition_time=c.get("lastTransitionTime"),
            )
            for c in self._status.get("conditions") or []
            if isinstance(c, dict)
        ]

    @strawberry.field
    def scaler(self, info: Info) -> PinScaler | None:
        found = compute_of(info).scaler_for(self.stored.key)
        return PinScaler.of(found) if found is not None else None

    @strawberry.field(description="Its pods, read from the cluster (cached a few seconds).")
    async def pods(self, info: Info) -> list[Pod]:
        items = await info.context.loaders["pincompute.pods"].load(self.stored.key)
        return [pod_of_item(item) for item in items]

    @strawberry.field(
        description="The logs of all its pods merged by time: the last `tailLines` lines "
        f"(at most {MAX_LINES}, and 1 MB), since some seconds, holding a text (any case). "
        "Null, with an UNAVAILABLE error, when the cluster cannot answer.",
        directives=[CacheControl(max_age=5)],
    )
    async def logs(
        self,
        info: Info,
        tail_lines: int = 200,
        since_seconds: int | None = None,
        filter: str | None = None,
    ) -> WorkloadLogs | None:
        check_log_bounds(tail_lines, since_seconds, filter)
        items = await info.context.loaders["pincompute.pods"].load(self.stored.key)
        pods = pod_names(items)
        found = await read_workload(
            compute_of(info),
            self.stored.key,
            pods,
            tail=tail_lines,
            since_seconds=since_seconds,
            needle=needle_of(filter),
        )
        if pods and len(found.errors) == len(pods):
            raise UserError(next(iter(found.errors.values())), "UNAVAILABLE")
        return WorkloadLogs(
            lines=[WorkloadLogLine.of(line) for line in found.lines],
            truncated=found.truncated,
            pod_errors=[PodLogError(pod=p, message=m) for p, m in sorted(found.errors.items())],
        )

    @strawberry.field(description="Recent Kubernetes events about it and its pods.")
    async def events(self, info: Info, first: int = 20) -> list[KubeEvent]:
        if not 0 <= first <= MAX_EVENTS:
            raise UserError(f"first must be between 0 and {MAX_EVENTS}")
        items = await info.context.loaders["pincompute.events"].load(self.stored.key)
        events = [
            KubeEvent(
                type=e.get("type"),
                reason=e.get("reason"),
                message=e.get("message"),
                count=e.get("count"),
                last_seen=when(e.get("last_timestamp") or e.get("event_time")),
            )
            for e in items
        ]
        events.sort(key=lambda e: e.last_seen or datetime.min.replace(tzinfo=UTC), reverse=True)
        return events[:first]


@strawberry.type(description="Replica bounds, metric targets and schedules of one PinApp.")
class PinScaler(_Workload):
    @property
    def _target_name(self) -> str | None:
        name = (self._spec.get("targetRef") or {}).get("name")
        return name if isinstance(name, str) else None

    @strawberry.field
    def target_name(self) -> str | None:
        return self._target_name

    @strawberry.field
    def target(self, info: Info) -> PinApp | None:
        name = self._target_name
        if not name:
            return None
        key = self.stored.key
        found = compute_of(info).pinapps.get(Key(key.cluster, key.namespace, name))
        return PinApp.of(found) if found is not None else None

    @strawberry.field
    def min_replicas(self) -> int | None:
        return self._spec.get("minReplicas")

    @strawberry.field
    def max_replicas(self) -> int | None:
        return self._spec.get("maxReplicas")

    @strawberry.field
    def metrics(self) -> list[MetricTarget]:
        return [
            MetricTarget(
                type=m.get("type", ""),
                target_average_utilization=m.get("targetAverageUtilization"),
                target_average_value=m.get("targetAverageValue"),
            )
            for m in self._spec.get("metrics") or []
            if isinstance(m, dict)
        ]

    @strawberry.field
    def schedules(self) -> list[ScaleSchedule]:
        return [
            ScaleSchedule(
                name=s.get("name", ""),
                cron=s.get("cron", ""),
                timezone=s.get("timezone"),
                min_replicas=s.get("minReplicas"),
                max_replicas=s.get("maxReplicas"),
            )
            for s in self._spec.get("schedules") or []
            if isinstance(s, dict)
        ]

    @strawberry.field
    def current_replicas(self) -> int | None:
        return self._status.get("currentReplicas")

    @strawberry.field
    def desired_replicas(self) -> int | None:
        return self._status.get("desiredReplicas")

    @strawberry.field(description="The scaler's latest decision.")
    def decision(self) -> ScaleDecision | None:
        last = self._status.get("lastDecision")
        if not isinstance(last, dict):
            return None
        return ScaleDecision(
            time=last.get("time"), replicas=last.get("replicas"), reason=last.get("reason")
        )
