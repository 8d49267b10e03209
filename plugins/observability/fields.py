"""The observability plugin's fields."""

from __future__ import annotations

import time

from graph.plugin import JSON, CacheControl, Info, UserError, strawberry
from plugins.observability.metrics import (
    SERVICE_ANNOTATION,
    Observability,
    as_points,
    window,
)
from plugins.observability.prometheus import PromQLError, Unavailable

__all__ = ["ComponentMetrics", "MetricSeries"]

PLUGIN_ID = "observability"


@strawberry.type(
    directives=[CacheControl(max_age=30)],
    description="One series of a component's or workload's metrics, from Prometheus.",
)
class MetricSeries:
    name: str = strawberry.field(description="request_rate, error_ratio, latency_p50/p95/p99")
    labels: JSON
    query: str = strawberry.field(description="The PromQL that produced it.")
    points: list[list[float | None]] = strawberry.field(
        description="[unixSeconds, value] pairs; the value is null where Prometheus said NaN."
    )


def _observability(info: Info) -> Observability:
    found: Observability | None = info.context.extras.get(PLUGIN_ID)
    if found is None:
        raise UserError("the observability plugin has not started", "UNAVAILABLE")
    return found


@strawberry.type
class ComponentMetrics:
    @strawberry.field(
        description="Request rate, error ratio and latency over the last `since` seconds, one "
        "point per `step` seconds (bounded; by default about 240 points). Null, with an "
        "UNAVAILABLE error naming the backend, when Prometheus cannot answer.",
        directives=[CacheControl(max_age=30)],
    )
    async def metrics(
        self, info: Info, since: int = 3600, step: int | None = None
    ) -> list[MetricSeries] | None:
        observability = _observability(info)
        try:
            span = window(since, step, observability.settings, time.time())
        except ValueError as exc:
            raise UserError(str(exc)) from None
        annotations: dict[str, object] = dict(self.annotations or {})  # type: ignore[attr-defined]
        service = str(annotations.get(SERVICE_ANNOTATION) or self.name)  # type: ignore[attr-defined]
        info.context.cache_hint(max_age=observability.settings.metrics_cache_seconds)
        answer = []
        try:
            for name, query in observability.queries(service).items():
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
