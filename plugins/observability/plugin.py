"""The observability plugin, registered through the public plugin API only."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from graph.plugin import PluginBuilder, shared_cache
from plugins.observability.alerts import (
    AlertFields,
    GroupAlerts,
    SilenceMutation,
    WorkloadAlerts,
)
from plugins.observability.attention import alert_attention
from plugins.observability.fields import PLUGIN_ID, ComponentMetrics, WorkloadMetrics
from plugins.observability.metrics import Observability, running
from plugins.observability.settings import ObservabilitySettings

__all__ = ["ObservabilityPlugin"]


TEMPLATES = Path(__file__).parent / "templates"


class ObservabilityPlugin:
    id = PLUGIN_ID

    def __init__(self, settings: ObservabilitySettings | None = None) -> None:
        self._settings = settings

    def setup(self, builder: PluginBuilder) -> None:
        # Given to the constructor (as tests do), or read from the environment and atrium.toml.
        settings = self._settings or builder.plugin_settings(ObservabilitySettings)
        builder.extend_type("Component", ComponentMetrics)
        builder.extend_type("Component", AlertFields)
        builder.extend_type("Group", GroupAlerts)
        # A PinApp's CPU, memory and alerts, when PinCompute is installed.
        builder.extend_type("PinApp", WorkloadMetrics, optional=True)
        builder.extend_type("PinApp", WorkloadAlerts, optional=True)
        builder.use("workloads", optional=True)
        builder.mutation(SilenceMutation)
        # Firing alerts of a team's components, for the console's home (Viewer.attention).
        builder.attention(alert_attention)
        # The console's panels (web/src/plugins/observability/): metrics, then alerts, each a
        # section of its page. Offered whether or not their backend is configured: one that is
        # not answers UNAVAILABLE saying which setting to set, and the section says so.
        builder.panel(
            "entity",
            "EntityMetrics",
            template=TEMPLATES / "entity_metrics.html",
            kinds=("component",),
            section=("metrics", "Metrics"),
        )
        builder.panel(
            "entity",
            "EntityAlerts",
            template=TEMPLATES / "entity_alerts.html",
            kinds=("component",),
            section=("alerts", "Alerts"),
        )
        builder.panel(
            "team",
            "TeamAlerts",
            template=TEMPLATES / "team_alerts.html",
            section=("alerts", "Alerts"),
        )
        builder.panel(
            "team",
            "TeamErrorRatios",
            template=TEMPLATES / "team_error_ratios.html",
            section=("error-ratios", "Error ratios"),
        )
        # A PinApp's page: its metrics, alerts and merged log, which the client fetches.
        builder.panel("workload", "WorkloadObservability", section=("metrics", "Metrics"))
        builder.panel("workload", "WorkloadObservability", section=("alerts", "Alerts"))
        builder.panel("workload", "WorkloadLogs", section=("logs", "Logs"))
        builder.migrations(Path(__file__).parent / "migrations")

        @contextlib.asynccontextmanager
        async def lifespan(services: Any) -> AsyncIterator[Observability]:
            cache = shared_cache(
                services, f"{PLUGIN_ID}.metrics", ttl=settings.metrics_cache_seconds
            )
            async with running(settings, cache) as observability:
                yield observability

        builder.lifespan(lifespan)

        @contextlib.contextmanager
        def demo(catalog: Path, data_dir: Path) -> Iterator[dict[str, str]]:
            # Prometheus and Alertmanager of the demo's own, unless real ones are configured.
            from plugins.observability.demo import demo_backends

            with demo_backends(settings, catalog, data_dir) as env:
                yield env

        builder.demo(demo)
