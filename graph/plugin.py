"""The plugin API: the whole surface a plugin sees.

A plugin is an object with an ``id`` and a ``setup(builder)`` method, published under the
entry-point group ``atrium.plugins``::

    [project.entry-points."atrium.plugins"]
    hello = "atrium_hello:plugin"

In ``setup`` it adds what it brings: types, query and mutation fields, loaders (named
``<plugin>.<name>``), schema extensions, SQL migrations, background jobs and gauges. Fields
that change something declare who may call them with ``Authorize`` and a rule (``EntityOwner``,
``AdminOnly``, or the plugin's own), which also writes the audit log; its before and after
picture the rule's target (an entity's row) unless the mutation changes a record of the
plugin's own and says so with ``Authorize(rule, action, snapshot=hook)``: ``await hook(info,
target, arguments)`` returns that record as JSON values, read before the change and after.
Atrium's own catalog registers through the same builder. Two plugins claiming one field fail
at start-up, naming both.

Answers are cached whole when every field they select allows it: a plugin's types and fields
say how long with ``CacheControl(max_age=..., scope=CacheScope.PRIVATE)`` as schema directives
(unhinted object fields count as 0: never cached). A field whose data changes outside the
catalog must carry its own ``max_age``; a resolver can tighten its request's policy with
``info.context.cache_hint(...)`` and name what its answer depends on with
``info.context.depends_on(...)``.

Change keys (what ``depends_on`` tags an answer with and ``announce_changes`` announces) follow
explicit rules, never guessed from the look of a key:

- ``entity_key(ref)``, a catalog entity's normalized ref (``component:default/checkout``):
  announcing it also drops the lists of its kind and the answers over the whole catalog;
- ``kind:<kind>`` and ``WHOLE_CATALOG`` (``catalog``), Atrium's tags of lists: a resolver
  listing entities of its own choosing depends on them;
- ``change_key(namespace, *parts)``, a plugin's own key (``change_key("oncall", ref)`` is
  ``oncall:component:default/checkout``): announcing it drops the answers tagged with that
  very key and nothing else, whatever its parts hold. Take the plugin's id as the namespace;
  catalog kinds and the namespaces Atrium uses (``kind``, ``catalog``, ``stars``,
  ``session``) are refused with ``ValueError``.

Refs are read as the catalog reads them: ``normalize_ref(text, default_kind=...)`` gives the
stored form (``Component:Checkout`` → ``component:default/checkout``), ``parse_ref`` its
parts as an ``EntityRef`` (kind as the catalog spells it, namespace, name); both raise
``InvalidRef`` for text that names no entity, which a resolver turns into a client error.

YAML a client sends (a manifest, say) is read with ``load_yaml_document`` (the one document's
value) or ``load_yaml`` (a list of every document, even of one): plain JSON values only,
bounded in depth and size, and ``InvalidYaml`` saying the line and column of what is wrong
(or that one document was expected), so no text can make a server error.

Plugins work together through named services, never by importing each other: one
``provide``s a service built from its lifespan's state (PinCompute provides ``workloads``),
another declares that it ``use``s it and finds it with ``service(context, name)``. Start-up
fails when two plugins provide one name, or a needed service has no provider. A plugin may
also serve HTTP endpoints of its own under ``/hooks/`` (webhook receivers) with ``route``;
what it writes there, it announces with ``announce_changes``, which drops cached answers
tagged with those keys in every replica and wakes ``follow_changes`` listeners (a
subscription) wherever they run. A subscription many follow at once shares one upstream per
key through a ``Fanout`` (one change listener, one log follow), each subscriber reading its own
bounded ``Mailbox``; one that falls too far behind gets ``SubscriberTooSlow`` and its
connection is closed.

A plugin's own settings are a pydantic model (subclass ``PluginSettings``) it reads in
``setup`` with ``builder.plugin_settings(Model)``: field ``name`` comes from ``ATRIUM_<NAME>``,
else from ``name`` in the ``[plugins.<id>]`` section of ``atrium.toml`` (or at the top of it),
else from its default; a bad value stops the start-up naming the plugin, the setting and its
source. Secrets are ``SecretStr`` fields, masked wherever settings are shown.

A plugin may say what needs attention about a team's entities (``attention``): a provider is
given the refs of what a person's or a group's teams own and answers ``AttentionItem``s (a
failed deploy, a firing alert, a workload short of replicas), which ``Viewer.attention`` and
``Group.attention`` merge with every other plugin's, most severe first.

A plugin's console part ships in its own package (``builder.console(directory)``): the folder's
``*.graphql`` files are its console operations, checked against the schema at start-up (an
invalid one stops it, naming the plugin, the file and the problem) and trusted like the
console's own, so ``builder.panel`` may name them; its ``panels.js`` is an ES module built
against the console's SDK (``@atrium/console``), served with the folder's other files under
``/plugins/<id>/console/<version>/`` and loaded by the console beside its own panels, without
rebuilding the console (README, "A panel from your package").

A plugin's tests use Atrium's test kit, ``atrium.testing``, a pytest plugin installed with
Atrium: an app per test with the plugin and its migrations, signed-in users, counted SQL
statements and plan runs, a browser for panels, and the hostile-input and plan-equivalence
checks over the plugin's own fields (README, "Testing a plugin").
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeAlias, TypeVar, runtime_checkable

import strawberry
from graphql import GraphQLError
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from strawberry.dataloader import DataLoader
from strawberry.extensions import SchemaExtension
from strawberry.scalars import JSON

from graph.attention.links import entity_href, workload_href
from graph.attention.types import AttentionLevel
from graph.auth.viewer import for_readers
from graph.authz import (
    AdminOnly,
    AuditSnapshot,
    Authorize,
    EntityOwner,
    Rule,
    Target,
    require_admin,
)
from graph.cache_control import CacheControl, CacheScope
from graph.catalog.types import Entity, User
from graph.context import Context, Info
from graph.fanout import Fanout, Mailbox, SubscriberTooSlow
from graph.parents import EntityParent, Parent, ViewerParent
from graph.plugin_settings import InvalidPluginSettings, PluginSettings, ReadSettings
from graph.plugin_settings import read_plugin_settings as _read_plugin_settings
from graph.provided import EVERYTHING, ServiceMissing
from graph.settings import SETTINGS_FILE, Settings
from loaders.cache import Caches, MultiLevelCache, json_codec
from loaders.cache_first import CacheFirstLoader
from loaders.change_keys import WHOLE_CATALOG, change_key, entity_key
from loaders.memory import MISSING
from loaders.registry import LoaderFactory, LoaderServices
from resolvers.attention import AttentionItem, AttentionProvider
from sources.auth import Viewer
from sources.catalog.refs import EntityRef, normalize_ref, parse_ref
from sources.errors import InvalidRef
from sources.yaml_json import InvalidYaml, load_yaml, load_yaml_document

__all__ = [
    "EVERYTHING",
    "JSON",
    "MISSING",
    "WHOLE_CATALOG",
    "AdminOnly",
    "AttentionItem",
    "AttentionLevel",
    "AttentionProvider",
    "AuditSnapshot",
    "Authorize",
    "BackgroundJob",
    "CacheControl",
    "CacheFirstLoader",
    "CacheScope",
    "Context",
    "DataLoader",
    "Demo",
    "Entity",
    "EntityOwner",
    "EntityParent",
    "EntityRef",
    "Fanout",
    "GaugeSource",
    "Info",
    "InvalidPluginSettings",
    "InvalidRef",
    "InvalidYaml",
    "Lifespan",
    "LoaderServices",
    "Mailbox",
    "MultiLevelCache",
    "PagePanel",
    "Parent",
    "Plugin",
    "PluginBuilder",
    "PluginConflict",
    "PluginConsoleFiles",
    "PluginSettings",
    "Rule",
    "SchemaExtension",
    "ServiceMissing",
    "Settings",
    "SubscriberTooSlow",
    "Target",
    "User",
    "UserError",
    "Viewer",
    "ViewerParent",
    "announce_changes",
    "app_services",
    "change_key",
    "entities_owned_by",
    "entities_with_annotation",
    "entity",
    "entity_href",
    "entity_key",
    "entity_owner",
    "follow_changes",
    "load_yaml",
    "load_yaml_document",
    "normalize_ref",
    "owner_refs",
    "parse_ref",
    "require_admin",
    "service",
    "shared_cache",
    "strawberry",
    "viewer_may_change",
    "workload_href",
]

SettingsModel = TypeVar("SettingsModel", bound=BaseModel)

Lifespan: TypeAlias = Callable[[Any], AbstractAsyncContextManager[Any]]
# (demo catalog folder, data directory) → a context yielding environment variables.
Demo: TypeAlias = Callable[[Path, Path], AbstractContextManager[dict[str, str]]]
Endpoint: TypeAlias = Callable[[Request], Awaitable[Response]]
# Paths a plugin's endpoints may take: webhook receivers, or a folder named after the plugin.
ROUTE_PREFIXES = ("/hooks/", "/plugins/")


class UserError(GraphQLError):
    """An error a plugin's resolver raises for the client's mistake or a refusal, with the
    ``extensions.code`` clients branch on (BAD_USER_INPUT, NOT_FOUND, UNAVAILABLE, ...)."""

    def __init__(self, message: str, code: str = "BAD_USER_INPUT") -> None:
        super().__init__(message, extensions={"code": code})


class PluginConflict(Exception):
    """Two plugins claimed the same name, or a plugin broke a rule of the API."""


@runtime_checkable
class Plugin(Protocol):
    id: str

    def setup(self, builder: PluginBuilder) -> None: ...


@dataclass(frozen=True, slots=True)
class BackgroundJob:
    """A coroutine run every ``interval`` seconds while the app serves, on one replica at a
    time: each round, whichever replica claims the job runs it (``sources.jobs``); errors are
    logged. Work each replica must do for itself belongs in a plugin's lifespan."""

    name: str
    run: Callable[[Any], Awaitable[None]]  # receives the app's services
    interval: float


