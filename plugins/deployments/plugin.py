"""The deployments plugin, registered through the public plugin API only."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from graph.plugin import PluginBuilder
from plugins.deployments.attention import deploy_attention
from plugins.deployments.fields import (
    ComponentDeployments,
    DeploymentQuery,
    DeploymentSubscription,
    GroupDeployments,
)
from plugins.deployments.hooks import atrium_hook, github_hook
from plugins.deployments.loaders import ROLLBACK_LOADER, rollback_loader
from plugins.deployments.mutations import DeploymentMutation
from plugins.deployments.service import PLUGIN_ID, Deployments, running
from plugins.deployments.settings import DeploymentSettings

__all__ = ["DeploymentsPlugin"]

MIGRATIONS = Path(__file__).parent / "migrations"
TEMPLATES = Path(__file__).parent / "templates"


class DeploymentsPlugin:
    id = PLUGIN_ID

    def __init__(self, settings: DeploymentSettings | None = None) -> None:
        self._settings = settings

    def setup(self, builder: PluginBuilder) -> None:
        # Given to the constructor (as tests do), or read from the environment and atrium.toml.
        settings = self._settings or builder.plugin_settings(DeploymentSettings)
        builder.migrations(MIGRATIONS)
        builder.query(DeploymentQuery)
        builder.mutation(DeploymentMutation)
        builder.subscription(DeploymentSubscription)
        builder.extend_type("Component", ComponentDeployments)
        builder.extend_type("Group", GroupDeployments)
        builder.loader(ROLLBACK_LOADER.partition(".")[2], rollback_loader)
        builder.route("/hooks/deployments/github", github_hook)
        builder.route("/hooks/deployments", atrium_hook)
        # The console: a component's pipeline and history, a team's DORA figures (the client's
        # side is web/src/plugins/deployments/).
        builder.panel(
            "entity",
            "EntityDeployments",
            template=TEMPLATES / "entity_deployments.html",
            kinds=("component",),
            section=("deployments", "Deployments"),
        )
        builder.panel(
            "team",
            "TeamDora",
            template=TEMPLATES / "team_dora.html",
            section=("delivery", "Delivery"),
        )
        # Failed, stuck and waiting deploys, for the console's home (Viewer.attention).
        builder.attention(deploy_attention)
        # Stages bound to a PinApp roll it out through PinCompute; without it they say so.
        builder.use("workloads", optional=True)

        @contextlib.asynccontextmanager
        async def lifespan(services: Any) -> AsyncIterator[Deployments]:
            history = None
            if settings.deployments_demo and not services.settings.production:
                from plugins.deployments.demo import seed_history

                history = seed_history
            async with running(settings, services, demo_history=history) as deployments:
                yield deployments

        builder.lifespan(lifespan)
        builder.job("rollouts", _check_rollouts, interval=settings.deployments_check_interval)

        @contextlib.contextmanager
        def demo(catalog: Path, data_dir: Path) -> Iterator[dict[str, str]]:
            yield {"ATRIUM_DEPLOYMENTS_DEMO": "true"}  # a history, written at start-up

        builder.demo(demo)
        builder.job("attach", _attach_waiting, interval=settings.deployments_check_interval)


async def _check_rollouts(services: Any) -> None:
    deployments: Deployments | None = services.extras.get(PLUGIN_ID)
    if deployments is not None:
        await deployments.check_rollouts()


async def _attach_waiting(services: Any) -> None:
    deployments: Deployments | None = services.extras.get(PLUGIN_ID)
    if deployments is not None:
        await deployments.attach_waiting()
