"""The observability plugin, registered through the public plugin API only."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from graph.plugin import PluginBuilder, shared_cache
from plugins.observability.alerts import (
    AlertFields,
    GroupAlerts,
    SilenceMutation,
    WorkloadAlerts,
)
from plugins.observability.fields import PLUGIN_ID, ComponentMetrics, WorkloadMetrics
from plugins.observability.metrics import Observability, running
from plugins.observability.settings import ObservabilitySettings

__all__ = ["ObservabilityPlugin"]


class ObservabilityPlugin:
    id = PLUGIN_ID

    def __init__(self, settings: ObservabilitySettings | None = None) -> None:
        self._settings = settings

    def setup(self, builder: PluginBuilder) -> None:
        settings = self._settings or ObservabilitySettings()
        builder.extend_type("Component", ComponentMetrics)
        builder.extend_type("Component", AlertFields)
        builder.extend_type("Group", GroupAlerts)
        # A PinApp's CPU, memory and alerts, when PinCompute is installed.
        builder.extend_type("PinApp", WorkloadMetrics, optional=True)
        builder.extend_type("PinApp", WorkloadAlerts, optional=True)
        builder.use("workloads", optional=True)
        builder.mutation(SilenceMutation)
        builder.migrations(Path(__file__).parent / "migrations")

        @contextlib.asynccontextmanager
        async def lifespan(services: Any) -> AsyncIterator[Observability]:
            cache = shared_cache(
                services, f"{PLUGIN_ID}.metrics", ttl=settings.metrics_cache_seconds
            )
            async with running(settings, cache) as observability:
                yield observability

        builder.lifespan(lifespan)
