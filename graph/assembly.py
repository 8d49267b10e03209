"""Assembling the schema, loaders, migrations and jobs from the plugins, checking for clashes."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import strawberry
from strawberry.extensions import (
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    SchemaExtension,
    ValidationCache,
)
from strawberry.schema.config import StrawberryConfig

from graph.errors import AtriumSchema, MaskUnexpectedErrors
from graph.plugin import BackgroundJob, GaugeSource, Plugin, PluginBuilder, PluginConflict
from graph.settings import Settings
from loaders.registry import LoaderRegistry
from sources.migrations import Migration, core_migrations, read_migrations

__all__ = ["Assembly", "assemble", "core_plugins", "discover_plugins"]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "atrium.plugins"


@dataclass(slots=True)
class Assembly:
    settings: Settings
    plugin_ids: list[str] = field(default_factory=list)
    loaders: LoaderRegistry = field(default_factory=LoaderRegistry)
    migrations: list[Migration] = field(default_factory=list)
    jobs: list[BackgroundJob] = field(default_factory=list)
    gauges: list[GaugeSource] = field(default_factory=list)
    schema: strawberry.Schema | None = None


def core_plugins() -> list[Plugin]:
    """What every Atrium has; registered through the same builder as any plugin."""
    from graph.catalog.plugin import CatalogPlugin
    from graph.ownership.plugin import OwnershipPlugin

    return [CatalogPlugin(), OwnershipPlugin()]


def discover_plugins(settings: Settings) -> list[Plugin]:
    """Plugins installed under the ``atrium.plugins`` entry-point group, less disabled ones."""
    found: list[Plugin] = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if ep.name in settings.disabled_plugins:
            log.info("plugin disabled", extra={"plugin": ep.name})
            continue
        plugin = ep.load()
        if not isinstance(plugin, Plugin):
            raise PluginConflict(f"entry point {ep.name} ({ep.value}) is not an Atrium plugin")
        if plugin.id != ep.name:
            raise PluginConflict(
                f"entry point {ep.name} ({ep.value}) loads a plugin whose id is {plugin.id}"
            )
        found.append(plugin)
    return found


def assemble(settings: Settings, plugins: Sequence[Plugin]) -> Assembly:
    assembly = Assembly(settings, migrations=core_migrations())
    query_fields: dict[str, str] = {}
    mutation_fields: dict[str, str] = {}
    query: list[type] = []
    mutation: list[type] = []
    types: list[type] = []
    extensions: list[Any] = []
    for plugin in plugins:
        if plugin.id in assembly.plugin_ids:
            raise PluginConflict(f"two plugins have the id {plugin.id}")
        assembly.plugin_ids.append(plugin.id)
        builder = PluginBuilder(plugin.id, settings)
        plugin.setup(builder)
        contribution = builder.contribution
        for cls in contribution.query:
            _claim_fields(query_fields, cls, "Query", plugin.id)
        for cls in contribution.mutation:
            _claim_fields(mutation_fields, cls, "Mutation", plugin.id)
        query += contribution.query
        mutation += contribution.mutation
        types += contribution.types
        extensions += contribution.extensions
        for name, factory in contribution.loaders.items():
            assembly.loaders.add(name, factory)
        if contribution.migrations is not None:
            assembly.migrations += read_migrations(plugin.id, contribution.migrations)
        assembly.jobs += contribution.jobs
        assembly.gauges += contribution.gauges

    if not query:
        raise PluginConflict("no plugin contributes a query field; the schema would be empty")
    assembly.schema = AtriumSchema(
        query=_merge("Query", query),
        mutation=_merge("Mutation", mutation) if mutation else None,
        types=types,
        extensions=[*_core_extensions(settings), *extensions],
        config=StrawberryConfig(disable_field_suggestions=settings.production),
    )
    return assembly


def _claim_fields(claimed: dict[str, str], cls: type, root: str, plugin_id: str) -> None:
    for f in cls.__strawberry_definition__.fields:  # type: ignore[attr-defined]
        owner = claimed.get(f.name)
        if owner is not None:
            raise PluginConflict(
                f"field {root}.{f.name} is defined by plugin {owner} and by plugin {plugin_id}"
            )
        claimed[f.name] = plugin_id


def _merge(name: str, classes: list[type]) -> type:
    # Strawberry collects the fields of every base; the order of bases is the order of plugins.
    return strawberry.type(type(name, tuple(reversed(classes)), {}))


def _core_extensions(
    settings: Settings,
) -> list[type[SchemaExtension] | Callable[[], SchemaExtension]]:
    found: list[Any] = [
        lambda: MaxTokensLimiter(max_token_count=settings.max_tokens),
        lambda: ParserCache(maxsize=512),
        lambda: QueryDepthLimiter(max_depth=settings.max_depth),
        lambda: MaxAliasesLimiter(max_alias_count=settings.max_aliases),
        lambda: ValidationCache(maxsize=512),
    ]
    if settings.production:
        from strawberry.extensions import DisableIntrospection

        found += [DisableIntrospection, MaskUnexpectedErrors]
    return found
