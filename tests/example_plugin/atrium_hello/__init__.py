"""A third-party plugin: a table of its own, a loader over it, query fields using both, a
field joining the catalog's Component, its parent typed (``mypy --strict`` checks it), and a
panel on a component's page shipped in its own package (its console folder and template)."""

from __future__ import annotations

from pathlib import Path

from graph.plugin import (
    DataLoader,
    EntityParent,
    Info,
    LoaderServices,
    Parent,
    PluginBuilder,
    entity,
    strawberry,
)

HERE = Path(__file__).parent


def greeting_loader(services: LoaderServices) -> DataLoader[str, str]:
    async def load(languages: list[str]) -> list[str]:
        rows = await services.db.fetch(
            "select language, text from hello_greetings where language = any($1::text[])",
            languages,
        )
        found = {row["language"]: row["text"] for row in rows}
        return [found.get(language, "Hello") for language in languages]

    return DataLoader(load_fn=load)


@strawberry.type
class HelloQuery:
    @strawberry.field(description="A greeting, in the language asked for.")
    async def hello(self, info: Info, name: str, language: str = "en") -> str:
        greeting = await info.context.loaders["hello.greeting"].load(language)
        return f"{greeting}, {name}!"

    @strawberry.field(description="A greeting for an entity of the catalog, by its title.")
    async def greeting(self, info: Info, ref: str, language: str = "en") -> str | None:
        found = await entity(info, ref)
        if found is None:
            return None
        greeting = await info.context.loaders["hello.greeting"].load(language)
        return f"{greeting}, {found.title or found.name}!"


@strawberry.type
class ComponentGreeting:
    @strawberry.field(description="A greeting for the component, by its title or its name.")
    async def greeting(self, parent: Parent[EntityParent], info: Info, language: str = "en") -> str:
        greeting = await info.context.loaders["hello.greeting"].load(language)
        return f"{greeting}, {parent.title or parent.name} ({parent.ref})!"


class HelloPlugin:
    id = "hello"

    def setup(self, builder: PluginBuilder) -> None:
        builder.query(HelloQuery)
        builder.extend_type("Component", ComponentGreeting)
        builder.loader("greeting", greeting_loader)
        builder.migrations(HERE / "migrations")
        # The console part: operations and a module built against the console's SDK.
        builder.console(HERE / "console")
        builder.panel(
            "entity",
            "HelloPanel",
            template=HERE / "templates" / "hello_panel.html",
            kinds=("component",),
            section=("hello", "Hello"),
        )


plugin = HelloPlugin()
