"""The small value types entities are made of: links, profiles, API remotes, and fields a
placeholder could not fill. They take their entity's cache age."""

from __future__ import annotations

import strawberry

from graph.cache_control import CacheControl

__all__ = ["ApiRemote", "EntityLink", "Profile", "UnavailableField"]

INHERIT = CacheControl(inherit_max_age=True)


@strawberry.type(directives=[INHERIT], description="A link shown on an entity's page.")
class EntityLink:
    url: str
    title: str | None
    icon: str | None
    type: str | None


@strawberry.type(
    directives=[INHERIT],
    description="A field of an entity whose placeholder ($text, $json or $yaml) could not be "
    "read at its last import: the entity is kept with the field empty, and the next import "
    "tries again.",
)
class UnavailableField:
    field: str = strawberry.field(description="Its path in the document, as spec.definition.")
    reason: str = strawberry.field(description="What could not be read, and why.")


@strawberry.type(
    directives=[INHERIT],
    description="A transport endpoint of an API (an MCP server or an AI model server, say).",
)
class ApiRemote:
    type: str = strawberry.field(description="The transport: streamable-http, sse, stdio...")
    url: str = strawberry.field(description="The endpoint (for stdio, the command).")


@strawberry.type(directives=[INHERIT], description="How a person or team presents itself.")
class Profile:
    display_name: str | None
    email: str | None
    picture: str | None
