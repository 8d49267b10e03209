"""The plugin API, exercised the way a third party uses it."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from graph.assembly import assemble, discover_plugins, installed_plugins
from graph.catalog.plugin import CatalogPlugin
from graph.plugin import (
    DataLoader,
    PluginBuilder,
    PluginConflict,
    SchemaExtension,
    app_services,
    service,
    strawberry,
)
from graph.settings import Settings
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from tests.artifacts import example_plugin_site
from tests.conftest import AppFactory


@pytest.fixture(scope="module")
def installed_example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The example plugin package pip-installed into a folder put on sys.path."""
    target = example_plugin_site(tmp_path_factory)
    sys.path.insert(0, str(target))
    importlib.invalidate_caches()
    yield target
    sys.path.remove(str(target))
    sys.modules.pop("atrium_hello", None)
    importlib.invalidate_caches()


async def test_an_installed_plugin_is_discovered_and_serves_its_field(
    installed_example: Path, make_client: AppFactory
) -> None:
    # Every other plugin installed here off (Atrium's own, and any other package's): this is
    # about the example alone.
    others = [ep.name for ep in installed_plugins() if ep.name != "hello"]
    found = discover_plugins(Settings(disabled_plugins=others))
    assert [p.id for p in found] == ["hello"]
    client = await make_client(plugins=found)
    body = await client.gql('{ en: hello(name: "Ada") fr: hello(name: "Ada", language: "fr") }')
    assert body["data"] == {"en": "Hello, Ada!", "fr": "Bonjour, Ada!"}
    # Its migration ran in its own scope.
    scopes = await client.services.db.fetch(
        "select scope, version from atrium_migrations where scope = 'hello'"
    )
    assert [(r["scope"], r["version"]) for r in scopes] == [("hello", 1)]


def test_bundled_plugins_are_told_from_third_party_ones(installed_example: Path) -> None:
    # Atrium's own are those its distribution publishes; the example's package is another.
    bundled = [ep.name for ep in installed_plugins(bundled=True)]
    assert bundled == ["deployments", "observability", "pincompute"]
    assert "hello" in [ep.name for ep in installed_plugins(bundled=False)]
    assert [p.id for p in discover_plugins(Settings(), bundled=True)] == bundled
    third_party = [p.id for p in discover_plugins(Settings(), bundled=False)]
    assert "hello" in third_party and not set(third_party) & set(bundled)


GREETING = """query Greeting($ref: String!) {
  entity(ref: $ref) { ... on Component { greeting(language: "fr") } }
}"""


async def test_a_field_joining_component_reads_its_typed_parent(
    installed_example: Path, make_client: AppFactory
) -> None:
    found = discover_plugins(
        Settings(disabled_plugins=["deployments", "observability", "pincompute"])
    )
    client = await make_client(plugins=found, response_cache=False)  # every GET executes
    yaml = (
        "apiVersion: backstage.io/v1alpha1\nkind: Component\n"
        "metadata: {name: cart, title: Cart}\nspec: {type: service, lifecycle: production, owner: team-a}\n"
    )
    result = await apply_batch(client.services.db, parse_documents(yaml, "c.yaml"))
    assert not result.errors
    expected = {"entity": {"greeting": "Bonjour, Cart (component:default/cart)!"}}
    body = await client.gql(GREETING, {"ref": "component:cart"})
    assert body["data"] == expected
    for _ in range(2):  # learned, then run on its compiled plan, which passes the parent too
        response = await client.persisted_get(GREETING, {"ref": "component:cart"})
        assert response.json() == {"data": expected}
    metrics = (await client.get("/metrics")).text
    assert 'atrium_operation_runs_total{executor="plan",reason="compiled"} 2.0' in metrics


def test_a_disabled_plugin_is_not_loaded(installed_example: Path) -> None:
    installed = [ep.name for ep in installed_plugins()]
    assert "hello" in installed
    found = discover_plugins(Settings(disabled_plugins=["hello"]))
    assert [p.id for p in found] == [name for name in installed if name != "hello"]
    every = ", ".join(installed)
    assert discover_plugins(Settings.model_validate({"disabled_plugins": every})) == []


@strawberry.type
class EntityAgain:
    @strawberry.field
    def entity(self) -> str:
        return "mine"


class Clashing:
    id = "clashing"

    def setup(self, builder: PluginBuilder) -> None:
        builder.query(EntityAgain)


def test_a_field_claimed_twice_fails_naming_both_plugins() -> None:
    with pytest.raises(
        PluginConflict, match=r"Query\.entity is defined by plugin catalog and by plugin clashing"
    ):
        assemble(Settings(), [CatalogPlugin(), Clashing()])


def test_two_plugins_with_one_id_fail() -> None:
    with pytest.raises(PluginConflict, match="two plugins have the id catalog"):
        assemble(Settings(), [CatalogPlugin(), CatalogPlugin()])


