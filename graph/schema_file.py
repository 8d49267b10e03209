"""The schema as SDL: what ``atrium schema print`` prints and ``schema.graphql`` commits."""

from __future__ import annotations

from collections.abc import Sequence

from graph.assembly import assemble, core_plugins, discover_plugins
from graph.plugin import Plugin
from graph.settings import Settings

__all__ = ["schema_sdl"]


def schema_sdl(settings: Settings, plugins: Sequence[Plugin] | None = None) -> str:
    found = list(plugins) if plugins is not None else discover_plugins(settings)
    schema = assemble(settings, [*core_plugins(), *found]).schema
    assert schema is not None
    return schema.as_str() + "\n"
