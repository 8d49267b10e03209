"""Prometheus metrics, one registry per app so several apps can live in one process.

Requests are counted on the hot path by plain integers and turned into Prometheus families
only when ``/metrics`` is scraped: a labelled ``Counter`` and ``Histogram`` from
prometheus_client take a lock and a few lookups per observation, which at thousands of cached
answers a second costs more than the answer.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from typing import Any, Final

from graphql import GraphQLError
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from graph.errors import error_code

__all__ = ["MAX_OPERATION_LABELS", "OTHER", "Metrics"]

# An operation's name is a label only once a document Atrium knows (persisted or trusted) ran
# under it (``know``); any other name a client sends counts as "other", as do known names past
# this many (a development server persists what clients send).
MAX_OPERATION_LABELS = 200
OTHER = "other"
LATENCY_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class _Requests(Collector):
    """Requests by (operation, status) and their latency by operation; or by route, for the
    REST API (``prefix`` names the families, ``label`` what requests are told apart by)."""

    def __init__(
        self, prefix: str = "atrium_graphql", label: str = "operation", what: str = "GraphQL"
    ) -> None:
        self.prefix = prefix
        self.label = label
        self.what = what
        self.counts: dict[tuple[str, int], int] = {}
        # operation → [count per bucket (the last one +Inf)..., sum of seconds]
        self.latency: dict[str, list[float]] = {}

    def observe(self, operation: str, status: int, seconds: float) -> None:
        key = (operation, status)
        counts = self.counts
        counts[key] = counts.get(key, 0) + 1
        row = self.latency.get(operation)
        if row is None:
            row = self.latency[operation] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        row[bisect_left(LATENCY_BUCKETS, seconds)] += 1
        row[-1] += seconds

    def observe_many(self, operation: str, status: int, seconds: Sequence[float]) -> None:
        """``observe`` for each of these durations, at once."""
        key = (operation, status)
        self.counts[key] = self.counts.get(key, 0) + len(seconds)
        row = self.latency.get(operation)
        if row is None:
            row = self.latency[operation] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        for each in seconds:
            row[bisect_left(LATENCY_BUCKETS, each)] += 1
        row[-1] += sum(seconds)

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            f"{self.prefix}_requests",
            f"{self.what} requests by {self.label} and HTTP status",
            labels=[self.label, "status"],
        )
        for (operation, status), n in sorted(self.counts.items()):
            requests.add_metric([operation, str(status)], n)
        yield requests
        latency = HistogramMetricFamily(
            f"{self.prefix}_request_duration_seconds",
            f"{self.what} request latency by {self.label}",
            labels=[self.label],
        )
        for operation, row in sorted(self.latency.items()):
            cumulative = 0.0
            buckets = []
            for bound, count in zip((*map(float, LATENCY_BUCKETS), math.inf), row, strict=False):
                cumulative += count
                buckets.append((_bound(bound), cumulative))
            latency.add_metric([operation], buckets, sum_value=row[-1])
        yield latency


class _OperationRuns(Collector):
    """Operations executed, by executor: on a compiled plan, or on the generic executor and
    why (graph.services.Services.execute names the reasons)."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}

    def collect(self) -> Iterator[Metric]:
        runs = CounterMetricFamily(
            "atrium_operation_runs",
            "Operations executed since start, by executor (plan: a compiled plan; generic) and "
            "reason (compiled; or why the generic executor ran: plans_off, not_persisted, "
            "first_run, not_plannable, declined)",
            labels=["executor", "reason"],
        )
        for (executor, reason), n in sorted(self.counts.items()):
            runs.add_metric([executor, reason], n)
        yield runs


def _bound(value: float) -> str:
    return "+Inf" if value == math.inf else repr(value)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._requests = _Requests()
        self.registry.register(self._requests)
        # Backstage's catalog API (graph.catalog_api), by route template: the routes are a
        # fixed set, so the labels are too.
        self._routes = _Requests("atrium_catalog_api", "route", "Catalog REST API")
        self.registry.register(self._routes)
        self.errors = Counter(
            "atrium_graphql_errors",
            "GraphQL errors by operation and code",
            ["operation", "code"],
            registry=self.registry,
        )
        self.sql_queries = Gauge(
            "atrium_sql_queries", "SQL statements sent since start", registry=self.registry
        )
        self.job_runs = Counter(
            "atrium_job_runs",
            "Scheduled job runs on this replica, by job (each runs on one replica per interval)",
            ["job"],
            registry=self.registry,
        )
        self.cache = Gauge(
            "atrium_cache_lookups",
            "Cache lookups since start, by level (l1, l2, response, response-l2) and outcome "
            "(hit, miss, error)",
            ["level", "outcome"],
            registry=self.registry,
        )
        self.hot_answers = Gauge(
            "atrium_hot_answers",
            "Requests answered since start by the HTTP protocol from the hot answers (counted "
            "in atrium_graphql_requests too)",
            registry=self.registry,
        )
        self._runs = _OperationRuns()
        self.registry.register(self._runs)
        self._operations: set[str] = set()
        self._sources: list[tuple[Any, Gauge]] = []

    def observe_request(self, name: str | None, status: int, seconds: float) -> None:
        operation = name if name in self._operations else self.operation_label(name)
        self._requests.observe(operation, status, seconds)

    def observe_requests(self, name: str | None, status: int, seconds: Sequence[float]) -> None:
        """Requests of one operation answered alike, counted at once."""
        self._requests.observe_many(self.operation_label(name), status, seconds)

    def count_run(self, executor: str, reason: str) -> None:
        """An operation executed (``atrium_operation_runs``)."""
        key = (executor, reason)
        counts = self._runs.counts
        counts[key] = counts.get(key, 0) + 1

    def operation_runs(self) -> dict[tuple[str, str], int]:
        """``atrium_operation_runs`` as it stands: runs by (executor, reason)."""
        return dict(self._runs.counts)

    def observe_route(self, route: str, status: int, seconds: float) -> None:
        self._routes.observe(route, status, seconds)

    def count_errors(self, name: str | None, errors: Sequence[GraphQLError] | None) -> None:
        if errors:
            operation = self.operation_label(name)
            for error in errors:
                self.errors.labels(operation, error_code(error)).inc()

    def add_gauges(self, sources: Sequence[Any]) -> None:
        """Gauges read at scrape time (graph.plugin.GaugeSource)."""
        self._sources = [
            (source, Gauge(source.name, source.help, list(source.labels), registry=self.registry))
            for source in sources
        ]

    def cache_counts(self, counts: dict[tuple[str, str], int]) -> None:
        for (level, outcome), n in counts.items():
            self.cache.labels(level, outcome).set(n)

    async def refresh(self, services: Any) -> None:
        for source, gauge in self._sources:
            gauge.clear()
            for labels, value in (await source.read(services)).items():
                (gauge.labels(*labels) if labels else gauge).set(value)

    def know(self, name: str | None) -> None:
        """``name`` is an operation of a document Atrium knows, or a label of the server's own
        (a page's): from now on requests under it count by it."""
        if name and name not in self._operations and len(self._operations) < MAX_OPERATION_LABELS:
            self._operations.add(name)

    def operation_label(self, name: str | None) -> str:
        if not name:
            return "anonymous"
        return name if name in self._operations else OTHER

    def render(self) -> bytes:
        return generate_latest(self.registry)
