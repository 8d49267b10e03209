"""Which plugins a test's app has: plugin objects as given, or installed ones by entry-point
name, or every installed one."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graph.plugin import Plugin

__all__ = ["installed_plugin_ids", "select_plugins"]


def installed_plugin_ids() -> list[str]:
    """The entry-point names of every installed plugin (Atrium's bundled ones and any other
    package's), sorted."""
    from graph.assembly import installed_plugins

    return [ep.name for ep in installed_plugins()]


def select_plugins(given: Iterable[Any] | None) -> list[Plugin]:
    """``given`` plugins (objects, or entry-point names loaded as ``atrium serve`` loads
    them), or every installed plugin when None."""
    from graph.assembly import installed_plugins, load_plugin

    entry_points = {ep.name: ep for ep in installed_plugins()}
    if given is None:
        return [load_plugin(ep) for ep in entry_points.values()]
    chosen: list[Plugin] = []
    for item in given:
        if isinstance(item, str):
            if item not in entry_points:
                raise LookupError(
                    f"no installed plugin is named {item!r} (installed: "
                    f"{', '.join(entry_points) or 'none'})"
                )
            chosen.append(load_plugin(entry_points[item]))
        else:
            chosen.append(item)
    return chosen