@dataclass(frozen=True, slots=True)
class GaugeSource:
    """A gauge whose samples are read when /metrics is scraped, e.g. from the database, so
    every replica reports the same figures."""

    name: str
    help: str
    labels: tuple[str, ...]
    read: Callable[[Any], Awaitable[dict[tuple[str, ...], float]]]  # receives the services


@dataclass(frozen=True, slots=True)
class PagePanel:
    """A panel a plugin adds to a console page (``builder.panel``)."""

    plugin_id: str
    page: str  # "entity" or "team"
    operation: str  # a console operation (web/src/operations/<name>.graphql), given {ref}
    template: Path | None  # Jinja HTML of the panel for the server-rendered page
    kinds: tuple[str, ...] | None  # entity kinds (lowercase) it shows on; None: every kind
    # The page section it is, (id, title), a tab of the page's in-page navigation; None: it is
    # a part of another section and has no tab.
    section: tuple[str, str] | None = None


@dataclass(frozen=True, slots=True)
class PluginConsoleFiles:
    """A plugin's console part, shipped as files in its package (``builder.console``)."""

    plugin_id: str
    directory: Path  # its *.graphql operations, the module and what the module loads
    module: str  # the ES module of its panels, relative to ``directory``


# The workload page's panels are the client's alone (given the PinApp's key, they fetch for
# themselves); the server knows their sections, to list them in the page's navigation.
PAGES = ("entity", "team", "workload")


