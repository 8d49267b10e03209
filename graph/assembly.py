"""Assembling the schema, loaders, migrations and jobs from the plugins, checking for clashes."""

from __future__ import annotations

import copy
import dataclasses
import logging
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import strawberry
from strawberry.extensions import (
    AddValidationRules,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    SchemaExtension,
    ValidationCache,
)
from strawberry.schema.config import StrawberryConfig

from graph.cache_control import CacheHints, CachePolicyExtension, PolicyCache
from graph.errors import AtriumSchema, MaskUnexpectedErrors
from graph.input_guard import InputGuard, LiteralChecks
from graph.limits import CostLimit
from graph.plans import Plans
from graph.plugin import (
    AttentionProvider,
    BackgroundJob,
    Demo,
    Endpoint,
    GaugeSource,
    Lifespan,
    PagePanel,
    Plugin,
    PluginBuilder,
    PluginConflict,
    PluginConsoleFiles,
)
from graph.plugin_settings import InvalidPluginSettings, ReadSettings
from graph.settings import Settings
from loaders.registry import LoaderRegistry
from sources.migrations import Migration, core_migrations, read_migrations

__all__ = [
    "Assembly",
    "assemble",
    "core_plugins",
    "discover_plugins",
    "installed_plugins",
    "is_bundled",
    "load_plugin",
]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "atrium.plugins"
# The distribution publishing Atrium's own entry points (pyproject.toml): the plugins bundled
# with Atrium are those it publishes; any other package's are third-party plugins.
ATRIUM_DISTRIBUTION = "atrium"


@dataclass(slots=True)
class Assembly:
    settings: Settings
    plugin_ids: list[str] = field(default_factory=list)
    loaders: LoaderRegistry = field(default_factory=LoaderRegistry)
    migrations: list[Migration] = field(default_factory=list)
    jobs: list[BackgroundJob] = field(default_factory=list)
    gauges: list[GaugeSource] = field(default_factory=list)
    lifespans: list[tuple[str, Lifespan]] = field(default_factory=list)
    demos: list[tuple[str, Demo]] = field(default_factory=list)
    # (path, methods, endpoint) of plugins' own HTTP endpoints.
    routes: list[tuple[str, tuple[str, ...], Endpoint]] = field(default_factory=list)
    # service name → (providing plugin id, factory given its lifespan state)
    services: dict[str, tuple[str, Callable[[Any], Any]]] = field(default_factory=dict)
    # Panels plugins add to the console's pages, in plugin order.
    panels: list[PagePanel] = field(default_factory=list)
    # Plugins' console parts shipped in their packages, in plugin order (ssr.plugin_console).
    consoles: list[PluginConsoleFiles] = field(default_factory=list)
    # (plugin id, provider) of what needs attention, in plugin order.
    attention: list[tuple[str, AttentionProvider]] = field(default_factory=list)
    # Each plugin's own settings as read (``builder.plugin_settings``), by plugin id.
    plugin_settings: dict[str, ReadSettings] = field(default_factory=dict)
    schema: strawberry.Schema | None = None
    # Cache policies of documents, worked out from the schema's hints.
    policies: PolicyCache = field(default_factory=PolicyCache)
    # Compiled plans of known operations; None when they are off, or when a plugin's schema
    # extension must see every execution.
    plans: Plans | None = None
    # Why they are off, in words (`atrium plugins` shows it); None when they run.
    plans_off: str | None = None
    # Each plugin's contributions as its builder collected them, by plugin id.
    contributions: dict[str, Any] = field(default_factory=dict)
    # The schema extensions each plugin adds, by plugin id (any switches compiled plans off).
    plugin_extensions: dict[str, list[str]] = field(default_factory=dict)


def core_plugins() -> list[Plugin]:
    """What every Atrium has; registered through the same builder as any plugin."""
    from graph.attention.plugin import AttentionPlugin
    from graph.catalog.plugin import CatalogPlugin
    from graph.changes.plugin import ChangesPlugin
    from graph.ownership.plugin import OwnershipPlugin

    return [CatalogPlugin(), OwnershipPlugin(), AttentionPlugin(), ChangesPlugin()]


def is_bundled(ep: EntryPoint) -> bool:
    """Whether an ``atrium.plugins`` entry point is one of Atrium's bundled plugins: published
    by Atrium's own distribution, not by another package (whatever its module is named)."""
    dist = ep.dist
    return dist is not None and _canonical(dist.name) == ATRIUM_DISTRIBUTION


def installed_plugins(*, bundled: bool | None = None) -> list[EntryPoint]:
    """The ``atrium.plugins`` entry points installed, by name: all of them, or (``bundled``)
    only Atrium's own, or (``bundled=False``) only third-party ones."""
    found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
    return [ep for ep in found if bundled is None or is_bundled(ep) == bundled]