class TwoLoaders:
    id = "twice"

    def setup(self, builder: PluginBuilder) -> None:
        builder.loader("x", lambda services: DataLoader(load_fn=lambda keys: keys))
        builder.loader("x", lambda services: DataLoader(load_fn=lambda keys: keys))


def test_a_loader_registered_twice_fails() -> None:
    with pytest.raises(PluginConflict, match=r"registers loader twice\.x twice"):
        assemble(Settings(), [CatalogPlugin(), TwoLoaders()])


def test_fields_must_be_strawberry_types() -> None:
    class Plain:
        id = "plain"

        def setup(self, builder: PluginBuilder) -> None:
            builder.query(type("NotAType", (), {}))

    with pytest.raises(PluginConflict, match="must be decorated"):
        assemble(Settings(), [CatalogPlugin(), Plain()])


class Busy:
    """A plugin with a background job and a schema extension."""

    id = "busy"

    def __init__(self) -> None:
        self.runs = 0
        self.operations: list[str] = []

    def setup(self, builder: PluginBuilder) -> None:
        plugin = self

        async def tick(services: object) -> None:
            plugin.runs += 1
            if plugin.runs == 2:
                raise RuntimeError("a failing run is logged, and the job goes on")

        class Recorder(SchemaExtension):
            def on_operation(self) -> Iterator[None]:
                yield
                plugin.operations.append(self.execution_context.operation_name or "")

        builder.job("tick", tick, interval=0.01)
        builder.extension(Recorder)


async def test_jobs_run_repeatedly_and_extensions_see_operations(
    make_client: AppFactory, caplog: pytest.LogCaptureFixture
) -> None:
    busy = Busy()
    client = await make_client(plugins=[busy])
    await client.gql("query Named { __typename }")
    for _ in range(100):
        if busy.runs >= 4:
            break
        await asyncio.sleep(0.01)
    assert busy.runs >= 4
    [failure] = [r for r in caplog.records if r.getMessage() == "background job failed"]
    assert failure.job == "busy.tick"  # type: ignore[attr-defined]
    assert busy.operations == ["Named"]


class _Provider:
    def __init__(self, id: str, service_name: str = "clock") -> None:
        self.id = id
        self.service_name = service_name

    def setup(self, builder: PluginBuilder) -> None:
        builder.provide(self.service_name, lambda state: ("clock of", state))

        @contextlib.asynccontextmanager
        async def lifespan(services: object) -> AsyncIterator[str]:
            yield f"{self.id}'s state"

        builder.lifespan(lifespan)


class _User:
    id = "user"

    def __init__(self, optional: bool = False) -> None:
        self.optional = optional
        self.seen: list[object] = []

    def setup(self, builder: PluginBuilder) -> None:
        builder.use("clock", optional=self.optional)
        plugin = self

        @contextlib.asynccontextmanager
        async def lifespan(services: object) -> AsyncIterator[None]:
            # Providers start first, whatever the plugins' order.
            plugin.seen.append(service(services, "clock"))
            yield None

        builder.lifespan(lifespan)

        async def hook(request: Request) -> Response:
            found = service(app_services(request), "clock")
            return JSONResponse({"clock": list(found)})

        builder.route("/hooks/user", hook)


def test_a_service_provided_twice_or_missing_fails_naming_the_plugins() -> None:
    with pytest.raises(
        PluginConflict, match="service clock is provided by plugin a and by plugin b"
    ):
        assemble(Settings(), [CatalogPlugin(), _Provider("a"), _Provider("b")])
    with pytest.raises(PluginConflict, match="plugin user needs the service clock, which no"):
        assemble(Settings(), [CatalogPlugin(), _User()])
    assemble(Settings(), [CatalogPlugin(), _User(optional=True)])  # optional: may be missing


def test_routes_stay_under_hooks_or_the_plugins_folder_and_are_claimed_once() -> None:
    class Stray:
        id = "stray"

        def setup(self, builder: PluginBuilder) -> None:
            builder.route("/graphql", lambda request: None)  # type: ignore[arg-type,return-value]

    with pytest.raises(PluginConflict, match="route /graphql must be under /hooks/"):
        assemble(Settings(), [CatalogPlugin(), Stray()])

    class Twin(_User):
        id = "twin"

    with pytest.raises(PluginConflict, match="route POST /hooks/user is served by plugin user"):
        assemble(Settings(), [CatalogPlugin(), _Provider("a"), _User(), Twin()])


async def test_one_plugin_uses_anothers_service_and_serves_a_route(
    make_client: AppFactory,
) -> None:
    user = _User()
    client = await make_client(plugins=[user, _Provider("a")])
    assert user.seen == [("clock of", "a's state")]
    answer = await client.post("/hooks/user")
    assert answer.status_code == 200 and answer.json() == {"clock": ["clock of", "a's state"]}
    assert (await client.get("/hooks/user")).status_code == 405