@dataclass(slots=True)
class _Contribution:
    plugin_id: str
    query: list[type] = field(default_factory=list)
    mutation: list[type] = field(default_factory=list)
    subscription: list[type] = field(default_factory=list)
    types: list[type] = field(default_factory=list)
    # GraphQL type name → classes whose fields join that type (another plugin's type), each
    # with whether it may be left out when no plugin defines the type.
    type_extensions: dict[str, list[tuple[type, bool]]] = field(default_factory=dict)
    lifespans: list[Lifespan] = field(default_factory=list)
    loaders: dict[str, LoaderFactory] = field(default_factory=dict)
    extensions: list[Any] = field(default_factory=list)
    migrations: Path | None = None
    jobs: list[BackgroundJob] = field(default_factory=list)
    gauges: list[GaugeSource] = field(default_factory=list)
    demos: list[Demo] = field(default_factory=list)
    routes: list[tuple[str, tuple[str, ...], Endpoint]] = field(default_factory=list)
    provides: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    uses: dict[str, bool] = field(default_factory=dict)  # service name → required
    panels: list[PagePanel] = field(default_factory=list)
    attention: list[AttentionProvider] = field(default_factory=list)
    settings: ReadSettings | None = None  # the plugin's own, as read by plugin_settings
    console: PluginConsoleFiles | None = None


