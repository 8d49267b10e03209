"""The small GraphQL types a workload's page shows: clusters, pods, conditions, env, events,
log lines, and a PinScaler's metric targets, schedules and decisions (the PinApp and PinScaler
types themselves are ``plugins.pincompute.types``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from graph.plugin import UserError, strawberry
from plugins.pincompute.logs import MAX_LINES, LogLine

__all__ = [
    "MAX_EVENTS",
    "ClusterError",
    "ClusterStatus",
    "Condition",
    "ContainerPort",
    "EnvVar",
    "KubeEvent",
    "MetricTarget",
    "Pod",
    "PodLogError",
    "ScaleDecision",
    "ScaleSchedule",
    "WorkloadLogLine",
    "WorkloadLogs",
    "check_log_bounds",
    "pod_of_item",
    "when",
]

MAX_EVENTS: Final = 100
MAX_FILTER: Final = 200


def check_log_bounds(tail_lines: int, since_seconds: int | None, filter: str | None) -> None:
    if not 0 <= tail_lines <= MAX_LINES:
        raise UserError(f"tailLines must be between 0 and {MAX_LINES}")
    if since_seconds is not None and since_seconds < 1:
        raise UserError("sinceSeconds must be at least 1")
    if filter is not None and len(filter) > MAX_FILTER:
        raise UserError(f"filter must be at most {MAX_FILTER} characters")


@strawberry.type(description="A cluster that could not answer for part of a result.")
class ClusterError:
    cluster: str
    message: str


@strawberry.type(description="One cluster, as the informers see it.")
class ClusterStatus:
    name: str
    synced: bool
    last_event_at: datetime | None
    last_error: str | None
    last_error_at: datetime | None
    healthy: bool
    pin_apps: int
    pin_scalers: int


@strawberry.type
class EnvVar:
    name: str
    value: str | None = strawberry.field(description="None when secret or referenced.")
    source: str = strawberry.field(description="value, secret:<name>/<key>, config:..., hidden")


@strawberry.type
class ContainerPort:
    name: str | None
    container_port: int
    protocol: str


@strawberry.type
class Condition:
    type: str
    status: str
    reason: str | None
    message: str | None
    last_transition_time: str | None


@strawberry.type
class Pod:
    name: str
    phase: str | None
    ready: bool
    restarts: int
    node: str | None
    started_at: datetime | None
    containers: list[str]


@strawberry.type(name="LogLine", description="One line of a workload's merged log.")
class WorkloadLogLine:
    time: datetime = strawberry.field(description="When the kubelet took it.")
    pod: str = strawberry.field(
        description="The pod that wrote it; empty for a notice of Atrium's (lines dropped)."
    )
    text: str

    @classmethod
    def of(cls, line: LogLine) -> WorkloadLogLine:
        return cls(time=line.time, pod=line.pod, text=line.text)


@strawberry.type
class PodLogError:
    pod: str
    message: str


@strawberry.type(description="The logs of a workload's pods, merged by time.")
class WorkloadLogs:
    lines: list[WorkloadLogLine] = strawberry.field(description="Oldest first.")
    truncated: bool = strawberry.field(
        description="Older lines were left out to stay within the lines and bytes allowed."
    )
    pod_errors: list[PodLogError] = strawberry.field(
        description="Pods whose log could not be read: the lines of the others are here."
    )


@strawberry.type
class KubeEvent:
    type: str | None
    reason: str | None
    message: str | None
    count: int | None
    last_seen: datetime | None


def when(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return None


def pod_of_item(item: dict[str, Any]) -> Pod:
    status = item.get("status") or {}
    statuses = status.get("container_statuses") or []
    return Pod(
        name=(item.get("metadata") or {}).get("name", ""),
        phase=status.get("phase"),
        ready=bool(statuses) and all(s.get("ready") for s in statuses),
        restarts=sum(int(s.get("restart_count") or 0) for s in statuses),
        node=(item.get("spec") or {}).get("node_name"),
        started_at=when(status.get("start_time")),
        containers=[c.get("name", "") for c in (item.get("spec") or {}).get("containers") or []],
    )


@strawberry.type
class MetricTarget:
    type: str
    target_average_utilization: int | None
    target_average_value: str | None


@strawberry.type
class ScaleSchedule:
    name: str
    cron: str
    timezone: str | None
    min_replicas: int | None
    max_replicas: int | None


@strawberry.type
class ScaleDecision:
    time: str | None
    replicas: int | None
    reason: str | None
