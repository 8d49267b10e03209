"""Attention, registered through the public plugin API: ``Viewer.attention`` and
``Group.attention`` over what every plugin's provider says (``builder.attention``)."""

from __future__ import annotations

from graph.attention.types import GroupAttention, ViewerAttention
from graph.plugin import PluginBuilder

__all__ = ["AttentionPlugin"]


class AttentionPlugin:
    id = "attention"

    def setup(self, builder: PluginBuilder) -> None:
        builder.extend_type("Viewer", ViewerAttention)
        builder.extend_type("Group", GroupAttention)