class PluginBuilder:
    """Collects one plugin's contributions; the assembly checks them against everyone else's."""

    def __init__(self, plugin_id: str, settings: Settings) -> None:
        self.plugin_id = plugin_id
        self.settings = settings
        self.contribution = _Contribution(plugin_id)

    def plugin_settings(self, model: type[SettingsModel]) -> SettingsModel:
        """The plugin's own settings: ``model`` (a ``PluginSettings`` subclass, or any pydantic
        model) filled from ``ATRIUM_<FIELD>`` variables, then the ``[plugins.<id>]`` section of
        ``atrium.toml``, then the top of that file, then the defaults, and validated: a bad
        value stops the start-up with ``InvalidPluginSettings`` naming the plugin, the setting
        and where it came from. ``atrium plugins`` lists what was read, secrets masked."""
        read = self.contribution.settings
        if read is not None:
            if not isinstance(read.values, model):
                raise PluginConflict(
                    f"plugin {self.plugin_id} reads its settings as {model.__qualname__} and as "
                    f"{type(read.values).__qualname__}: one model per plugin"
                )
            return read.values
        values, self.contribution.settings = _read_plugin_settings(
            self.plugin_id, model, file=SETTINGS_FILE
        )
        return values

    def query(self, fields: type) -> type:
        """A ``@strawberry.type`` whose fields join the root ``Query``; usable as a decorator."""
        self.contribution.query.append(_strawberry_type(fields))
        return fields

    def mutation(self, fields: type) -> type:
        """A ``@strawberry.type`` class whose fields join the root ``Mutation``."""
        self.contribution.mutation.append(_strawberry_type(fields))
        return fields

    def subscription(self, fields: type) -> type:
        """A ``@strawberry.type`` class whose async-generator fields join ``Subscription``,
        served over websockets with the graphql-transport-ws protocol."""
        self.contribution.subscription.append(_strawberry_type(fields))
        return fields

    def extend_type(self, name: str, fields: type, *, optional: bool = False) -> type:
        """Add the fields of a ``@strawberry.type`` class to another plugin's type, named as in
        the schema (``builder.extend_type("Component", ComponentWorkloads)``). A resolver
        names the extended type's object with ``parent: Parent[EntityParent]`` (any catalog
        kind; ``ViewerParent`` for ``Viewer``; for another plugin's type a ``Protocol`` of the
        fields it reads), typed for mypy, and reads only its schema fields (what any client
        could read). A type no plugin defines fails the start-up, unless
        ``optional``: then the fields are left out, as for a plugin that is not installed
        (the type must be one its plugin declares with ``types``)."""
        self.contribution.type_extensions.setdefault(name, []).append(
            (_strawberry_type(fields), optional)
        )
        return fields

    def lifespan(self, factory: Lifespan) -> None:
        """An async context manager run for the life of the app, given the services: it starts
        what the plugin runs (watchers, clients) and yields the plugin's state, which resolvers
        and loaders find as ``info.context.extras[plugin_id]`` / ``services.extras[...]``."""
        self.contribution.lifespans.append(factory)

    def types(self, *types: type) -> None:
        """Types the schema must know though no field names them (an interface's kinds)."""
        self.contribution.types.extend(types)

    def loader(self, name: str, factory: LoaderFactory) -> str:
        """Register a per-request loader; returns its full name ``<plugin>.<name>``."""
        if "." in name:
            raise PluginConflict(
                f"plugin {self.plugin_id}: loader name {name!r} must not contain '.'"
            )
        full = f"{self.plugin_id}.{name}"
        if full in self.contribution.loaders:
            raise PluginConflict(f"plugin {self.plugin_id} registers loader {full} twice")
        self.contribution.loaders[full] = factory
        return full

    def extension(self, extension: type[SchemaExtension] | Callable[[], SchemaExtension]) -> None:
        self.contribution.extensions.append(extension)

    def migrations(self, directory: Path) -> None:
        """A folder of ``NNNN_name.sql`` files, numbered independently of other plugins'."""
        self.contribution.migrations = directory

    def demo(self, start: Demo) -> None:
        """What the plugin adds to ``atrium serve --demo`` (development only): a context
        manager given the demo catalog's folder and the data directory, run in the serving
        process around the server (all its workers), yielding settings (``ATRIUM_*``
        environment variables) for the server, e.g. a demo backend's URL."""
        self.contribution.demos.append(start)

    def route(
        self,
        path: str,
        endpoint: Endpoint,
        *,
        methods: tuple[str, ...] = ("POST",),
        viewer: bool = False,
    ) -> None:
        """An HTTP endpoint of the plugin's own, a Starlette handler, at a path under
        ``/hooks/`` (webhook receivers) or ``/plugins/<id>/``. It finds the app's services
        with ``app_services(request)`` and answers errors as it sees fit; two plugins claiming
        a path fail at start-up. A webhook checks who calls it itself (a signature). With
        ``viewer=True`` (an endpoint that answers with data), Atrium decides who may read as
        on every face of its own: a bad token, or nobody while anonymous reading is off, is
        answered 401 (``no-store``) before the endpoint runs, which finds the viewer in
        ``request.state.viewer``."""
        allowed = path.startswith(ROUTE_PREFIXES[0]) or path.startswith(
            f"{ROUTE_PREFIXES[1]}{self.plugin_id}/"
        )
        if not allowed:
            raise PluginConflict(
                f"plugin {self.plugin_id}: route {path} must be under /hooks/ or "
                f"/plugins/{self.plugin_id}/"
            )
        handler = for_readers(endpoint) if viewer else endpoint
        self.contribution.routes.append((path, tuple(m.upper() for m in methods), handler))

    def provide(self, name: str, factory: Callable[[Any], Any]) -> None:
        """A service other plugins may use by ``name``: ``factory`` is given this plugin's
        lifespan state and called once, the first time the service is asked for."""
        if name in self.contribution.provides:
            raise PluginConflict(f"plugin {self.plugin_id} provides the service {name} twice")
        self.contribution.provides[name] = factory

    def use(self, name: str, *, optional: bool = False) -> None:
        """Declare a service this plugin calls. Unless ``optional``, start-up fails when no
        plugin provides it; an optional one may be missing, and ``service`` then raises
        ``ServiceMissing``, which the plugin turns into a plain answer."""
        self.contribution.uses[name] = not optional

    def panel(
        self,
        page: str,
        operation: str,
        *,
        template: Path | None = None,
        kinds: tuple[str, ...] | None = None,
        section: tuple[str, str] | None = None,
    ) -> None:
        """A panel on a console page (``entity``, ``team`` or ``workload``; ``kinds`` narrows
        an entity page to some kinds, e.g. ``("component",)``); ``section`` (an id and a title,
        such as ``("deployments", "Deployments")``) makes it a section of the page with a tab of
        its own in the page's navigation, the template's outermost element being that section.
        On an entity or team page the server runs ``operation`` (one of the console's persisted
        operations, or one of the plugin's own from ``builder.console``, given ``{"ref": <the
        page's ref>}``) in-process with the page's own and
        embeds its answer, so the client's panel renders without asking; ``template`` is the
        panel's server HTML (Jinja, autoescaped; ``data[operation]`` is the answer, the core's
        ``_macros.html`` may be imported, ``ui`` is the console's kit), shown before the client
        starts and without JavaScript. A workload page's panels are the client's alone (they
        fetch for themselves); the server lists their sections. The client's side is the
        plugin's console module (``builder.console``); the bundled plugins' is their folder
        under ``web/src/plugins/`` (web/README.md)."""
        if page not in PAGES:
            raise PluginConflict(f"plugin {self.plugin_id}: no console page {page!r} ({PAGES})")
        if template is not None and not template.is_file():
            raise PluginConflict(f"plugin {self.plugin_id}: panel template {template} is missing")
        found = PagePanel(
            self.plugin_id,
            page,
            operation,
            template,
            tuple(k.lower() for k in kinds) if kinds is not None else None,
            section,
        )
        self.contribution.panels.append(found)

    def console(self, directory: Path, *, module: str = "panels.js") -> None:
        """The plugin's console part, as files in its package: each ``*.graphql`` file of
        ``directory`` is one console operation named as its file (fragments it uses may be in
        any of the folder's files), which start-up checks against the schema and trusts like
        the console's own (a panel's ``operation`` may name it); ``module`` is an ES module of
        the plugin's panels built against the console's SDK (``@atrium/console``, with
        ``react`` and ``react/jsx-runtime`` left as imports), served with the folder's other
        files under ``/plugins/<id>/console/<version>/`` (immutable: the version is their
        content's hash) and loaded by the console on the pages the plugin has panels on."""
        if self.contribution.console is not None:
            raise PluginConflict(f"plugin {self.plugin_id} declares its console twice")
        if not directory.is_dir():
            raise PluginConflict(f"plugin {self.plugin_id}: console folder {directory} is missing")
        if not (directory / module).is_file():
            raise PluginConflict(
                f"plugin {self.plugin_id}: console module {directory / module} is missing "
                '(build it: README, "A panel from your package")'
            )
        self.contribution.console = PluginConsoleFiles(self.plugin_id, directory, module)

    def attention(self, provider: AttentionProvider) -> None:
        """Say what needs attention about a team's entities: ``await provider(context, refs)``
        is given a request's context and the refs of what a person's (or a group's) teams own
        (at most a few hundred, components first) and answers ``AttentionItem``s about some of
        them (``ref``, ``level``, ``title``, ``detail``, ``since``, ``href``: ``entity_href``
        and ``workload_href`` build the console's addresses). Every plugin's provider is asked
        at once, within ``ATRIUM_ATTENTION_TIMEOUT``: one that raises or is late is logged and
        left out. Answer from one statement or one backend call for all the refs (never one
        per entity), and read entities with ``entity`` (already loaded for the request)."""
        self.contribution.attention.append(provider)

    def job(self, name: str, run: Callable[[Any], Awaitable[None]], *, interval: float) -> None:
        self.contribution.jobs.append(BackgroundJob(f"{self.plugin_id}.{name}", run, interval))

    def gauge(
        self,
        name: str,
        help: str,
        labels: tuple[str, ...],
        read: Callable[[Any], Awaitable[dict[tuple[str, ...], float]]],
    ) -> None:
        """A Prometheus gauge ``atrium_<name>`` whose samples ``read`` returns at each scrape."""
        self.contribution.gauges.append(GaugeSource(f"atrium_{name}", help, labels, read))