def load_plugin(ep: EntryPoint) -> Plugin:
    """The plugin an entry point names, checked to be one and to have the entry point's id."""
    plugin = ep.load()
    if not isinstance(plugin, Plugin):
        raise PluginConflict(f"entry point {ep.name} ({ep.value}) is not an Atrium plugin")
    if plugin.id != ep.name:
        raise PluginConflict(
            f"entry point {ep.name} ({ep.value}) loads a plugin whose id is {plugin.id}"
        )
    return plugin


def discover_plugins(settings: Settings, *, bundled: bool | None = None) -> list[Plugin]:
    """Plugins installed under the ``atrium.plugins`` entry-point group, less disabled ones;
    ``bundled=True``: only Atrium's own, as its committed ``schema.graphql`` is made of."""
    found: list[Plugin] = []
    for ep in installed_plugins(bundled=bundled):
        if ep.name in settings.disabled_plugins:
            log.info("plugin disabled", extra={"plugin": ep.name})
            continue
        found.append(load_plugin(ep))
    return found


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def assemble(settings: Settings, plugins: Sequence[Plugin]) -> Assembly:
    assembly = Assembly(settings, migrations=core_migrations())
    roots: dict[str, list[type]] = {"Query": [], "Mutation": [], "Subscription": []}
    claimed: dict[str, dict[str, str]] = {name: {} for name in roots}
    types: dict[str, tuple[type, str]] = {}  # GraphQL name → (class, plugin id)
    # (type name, fields class, plugin id, may be left out)
    extended: list[tuple[str, type, str, bool]] = []
    extensions: list[Any] = []
    routes_claimed: dict[tuple[str, str], str] = {}
    needed: list[tuple[str, str]] = []  # (service, plugin that needs it)
    invalid: list[str] = []  # plugins' settings that do not validate
    for plugin in plugins:
        if plugin.id in assembly.plugin_ids:
            raise PluginConflict(f"two plugins have the id {plugin.id}")
        assembly.plugin_ids.append(plugin.id)
        builder = PluginBuilder(plugin.id, settings)
        try:
            plugin.setup(builder)
        except InvalidPluginSettings as exc:
            invalid.append(str(exc))  # told with every other plugin's, below
            continue
        contribution = builder.contribution
        assembly.contributions[plugin.id] = contribution
        if contribution.extensions:
            assembly.plugin_extensions[plugin.id] = [_name(e) for e in contribution.extensions]
        for root, classes in (
            ("Query", contribution.query),
            ("Mutation", contribution.mutation),
            ("Subscription", contribution.subscription),
        ):
            for cls in classes:
                _claim_fields(claimed[root], cls, root, plugin.id)
            roots[root] += classes
        for cls in contribution.types:
            types[cls.__strawberry_definition__.name] = (cls, plugin.id)  # type: ignore[attr-defined]
        for name, additions in contribution.type_extensions.items():
            extended += [(name, cls, plugin.id, optional) for cls, optional in additions]
        extensions += contribution.extensions
        for name, factory in contribution.loaders.items():
            assembly.loaders.add(name, factory)
        if contribution.migrations is not None:
            assembly.migrations += read_migrations(plugin.id, contribution.migrations)
        assembly.jobs += contribution.jobs
        assembly.gauges += contribution.gauges
        assembly.lifespans += [(plugin.id, factory) for factory in contribution.lifespans]
        assembly.demos += [(plugin.id, start) for start in contribution.demos]
        for path, methods, endpoint in contribution.routes:
            for method in methods:
                owner = routes_claimed.get((path, method))
                if owner is not None:
                    raise PluginConflict(
                        f"route {method} {path} is served by plugin {owner} and by plugin "
                        f"{plugin.id}"
                    )
                routes_claimed[path, method] = plugin.id
            assembly.routes.append((path, methods, endpoint))
        for name, factory in contribution.provides.items():
            if name in assembly.services:
                raise PluginConflict(
                    f"service {name} is provided by plugin {assembly.services[name][0]} and by "
                    f"plugin {plugin.id}"
                )
            assembly.services[name] = (plugin.id, factory)
        assembly.panels += contribution.panels
        if contribution.console is not None:
            assembly.consoles.append(contribution.console)
        if contribution.settings is not None:
            assembly.plugin_settings[plugin.id] = contribution.settings
        assembly.attention += [(plugin.id, provider) for provider in contribution.attention]
        needed += [(name, plugin.id) for name, required in contribution.uses.items() if required]

    if invalid:
        raise InvalidPluginSettings("\n".join(invalid))
    # Providers start before the plugins using their services (and stop after them).
    providers = {plugin_id for plugin_id, _ in assembly.services.values()}
    assembly.lifespans.sort(key=lambda item: item[0] not in providers)
    for name, plugin_id in needed:
        if name not in assembly.services:
            raise PluginConflict(
                f"plugin {plugin_id} needs the service {name}, which no plugin provides"
            )

    if not roots["Query"]:
        raise PluginConflict("no plugin contributes a query field; the schema would be empty")
    with _extended_types(types, extended):
        assembly.schema = AtriumSchema(
            query=_merge("Query", roots["Query"]),
            mutation=_merge("Mutation", roots["Mutation"]) if roots["Mutation"] else None,
            subscription=(
                _merge("Subscription", roots["Subscription"]) if roots["Subscription"] else None
            ),
            types=[cls for cls, _ in types.values()],
            extensions=[*_core_extensions(settings, assembly.policies), *extensions],
            config=StrawberryConfig(disable_field_suggestions=settings.production),
        )
    assembly.policies.hints = CacheHints(assembly.schema._schema)
    if not settings.compiled_plans:
        assembly.plans_off = "ATRIUM_COMPILED_PLANS is off"
    elif extensions:
        assembly.plans_off = "schema extensions, which must see every execution: " + "; ".join(
            f"{', '.join(names)} of plugin {plugin_id}"
            for plugin_id, names in assembly.plugin_extensions.items()
        )
        log.info(
            "compiled plans are off: a plugin adds a schema extension, which must see every "
            "execution",
            extra={"extensions": [_name(e) for e in extensions]},
        )
    else:
        assembly.plans = Plans(
            assembly.schema,
            assembly.policies,
            LiteralChecks(512),
            max_cost=settings.max_cost,
            max_page=settings.max_page_size,
            assumed_list_size=settings.cost_list_size,
            production=settings.production,
        )
    return assembly


