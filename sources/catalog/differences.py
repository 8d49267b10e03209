"""Where Atrium's entity model deliberately differs from Backstage's catalog, and why.

Everywhere else Atrium takes the entities Backstage's catalog takes and refuses the ones it
refuses, for the reasons it gives. The README lists these same differences; a test runs
Backstage's own ``@backstage/catalog-model`` over the repository's catalogs and generated
documents and checks that exactly the documents made to show a difference differ, each in the
direction stated here. An error Atrium raises for being stricter names its difference
(``EntityValidationError.difference``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "DEPENDENCY_OF_LIST",
    "DIFFERENCES",
    "INDEXED_TEXT",
    "INDEXED_TEXT_MAX",
    "MCP_DEFINITION_TEXT",
    "MCP_SERVER_LAYER",
    "MEMBER_LISTS",
    "UNREADABLE_PLACEHOLDER",
    "UNSTORABLE_TEXT",
    "Difference",
]

INDEXED_TEXT_MAX: Final = 500


@dataclass(frozen=True, slots=True)
class Difference:
    key: str
    # stricter: Atrium refuses what Backstage takes; kinder: Atrium takes what Backstage
    # refuses; layered: Atrium judges as Backstage does with an opt-in model layer on.
    atrium: Literal["stricter", "kinder", "layered"]
    what: str
    why: str


UNREADABLE_PLACEHOLDER: Final = Difference(
    "unreadable-placeholder",
    "kinder",
    "an entity whose $text, $json or $yaml placeholder cannot be read is kept, the field "
    "left empty and the reason recorded",
    "its owner, system and relations matter more than its spec text; Backstage drops the "
    "whole entity until the file or URL can be read",
)
MCP_SERVER_LAYER: Final = Difference(
    "mcp-server",
    "layered",
    "an API of type mcp-server is described by spec.remotes (required) instead of a "
    "definition, as with Backstage's opt-in mcp-server model layer",
    "an MCP server is reached, not defined by a document; without the layer Backstage "
    "demands a definition of it like any API",
)
MCP_DEFINITION_TEXT: Final = Difference(
    "mcp-definition-text",
    "stricter",
    "an mcp-server API's definition, when given, must be text",
    "as every API's definition is: it is stored and shown as text; the layer's schema "
    "leaves it unchecked",
)
DEPENDENCY_OF_LIST: Final = Difference(
    "dependency-of-list",
    "stricter",
    "spec.dependencyOf must be a list of refs, as spec.dependsOn is",
    "Backstage's schemas leave dependencyOf out, so its catalog takes a single ref, an "
    "empty string or a mapping there; Atrium reads the field the way Backstage documents it",
)
MEMBER_LISTS: Final = Difference(
    "member-lists",
    "kinder",
    "a Group without spec.children or a User without spec.memberOf is taken, the list filled "
    "in empty",
    "a membership or a parent is declared on either side, so the other side's list adds "
    "nothing; catalogs written without it keep importing, and the entity served has the "
    "list Backstage's clients count on",
)
UNSTORABLE_TEXT: Final = Difference(
    "unstorable-text",
    "stricter",
    "text holding a NUL character (U+0000) or a lone surrogate is refused",
    "PostgreSQL can store neither",
)
INDEXED_TEXT: Final = Difference(
    "indexed-text",
    "stricter",
    f"a title, spec.type, spec.lifecycle or ref in a spec longer than {INDEXED_TEXT_MAX} "
    "characters is refused",
    "they are indexed, and PostgreSQL refuses an index entry over about 2,700 bytes: one such "
    "entity would fail the whole import it is part of",
)

DIFFERENCES: Final = {
    d.key: d
    for d in (
        UNREADABLE_PLACEHOLDER,
        MCP_SERVER_LAYER,
        MCP_DEFINITION_TEXT,
        DEPENDENCY_OF_LIST,
        MEMBER_LISTS,
        UNSTORABLE_TEXT,
        INDEXED_TEXT,
    )
}