def _strawberry_type(cls: type) -> type:
    if not hasattr(cls, "__strawberry_definition__"):
        raise PluginConflict(f"{cls.__qualname__} must be decorated with @strawberry.type")
    return cls


# The catalog, as plugins may use it.


async def entity(info: Info | Context, ref: str) -> Entity | None:
    """The catalog entity with this ref, as a GraphQL object (for a plugin's field), from a
    resolver's ``info`` or a context (an endpoint's, made with ``services.context``)."""
    from graph.catalog.types import entity_from_record
    from resolvers import catalog

    context = info if isinstance(info, Context) else info.context
    try:
        record = await catalog.entity(context.loaders, ref)
    except InvalidRef:
        return None
    return entity_from_record(record) if record is not None else None


async def entity_owner(context: Context, ref: str) -> str | None:
    """The owner ref of an entity (batched with the request's other look-ups)."""
    from resolvers import catalog

    try:
        record = await catalog.entity(context.loaders, ref)
    except InvalidRef:
        return None
    return record.owner_ref if record is not None else None


async def owner_refs(context: Context, ref: str, *, transitive: bool = True) -> list[str]:
    """The owner refs whose entities ``ref`` owns, as ``entitiesOwnedBy`` counts them: itself
    and, transitively, every group below a group (or every group a user is in). For a query
    of the plugin's own joining ``entities.owner_ref`` (one statement, not a list of refs)."""
    from resolvers import ownership

    return await ownership.owner_set(context.loaders, ref, transitive=transitive)


