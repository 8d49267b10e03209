"""``atrium plugins``: the installed plugins as ``atrium serve`` would assemble them: each one's
fields, console panels and their operations, whether compiled plans run (and what switches
them off), and its settings (secrets masked), each with where its value came from."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from graph.settings import Settings

__all__ = ["add_plugins_command"]

# Longest value shown in a row; --json has them whole.
_WIDTH = 60


def add_plugins_command(commands: Any) -> None:
    plugins = commands.add_parser(
        "plugins",
        help="list the installed plugins, what they add, and their settings",
        description="List the installed plugins (entry points of atrium.plugins): each one's "
        "fields (Type.field), console panels and the operations they run, whether compiled "
        "plans run (off: what switches them off, such as a plugin's schema extension), and "
        "its settings: the value (secrets masked) and where it came from: the default, an "
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
    """Each installed plugin, in id order: its id, whether it is enabled, its fields, panels
    and their operations, whether plans run, and its settings."""
    from importlib.metadata import entry_points

    from graph.assembly import ENTRY_POINT_GROUP, assemble, core_plugins, discover_plugins

    enabled = discover_plugins(settings)
    assembly = assemble(settings, [*core_plugins(), *enabled])
    assert assembly.schema is not None
    names = assembly.schema.config.name_converter
    plans = {"run": assembly.plans is not None, "off_by": assembly.plans_off}
    described: dict[str, dict[str, Any]] = {}
    for plugin in enabled:
        read = assembly.plugin_settings.get(plugin.id)
        contribution = assembly.contributions[plugin.id]
        panels = [
            {
                "page": p.page,
                "operation": p.operation,
                "kinds": list(p.kinds) if p.kinds is not None else None,
                "section": p.section[0] if p.section is not None else None,
            }
            for p in contribution.panels
        ]
        described[plugin.id] = {
            "id": plugin.id,
            "enabled": True,
            "fields": _fields(contribution, names),
            "panels": panels,
            "operations": sorted({p["operation"] for p in panels}),
            "plans": plans,
            "switches_plans_off": assembly.plugin_extensions.get(plugin.id, []),
            "settings": [
                {"name": s.name, "value": s.value, "source": str(s.source), "where": s.where}
                for s in (read.settings if read is not None else ())
            ],
        }
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in described:
            described[ep.name] = {"id": ep.name, "enabled": False, "settings": []}
    return [described[name] for name in sorted(described)]


def _fields(contribution: Any, names: Any) -> list[str]:
    """``Type.field`` of every field the plugin adds: to the root types, to other plugins'
    types, and on types of its own that a field of its returns."""
    found: list[str] = []
    classes = [
        *(("Query", c) for c in contribution.query),
        *(("Mutation", c) for c in contribution.mutation),
        *(("Subscription", c) for c in contribution.subscription),
        *((t, c) for t, added in contribution.type_extensions.items() for c, _ in added),
    ]
    for type_name, cls in classes:
        found += [
            f"{type_name}.{names.get_graphql_name(f)}" for f in cls.__strawberry_definition__.fields
        ]
    return found


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
        plans = plugin["plans"]
        yield "  plans: " + ("on" if plans["run"] else f"off, by {plans['off_by']}")
        if plugin["switches_plans_off"]:
            off = ", ".join(plugin["switches_plans_off"])
            yield f"  switches compiled plans off with its schema extension(s): {off}"
        yield f"  fields: {', '.join(plugin['fields']) or 'none'}"
        for p in plugin["panels"]:
            where = f"{p['page']} page" + (f" of {', '.join(p['kinds'])}" if p["kinds"] else "")
            section = f", section {p['section']}" if p["section"] else ""
            yield f"  panel: {p['operation']} on the {where}{section}"
        yield f"  operations: {', '.join(plugin['operations']) or 'none'}"
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
