"""The observability plugin's metrics fields: a component's and a PinApp's series."""

from __future__ import annotations

import re
import time
from typing import Any, Protocol

from graph.plugin import (
    JSON,
    CacheControl,
    EntityParent,
    Info,
    Parent,
    ServiceMissing,
    UserError,
    service,
    strawberry,
)
from plugins.observability.metrics import (
    COMPONENT_SERIES,
    SERVICE_ANNOTATION,
    WORKLOAD_SERIES,
    Observability,
    as_points,
    window,
)
from plugins.observability.prometheus import PromQLError, Unavailable

__all__ = ["ComponentMetrics", "MetricSeries", "PinAppParent", "WorkloadMetrics"]

PLUGIN_ID = "observability"


class PinAppParent(Protocol):
    """PinCompute's PinApp, as the fields joining it read it (its schema fields)."""

    @property
    def cluster(self) -> str: ...

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...


@strawberry.type(
    directives=[CacheControl(max_age=30)],
    description="One series of a component's or workload's metrics, from Prometheus.",
)
class MetricSeries:
    name: str = strawberry.field(
        description="request_rate, error_ratio, latency_p50, latency_p95, latency_p99 "
        "(components); cpu (cores), memory (bytes) (PinApps)."
    )
    labels: JSON
    query: str = strawberry.field(description="The PromQL that produced it.")
    points: list[list[float | None]] = strawberry.field(
        description="[unixSeconds, value] pairs; the value is null where Prometheus said NaN."
    )


@strawberry.type(description="A PinApp's requests and limits per pod, in cores and bytes.")
class ResourceBounds:
    cpu_request: float | None
    cpu_limit: float | None
    memory_request: float | None
    memory_limit: float | None


def observability_of(info: Info) -> Observability:
    found: Observability | None = info.context.extras.get(PLUGIN_ID)
    if found is None:
        raise UserError("the observability plugin has not started", "UNAVAILABLE")
    return found


async def _series(
    info: Info,
    queries: dict[str, str],
    since: int,
    step: int | None,
    names: list[str] | None,
) -> list[MetricSeries]:
    """The series asked for (all when ``names`` is None), over a bounded, aligned window."""
    observability = observability_of(info)
    if names is not None:
        unknown = sorted(set(names) - set(queries))
        if unknown:
            raise UserError(f"no series {', '.join(unknown)}; there are {', '.join(queries)}")
    try:
        span = window(since, step, observability.settings, time.time())
    except ValueError as exc:
        raise UserError(str(exc)) from None
    info.context.cache_hint(max_age=observability.settings.metrics_cache_seconds)
    answer = []
    try:
        for name, query in queries.items():
            if names is not None and name not in names:
                continue
            for series in await observability.series(query, span):
                answer.append(
                    MetricSeries(
                        name=name,
                        labels=JSON(series.labels),
                        query=query,
                        points=as_points(series),
                    )
                )
    except Unavailable as exc:
        raise UserError(str(exc), "UNAVAILABLE") from None
    except PromQLError as exc:
        raise UserError(f"prometheus refused the template: {exc}", "UNAVAILABLE") from None
    return answer


METRICS_ARGS = (
    "over the last `since` seconds, one point per `step` seconds (bounded; by default about "
    "240 points); `names` picks some of them. Null, with an UNAVAILABLE error naming the "
    "backend, when Prometheus cannot answer."
)


@strawberry.type
class ComponentMetrics:
    @strawberry.field(
        description=f"Request rate, error ratio and latency ({', '.join(COMPONENT_SERIES)}) "
        + METRICS_ARGS,
        directives=[CacheControl(max_age=30)],
    )
    async def metrics(
        self,
        parent: Parent[EntityParent],
        info: Info,
        since: int = 3600,
        step: int | None = None,
        names: list[str] | None = None,
    ) -> list[MetricSeries] | None:
        observability = observability_of(info)
        annotations = parent.annotations or {}
        service_label = str(annotations.get(SERVICE_ANNOTATION) or parent.name)
        try:
            queries = observability.queries(service_label)
        except Unavailable as exc:
            raise UserError(str(exc), "UNAVAILABLE") from None
        return await _series(info, queries, since, step, names)


@strawberry.type
class WorkloadMetrics:
    """Joins PinCompute's PinApp (when that plugin is installed): its CPU and memory."""

    @strawberry.field(
        description=f"CPU and memory per pod ({', '.join(WORKLOAD_SERIES)}) " + METRICS_ARGS,
        directives=[CacheControl(max_age=30)],
    )
    async def metrics(
        self,
        parent: Parent[PinAppParent],
        info: Info,
        since: int = 3600,
        step: int | None = None,
        names: list[str] | None = None,
    ) -> list[MetricSeries] | None:
        observability = observability_of(info)
        cluster, namespace, name = parent.cluster, parent.namespace, parent.name
        try:
            queries = observability.workload_queries(cluster, namespace, name)
        except Unavailable as exc:
            raise UserError(str(exc), "UNAVAILABLE") from None
        return await _series(info, queries, since, step, names)

    @strawberry.field(
        description="What each pod asks for and may use, to draw its CPU and memory against."
    )
    def resource_bounds(self, parent: Parent[PinAppParent], info: Info) -> ResourceBounds:
        try:
            workloads = service(info.context, "workloads")
        except ServiceMissing:
            return ResourceBounds(
                cpu_request=None, cpu_limit=None, memory_request=None, memory_limit=None
            )
        view = workloads.get(parent.cluster, parent.namespace, parent.name)
        resources: dict[str, Any] = view.resources if view is not None else {}
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        return ResourceBounds(
            cpu_request=quantity(requests.get("cpu")),
            cpu_limit=quantity(limits.get("cpu")),
            memory_request=quantity(requests.get("memory")),
            memory_limit=quantity(limits.get("memory")),
        )


_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")
_SUFFIX = {
    "": 1.0,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}


def quantity(value: object) -> float | None:
    """A Kubernetes quantity ("250m", "1.5", "512Mi", "1e3") as a number; None if not one."""
    if isinstance(value, int | float):
        return float(value)
    match = _QUANTITY.match(str(value).strip()) if value is not None else None
    if match is None or match.group(2) not in _SUFFIX:
        return None
    try:
        return float(match.group(1)) * _SUFFIX[match.group(2)]
    except ValueError:
        return None
