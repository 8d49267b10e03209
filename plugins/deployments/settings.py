"""The deployments plugin's settings: ``ATRIUM_<FIELD>`` variables, or ``[plugins.deployments]``
in ``atrium.toml`` (read through ``builder.plugin_settings``)."""

from __future__ import annotations

from pydantic import Field, SecretStr

from graph.plugin import PluginSettings

__all__ = ["DeploymentSettings"]


class DeploymentSettings(PluginSettings):
    # Secrets the webhooks are signed with (HMAC-SHA256 over the raw body). A source whose
    # secret is unset refuses every delivery: nothing unsigned is ever stored.
    deployments_github_secret: SecretStr | None = None
    deployments_webhook_secret: SecretStr | None = None
    # Largest webhook body accepted, in bytes (GitHub's deployment events are a few KB).
    deployments_max_body: int = Field(default=1_048_576, ge=1024)
    # A CD system Atrium calls for stages bound to no PinApp: a signed JSON POST (see README).
    deployments_cd_url: str | None = None
    deployments_cd_secret: SecretStr | None = None
    deployments_cd_timeout: float = Field(default=10.0, gt=0)
    # How long a PinApp rollout may take before its deploy is failed, in seconds.
    deployments_progress_deadline: float = Field(default=600.0, gt=0)
    # How often in-flight rollouts are checked and waiting events attached, in seconds.
    deployments_check_interval: float = Field(default=5.0, gt=0)
    # Stage names counted as production in DORA figures when a pipeline marks none.
    deployments_production_stages: list[str] = Field(default_factory=lambda: ["production", "prod"])
    # `atrium serve --demo` sets this: a generated history is written into an empty one.
    deployments_demo: bool = False
    # How long answers showing deploys may be cached, in seconds (changes drop them at once).
    deployments_cache_seconds: int = Field(default=30, ge=0)
