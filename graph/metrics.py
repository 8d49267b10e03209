"""Prometheus metrics, one registry per app so several apps can live in one process."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["Metrics"]

# Operation names come from clients; past this many distinct ones, the rest count as "other".
MAX_OPERATION_LABELS = 200


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "atrium_graphql_requests",
            "GraphQL requests by operation and HTTP status",
            ["operation", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "atrium_graphql_request_duration_seconds",
            "GraphQL request latency by operation",
            ["operation"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.errors = Counter(
            "atrium_graphql_errors",
            "GraphQL errors by operation and code",
            ["operation", "code"],
            registry=self.registry,
        )
        self.sql_queries = Gauge(
            "atrium_sql_queries", "SQL statements sent since start", registry=self.registry
        )
        self.cache = Gauge(
            "atrium_cache_lookups",
            "Cache lookups since start, by level (l1, l2, response, response-l2) and outcome "
            "(hit, miss, error)",
            ["level", "outcome"],
            registry=self.registry,
        )
        self._operations: set[str] = set()
        self._sources: list[tuple[Any, Gauge]] = []
        # Labelled children by (operation, status): looking them up costs more than counting.
        self._children: dict[tuple[str | None, int], tuple[Any, Any]] = {}

    def observe_request(self, name: str | None, status: int, seconds: float) -> None:
        children = self._children.get((name, status))
        if children is None:
            operation = self.operation_label(name)
            children = (
                self.requests.labels(operation, str(status)),
                self.latency.labels(operation),
            )
            if len(self._children) < 4 * MAX_OPERATION_LABELS:
                self._children[name, status] = children
        children[0].inc()
        children[1].observe(seconds)

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

    def operation_label(self, name: str | None) -> str:
        if not name:
            return "anonymous"
        if name in self._operations:
            return name
        if len(self._operations) >= MAX_OPERATION_LABELS:
            return "other"
        self._operations.add(name)
        return name

    def render(self) -> bytes:
        return generate_latest(self.registry)
