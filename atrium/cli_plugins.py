"""``atrium plugins``: the installed plugins and their settings, as ``atrium serve`` would read
them (secrets masked), each with where its value came from."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any

import orjson

from graph.settings import Settings

__all__ = ["add_plugins_command"]

# Longest value shown in a row; --json has them whole.
_WIDTH = 60


def add_plugins_command(commands: Any) -> None:
    plugins = commands.add_parser(
        "plugins",
        help="list the installed plugins and their settings",
        description="List the installed plugins (entry points of atrium.plugins) and each one's "
        "settings: the value (secrets masked) and where it came from: the default, an "
        "ATRIUM_* environment variable, or atrium.toml. Settings are validated as atrium serve "
        "validates them: a bad value is reported and exits 1.",
    )
    plugins.add_argument("--json", action="store_true", help="print the list as JSON")
    plugins.set_defaults(run=_plugins)


def _plugins(settings: Settings, args: argparse.Namespace) -> int:
    found = describe_plugins(settings)
    if args.json:
        sys.stdout.write(orjson.dumps(found, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.writelines(f"{line}\n" for line in _lines(found))
    return 0


def describe_plugins(settings: Settings) -> list[dict[str, Any]]:
    """Each installed plugin, in id order: its id, whether it is enabled, and its settings."""
    from importlib.metadata import entry_points

    from graph.assembly import ENTRY_POINT_GROUP, assemble, core_plugins, discover_plugins

    enabled = discover_plugins(settings)
    assembly = assemble(settings, [*core_plugins(), *enabled])
    described: dict[str, dict[str, Any]] = {}
    for plugin in enabled:
        read = assembly.plugin_settings.get(plugin.id)
        described[plugin.id] = {
            "id": plugin.id,
            "enabled": True,
            "settings": [
                {"name": s.name, "value": s.value, "source": str(s.source), "where": s.where}
                for s in (read.settings if read is not None else ())
            ],
        }
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in described:
            described[ep.name] = {"id": ep.name, "enabled": False, "settings": []}
    return [described[name] for name in sorted(described)]


def _lines(found: list[dict[str, Any]]) -> Iterator[str]:
    if not found:
        yield "no plugins installed"
    rows = [s for plugin in found for s in plugin["settings"]]
    name_width = max((len(s["name"]) for s in rows), default=0)
    value_width = min(_WIDTH, max((len(_shown(s["value"])) for s in rows), default=0))
    for plugin in found:
        if not plugin["enabled"]:
            yield f"{plugin['id']}  (disabled by ATRIUM_DISABLED_PLUGINS)"
            continue
        yield plugin["id"]
        if not plugin["settings"]:
            yield "  no settings"
        for s in plugin["settings"]:
            source = {"default": "default", "environment": f"environment: {s['where']}"}.get(
                s["source"], s["where"]
            )
            value = _shown(s["value"])
            yield f"  {s['name']:<{name_width}}  {value:<{value_width}}  {source}".rstrip()


def _shown(value: Any) -> str:
    if value is None:
        text = "unset"
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, separators=(",", ":"))
    return text if len(text) <= _WIDTH else text[: _WIDTH - 1] + "…"
