"""Component metrics: a fixed list of series, each a PromQL template filled with the
component's service label, over a step-aligned window, cached briefly; concurrent misses for
one query make one call to Prometheus."""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import httpx

from graph.plugin import MultiLevelCache
from plugins.observability.alertmanager import Alertmanager
from plugins.observability.prometheus import Prometheus, PromQLError, Series, Unavailable, render
from plugins.observability.settings import ObservabilitySettings

__all__ = ["COMPONENT_SERIES", "SERVICE_ANNOTATION", "Observability", "Window", "running", "window"]

SERVICE_ANNOTATION: Final = "atrium.dev/prometheus-service"
COMPONENT_SERIES: Final = (
    "request_rate",
    "error_ratio",
    "latency_p50",
    "latency_p95",
    "latency_p99",
)
MIN_STEP: Final = 15

log = logging.getLogger("atrium.observability")


@dataclass(frozen=True, slots=True)
class Window:
    start: int
    end: int
    step: int


def window(since: int, step: int | None, settings: ObservabilitySettings, now: float) -> Window:
    """The range asked for, bounded: at most the longest range, a step no finer than gives the
    most points allowed, the end aligned to the step (so everyone shares one window)."""
    if not 60 <= since <= settings.metrics_max_range:
        raise ValueError(f"since must be between 60 and {settings.metrics_max_range} seconds")
    finest = max(MIN_STEP, math.ceil(since / settings.metrics_max_points))
    if step is None:
        step = max(finest, since // 240)
    if step < finest or step > since:
        raise ValueError(f"step must be between {finest} and {since} seconds for this range")
    end = int(now // step) * step
    return Window(end - since, end, step)


@dataclass(slots=True)
class Observability:
    settings: ObservabilitySettings
    prometheus: Prometheus | None
    alertmanager: Alertmanager | None
    # Answers by query and window, in the app's multi-level cache (this process, then Redis).
    cache: MultiLevelCache
    calls: int = 0  # queries this process sent to Prometheus, for the tests

    async def series(self, query: str, span: Window) -> list[Series]:
        """One query's series over a window: from the cache, else from Prometheus (once, however
        many ask at the same time)."""
        prometheus = self.prometheus
        if prometheus is None:
            raise Unavailable("prometheus", "not configured (ATRIUM_PROMETHEUS_URL)")
        digest = hashlib.blake2b(query.encode(), digest_size=16).hexdigest()
        key = f"{digest}:{span.start}:{span.end}:{span.step}"

        async def ask(keys: list[str]) -> dict[str, Any]:
            self.calls += 1
            found = await prometheus.query_range(query, span.start, span.end, span.step)
            return {key: [[s.labels, s.points] for s in found]}

        [kept] = await self.cache.load_many([key], ask)
        return [Series(labels, [(t, v) for t, v in points]) for labels, points in kept]

    def queries(self, service: str) -> dict[str, str]:
        templates = self.settings.templates()
        return {name: render(templates[name], service=service) for name in COMPONENT_SERIES}

    def alerts_backend(self) -> Alertmanager:
        if self.alertmanager is None:
            raise Unavailable("alertmanager", "not configured (ATRIUM_ALERTMANAGER_URL)")
        return self.alertmanager

    async def check_templates(self) -> list[str]:
        """Templates Prometheus cannot parse, each said once at start-up (with a sample value)."""
        if self.prometheus is None:
            return []
        wrong = []
        for name, query in self.queries("atrium-template-check").items():
            try:
                await self.prometheus.check(query)
            except PromQLError as exc:
                log.error("a PromQL template is wrong", extra={"series": name, "error": str(exc)})
                wrong.append(name)
            except Unavailable:
                return wrong  # checked when it answers; a dead backend is not a bad template
        return wrong


@asynccontextmanager
async def running(
    settings: ObservabilitySettings, cache: MultiLevelCache
) -> AsyncIterator[Observability]:
    async with httpx.AsyncClient() as http:
        prometheus = (
            Prometheus(settings.prometheus_url, http, settings.observability_timeout)
            if settings.prometheus_url
            else None
        )
        alertmanager = (
            Alertmanager(settings.alertmanager_url, http, settings.observability_timeout)
            if settings.alertmanager_url
            else None
        )
        found = Observability(settings, prometheus, alertmanager, cache)
        await found.check_templates()
        yield found


def as_points(series: Series) -> list[list[Any]]:
    return [[t, v] for t, v in series.points]
