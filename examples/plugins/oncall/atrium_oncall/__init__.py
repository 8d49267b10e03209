"""Atrium's on-call plugin: who is on call for a component now, from a rotations file.

Adds ``Component.onCall`` (its owner's rotation: primary, secondary, until when, the escalation
policy; or an override), the owners-only ``overrideOnCall`` mutation (audited, stored in the
plugin's own table) and an "On call" panel on a component's page (its console part shipped in
``console/``). Built on Atrium's public plugin API (``graph.plugin``) alone: README.md.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from graph.plugin import PluginBuilder

from atrium_oncall.demo import demo
from atrium_oncall.fields import PLUGIN_ID, ComponentOnCall, OnCallMutation, OnCallState
from atrium_oncall.rotations import Rotations
from atrium_oncall.settings import OnCallSettings
from atrium_oncall.store import override_loader

__all__ = ["OnCallPlugin", "OnCallSettings", "plugin"]

HERE = Path(__file__).parent


class OnCallPlugin:
    """The plugin; its settings are read from Atrium's settings unless given (tests give them)."""

    id = PLUGIN_ID

    def __init__(self, settings: OnCallSettings | None = None) -> None:
        self.given = settings

    def setup(self, builder: PluginBuilder) -> None:
        settings = self.given or builder.plugin_settings(OnCallSettings)

        @asynccontextmanager
        async def lifespan(services: Any) -> AsyncIterator[OnCallState]:
            # A broken rotations file stops the start-up, saying what is wrong and where.
            yield OnCallState(settings, Rotations(settings.oncall_rotations_file))

        builder.lifespan(lifespan)
        builder.extend_type("Component", ComponentOnCall)
        builder.mutation(OnCallMutation)
        builder.loader("overrides", override_loader)
        builder.migrations(HERE / "migrations")
        builder.demo(demo)
        # The console part: operations and a module built against the console's SDK.
        builder.console(HERE / "console")
        builder.panel(
            "entity",
            "EntityOnCall",
            template=HERE / "templates" / "oncall_panel.html",
            kinds=("component",),
            section=("oncall", "On call"),
        )


plugin = OnCallPlugin()
