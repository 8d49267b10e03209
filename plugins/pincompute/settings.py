"""PinCompute's own settings: ``ATRIUM_<FIELD>`` variables, or ``[plugins.pincompute]`` in
``atrium.toml`` (read through ``builder.plugin_settings``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, SecretStr

from graph.plugin import PluginSettings

__all__ = ["ClusterSpec", "ComputeSettings", "Quota"]


class ClusterSpec(BaseModel):
    """A cluster named explicitly rather than through a kubeconfig."""

    name: str
    server: str
    token: SecretStr | None = None  # shown masked by `atrium plugins`
    ca_file: str | None = None
    insecure: bool = False


class Quota(BaseModel):
    """What one team's workloads may request in total; None is no limit."""

    replicas: int | None = None
    cpu: str | None = None  # "40", "500m"
    memory: str | None = None  # "64Gi"


class ComputeSettings(PluginSettings):
    # Kubeconfig files, separated by ":" as for kubectl: every context is a cluster.
    kubeconfig: str | None = None
    # More clusters as JSON: [{"name": ..., "server": ..., "token": ..., "ca_file": ...}].
    clusters: list[ClusterSpec] = Field(default_factory=list)
    compute_namespace: str | None = None  # watch one namespace only; unset watches all
    compute_watch_timeout: int = Field(default=300, ge=1)  # seconds a watch lasts server-side
    compute_request_timeout: float = Field(default=10.0, gt=0)
    compute_pod_cache_seconds: float = Field(default=5.0, ge=0)
    # Quotas per owner (a group or user ref), and for owners not listed.
    compute_quotas: dict[str, Quota] = Field(default_factory=dict)
    compute_default_quota: Quota = Field(default_factory=lambda: Quota(replicas=200))

    def kubeconfig_dicts(self) -> list[dict[str, Any]]:
        """Every cluster as a kubeconfig dict with one context."""
        import yaml

        found: list[dict[str, Any]] = []
        for path in (self.kubeconfig or "").split(":"):
            if path:
                with open(path, encoding="utf-8") as handle:
                    found.append(yaml.safe_load(handle) or {})
        for spec in self.clusters:
            cluster: dict[str, Any] = {"server": spec.server}
            if spec.ca_file:
                cluster["certificate-authority"] = spec.ca_file
            if spec.insecure:
                cluster["insecure-skip-tls-verify"] = True
            found.append(
                {
                    "clusters": [{"name": spec.name, "cluster": cluster}],
                    "users": [
                        {
                            "name": spec.name,
                            "user": {"token": spec.token.get_secret_value()} if spec.token else {},
                        }
                    ],
                    "contexts": [
                        {"name": spec.name, "context": {"cluster": spec.name, "user": spec.name}}
                    ],
                }
            )
        return found