async def entities_owned_by(context: Context, ref: str, *, transitive: bool = True) -> list[str]:
    """Refs of what a user or group owns; transitive as in the ``entitiesOwnedBy`` query."""
    from resolvers import ownership
    from sources.catalog.queries import refs_owned_by

    owners = await ownership.owner_set(context.loaders, ref, transitive=transitive)
    return await refs_owned_by(context.db, owners)


async def viewer_may_change(context: Context, owner_ref: str | None) -> bool:
    """Whether the viewer may change what ``owner_ref`` owns, as ``Authorize`` decides for
    ``EntityOwner``-like rules: its members (at any depth) with the write scope, and admins.
    For a console deciding whether to show a button; the mutation checks again. A field that
    answers this must be ``CacheScope.PRIVATE``."""
    from graph.authz import is_admin
    from resolvers import ownership

    if await is_admin(context):
        return True
    return await ownership.may_change(context.loaders, context.viewer, owner_ref)


def service(holder: Context | Any, name: str) -> Any:
    """Another plugin's service, by name, from a request's context or the app's services;
    raises ``ServiceMissing`` when no plugin provides it."""
    directory = holder.provided
    if directory is None:
        raise ServiceMissing(f"no plugin provides the service {name!r}")
    return directory.get(name)


def app_services(request: Request) -> Any:
    """The app's services (database, caches, plugin states), for a plugin's endpoint."""
    return request.app.state.services


