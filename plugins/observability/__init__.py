"""Observability: metrics from Prometheus (and, to come, alerts and silences from
Alertmanager, a workload's merged logs), as a plugin on the public plugin API."""

from plugins.observability.plugin import ObservabilityPlugin

plugin = ObservabilityPlugin()

__all__ = ["ObservabilityPlugin", "plugin"]
