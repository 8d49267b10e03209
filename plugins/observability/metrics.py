"""Component metrics: a fixed list of series, each a PromQL template filled with the
component's service label, over a step-aligned window, cached briefly; concurrent misses for
one query make one call to Prometheus."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import httpx

from graph.plugin import MultiLevelCache
from plugins.observability.alertmanager import Alertmanager
from plugins.observability.prometheus import Prometheus, PromQLError, Series, Unavailable, render
from plugins.observability.settings import ObservabilitySettings

__all__ = [
    "COMPONENT_SERIES",
    "SERVICE_ANNOTATION",
    "WORKLOAD_SERIES",
    "Observability",
    "Window",
    "running",
    "window",
]

SERVICE_ANNOTATION: Final = "atrium.dev/prometheus-service"
COMPONENT_SERIES: Final = (
    "request_rate",
    "error_ratio",
    "latency_p50",
    "latency_p95",
    "latency_p99",
)
WORKLOAD_SERIES: Final = ("cpu", "memory")
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
            raise Unavailable("prometheus", "not configured: set ATRIUM_PROMETHEUS_URL")
        digest = hashlib.blake2b(query.encode(), digest_size=16).hexdigest()
        key = f"{digest}:{span.start}:{span.end}:{span.step}"

        async def ask(keys: list[str]) -> dict[str, Any]:
            self.calls += 1
            found = await prometheus.query_range(query, span.start, span.end, span.step)
            return {key: [[s.labels, s.points] for s in found]}

        [kept] = await self.cache.load_many([key], ask)
        return [Series(labels, [(t, v) for t, v in points]) for labels, points in kept]

    def queries(self, service: str) -> dict[str, str]:
        """A component's series, by name: its templates filled with its service label."""
        return self._fill(COMPONENT_SERIES, service=service)

    def workload_queries(self, cluster: str, namespace: str, name: str) -> dict[str, str]:
        """A PinApp's series, by name."""
        values = {"cluster": cluster, "namespace": namespace, "name": name}
        return self._fill(WORKLOAD_SERIES, **values, pods=pods_pattern(name))

    def alerts_backend(self) -> Alertmanager:
        if self.alertmanager is None:
            raise Unavailable("alertmanager", "not configured: set ATRIUM_ALERTMANAGER_URL")
        return self.alertmanager

    def _fill(self, names: tuple[str, ...], **values: str) -> dict[str, str]:
        templates = self.settings.templates()
        try:
            return {name: render(templates[name], **values) for name in names}
        except (KeyError, ValueError) as exc:  # said at start-up (check_templates)
            raise Unavailable(
                "prometheus", f"a PromQL template cannot be filled: {exc!r}"
            ) from None

    async def check_templates(self) -> list[str]:
        """Templates that cannot be filled or that Prometheus cannot parse, each said once at
        start-up (filled with sample values); their series then answer UNAVAILABLE."""
        wrong = []
        samples: dict[str, str] = {}
        for name, template in self.settings.templates().items():
            try:
                samples[name] = render(
                    template,
                    service="atrium-template-check",
                    cluster="c",
                    namespace="ns",
                    name="app",
                    pods=pods_pattern("app"),
                )
            except (KeyError, ValueError) as exc:
                log.error("a PromQL template is wrong", extra={"series": name, "error": repr(exc)})
                wrong.append(name)
        if self.prometheus is None:
            return wrong
        prometheus = self.prometheus

        async def check(name: str, query: str) -> str | None:
            try:
                await prometheus.check(query)
            except PromQLError as exc:
                log.error("a PromQL template is wrong", extra={"series": name, "error": str(exc)})
                return name
            except Unavailable:
                pass  # checked when it answers; a dead backend is not a bad template
            return None

        found = await asyncio.gather(*(check(n, q) for n, q in samples.items()))
        return wrong + [name for name in found if name is not None]


def pods_pattern(name: str) -> str:
    """A regular expression (RE2) for the names of a PinApp's pods: ``<name>-<hash>-<id>``."""
    return re.escape(name) + "-[a-z0-9]+-[a-z0-9]+"


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