def _name(extension: Any) -> str:
    return str(getattr(extension, "__name__", None) or type(extension).__name__)


@contextmanager
def _extended_types(
    types: dict[str, tuple[type, str]], extended: list[tuple[str, type, str, bool]]
) -> Iterator[None]:
    """While the schema is built, give extended types their extra fields.

    A type's definition is swapped for a copy with the plugins' fields, and restored after:
    the built schema keeps the fields, the class stays as it was, so another schema built
    without those plugins does not see them.
    """
    originals: dict[type, Any] = {}
    claimed: dict[type, dict[str, str]] = {}  # field name → the plugin that defined it
    try:
        for name, fields_class, plugin_id, optional in extended:
            if name not in types and optional:
                continue
            if name not in types:
                raise PluginConflict(f"plugin {plugin_id} extends {name}, which no plugin defines")
            target, owner = types[name]
            definition = target.__strawberry_definition__  # type: ignore[attr-defined]
            if target not in originals:
                originals[target] = definition
                claimed[target] = {f.name: owner for f in definition.fields}
            added = [copy.copy(f) for f in fields_class.__strawberry_definition__.fields]  # type: ignore[attr-defined]
            for f in added:
                if f.name in claimed[target]:
                    raise PluginConflict(
                        f"field {name}.{f.name} is defined by plugin {claimed[target][f.name]} "
                        f"and by plugin {plugin_id}"
                    )
                claimed[target][f.name] = plugin_id
            target.__strawberry_definition__ = dataclasses.replace(  # type: ignore[attr-defined]
                definition, fields=[*definition.fields, *added]
            )
        yield
    finally:
        for target, definition in originals.items():
            target.__strawberry_definition__ = definition  # type: ignore[attr-defined]


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
    settings: Settings, policies: PolicyCache
) -> list[type[SchemaExtension] | Callable[[], SchemaExtension]]:
    # The limiters make a new rule class each time they are built, and the validation cache
    # keys on the rule classes: built once here, the rules let the cache hit.
    literals = LiteralChecks(512)
    limit_rules = [
        *QueryDepthLimiter(max_depth=settings.max_depth).validation_rules,
        *MaxAliasesLimiter(max_alias_count=settings.max_aliases).validation_rules,
    ]
    found: list[Any] = [
        lambda: MaxTokensLimiter(max_token_count=settings.max_tokens),
        lambda: ParserCache(maxsize=512),
        lambda: AddValidationRules(limit_rules),
        lambda: ValidationCache(maxsize=512),
        # After the validation cache: only valid documents are costed.
        lambda: CostLimit(
            max_cost=settings.max_cost,
            max_page=settings.max_page_size,
            assumed_list_size=settings.cost_list_size,
        ),
        lambda: CachePolicyExtension(policies),
        # After validation, before anything runs: strings PostgreSQL cannot store.
        lambda: InputGuard(literals),
    ]
    if settings.production:
        from strawberry.extensions import DisableIntrospection

        found += [DisableIntrospection, MaskUnexpectedErrors]
    return found
