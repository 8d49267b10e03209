"""The observability plugin's settings: ``ATRIUM_<FIELD>`` variables, or
``[plugins.observability]`` in ``atrium.toml`` (read through ``builder.plugin_settings``)."""

from __future__ import annotations

from pydantic import Field

from graph.plugin import PluginSettings

__all__ = ["DEFAULT_TEMPLATES", "ObservabilitySettings"]

# PromQL behind each series, for the common conventions: requests in http_requests_total{service,
# code}, latency in http_request_duration_seconds_bucket{service, le}; a PinApp's CPU and memory
# from cAdvisor by namespace and pod. Placeholders, each filled with an escaped label value:
# ``$service`` (the component's service label), and for PinApps ``$cluster``, ``$namespace``,
# ``$name`` and ``$pods`` (a regular expression matching its pods' names, ``<name>-<replica set
# hash>-<suffix>``). Nothing else comes from a client.
DEFAULT_TEMPLATES: dict[str, str] = {
    "request_rate": 'sum(rate(http_requests_total{service="$service"}[5m]))',
    "error_ratio": (
        'sum(rate(http_requests_total{service="$service",code=~"5.."}[5m]))'
        ' / sum(rate(http_requests_total{service="$service"}[5m]))'
    ),
    "latency_p50": (
        "histogram_quantile(0.5, sum by (le) "
        '(rate(http_request_duration_seconds_bucket{service="$service"}[5m])))'
    ),
    "latency_p95": (
        "histogram_quantile(0.95, sum by (le) "
        '(rate(http_request_duration_seconds_bucket{service="$service"}[5m])))'
    ),
    "latency_p99": (
        "histogram_quantile(0.99, sum by (le) "
        '(rate(http_request_duration_seconds_bucket{service="$service"}[5m])))'
    ),
    "cpu": (
        "sum by (pod) (rate(container_cpu_usage_seconds_total"
        '{namespace="$namespace",pod=~"$pods",container!=""}[5m]))'
    ),
    "memory": (
        "sum by (pod) (container_memory_working_set_bytes"
        '{namespace="$namespace",pod=~"$pods",container!=""})'
    ),
}


class ObservabilitySettings(PluginSettings):
    prometheus_url: str | None = None
    alertmanager_url: str | None = None
    # Seconds a call to Prometheus or Alertmanager may take before its fields are UNAVAILABLE.
    observability_timeout: float = Field(default=3.0, gt=0)
    # The most points a series may have (Prometheus itself refuses over 11,000).
    metrics_max_points: int = Field(default=1_000, ge=10, le=11_000)
    # The longest range a client may ask for, in seconds (default 30 days).
    metrics_max_range: int = Field(default=30 * 86_400, ge=60)
    # How long an answer is kept, in seconds; windows are aligned to the step, so everyone
    # looking at one dashboard shares one query per step.
    metrics_cache_seconds: int = Field(default=30, ge=1)
    # The series' PromQL, by name (JSON object); unset names keep the defaults.
    metrics_templates: dict[str, str] = Field(default_factory=dict)

    def templates(self) -> dict[str, str]:
        return {**DEFAULT_TEMPLATES, **self.metrics_templates}