def shared_cache(services: Any, name: str, *, ttl: float) -> MultiLevelCache:
    """A cache of the plugin's own in the app's multi-level cache: in this process, then in
    Redis (shared by every replica, when configured), entries kept ``ttl`` seconds in both.
    ``await cache.load_many(keys, source)`` answers string keys from either level or from
    ``source(missing_keys) -> {key: value}`` (JSON-encodable values; None is not kept), and
    concurrent misses of one key in this process share one call of ``source``. Called with
    the services a lifespan is given; name it ``<plugin>.<what>``."""
    caches: Caches | None = services.caches
    if caches is None:
        raise RuntimeError("the app has not started: no caches")
    return caches.cache(name, *json_codec(), ttl=ttl)


async def announce_changes(holder: Context | Any, keys: list[str]) -> None:
    """Tell every replica that what these keys name changed: cached answers tagged with any
    of them are dropped (a resolver tags its answer with ``info.context.depends_on``), and
    ``follow_changes`` listeners wake. ``holder`` is a request's context or the services.
    Name entities with ``entity_key(ref)`` and the plugin's own data with ``change_key``:
    only entity keys drop the catalog's lists (the module's docstring has the rules)."""
    await holder.invalidate(keys)


def follow_changes(holder: Context | Any, prefix: str) -> AsyncGenerator[list[str], None]:
    """Changed keys starting with ``prefix``, announced anywhere, a batch at a time, from this
    call on (read what you need after calling it, and nothing falls between). A batch of
    ``[EVERYTHING]`` means changes may have been missed (Redis was away): read afresh. Close
    it (``aclose``) when done."""
    feed = holder.changes
    if feed is None:
        raise RuntimeError("the app has not started: no change feed")
    return feed.follow(prefix)


async def entities_with_annotation(
    context: Context | Any, key: str, value: str, *, kind: str | None = None
) -> list[str]:
    """Refs of the entities whose annotation ``key`` is ``value`` (as written, or in lowercase),
    e.g. the component of a repository by ``github.com/project-slug``; indexed."""
    from sources.catalog.queries import refs_with_annotation

    db = context.db if isinstance(context, Context) else context.database
    return await refs_with_annotation(db, key, value, kind=kind)
