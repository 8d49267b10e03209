"""The on-call plugin's settings, read by Atrium like its own: ``ATRIUM_ONCALL_ROTATIONS_FILE``
or ``oncall_rotations_file`` in the ``[plugins.oncall]`` section of ``atrium.toml``."""

from __future__ import annotations

from pathlib import Path

from graph.plugin import PluginSettings
from pydantic import Field

__all__ = ["OnCallSettings"]


class OnCallSettings(PluginSettings):
    # Unset, no component has anyone on call (onCall is null), and Atrium serves on: the plugin
    # may be installed before its rotations are written.
    oncall_rotations_file: Path | None = Field(
        default=None, description="The rotations YAML file (README: The rotations file)."
    )
    oncall_max_override_days: int = Field(
        default=14, gt=0, le=90, description="How far ahead an override may end, in days."
    )
