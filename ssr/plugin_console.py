"""Plugins' console parts shipped in their own packages (``builder.console``).

At start-up each plugin's ``*.graphql`` files are parsed and validated against the schema (an
invalid one stops the start-up with ``InvalidConsole``, naming the plugin, the file and the
problem), then printed as the console's build prints its own operations: ``__typename`` added
to every selection set below the root, as Apollo Client's cache asks for it. They join the
console's trusted documents and the operations pages may run (``ssr.console``). The folder's
other files (the plugin's ES module, its chunks and styles) are served under
``/plugins/<id>/console/<version>/``, the version being a hash of the folder's content, so
they are immutable; the console learns the module's address from the page (``plugins``) and
imports it beside its own panels, sharing its React and SDK through the page's import map.
"""

from __future__ import annotations

import hashlib
import mimetypes
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLSchema,
    NameNode,
    OperationDefinitionNode,
    SelectionSetNode,
    Visitor,
    parse,
    print_ast,
    validate,
    visit,
)
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response

from graph.plugin import PluginConflict, PluginConsoleFiles
from sources.persisted import document_hash

__all__ = [
    "InvalidConsole",
    "PluginModule",
    "load_plugin_consoles",
    "plugin_console_files",
    "with_typenames",
]

CONSOLE_PATH = "/plugins/{plugin}/console/{version}/{path:path}"
_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".map": "application/json",
    ".json": "application/json",
    ".svg": "image/svg+xml",
}


class InvalidConsole(PluginConflict):
    """A plugin's console part is not what the plugin API asks for: an operation that does not
    parse or validate, one without a name or named otherwise than its file, two operations or
    fragments with one name."""


@dataclass(frozen=True, slots=True)
class PluginModule:
    """A plugin's console part as the server uses it."""

    plugin_id: str
    directory: Path
    module: str  # the ES module of its panels, relative to ``directory``
    version: str  # a hash of every file of the folder
    documents: tuple[tuple[str, str, str], ...]  # (hash, body, name) of its operations
    files: frozenset[str]  # what is served: every file but the operations, by relative path

    @property
    def base(self) -> str:
        return f"/plugins/{self.plugin_id}/console/{self.version}/"

    @property
    def url(self) -> str:
        return self.base + self.module


def load_plugin_consoles(
    consoles: list[PluginConsoleFiles], schema: GraphQLSchema
) -> list[PluginModule]:
    """Every plugin's console part, its operations checked against ``schema``."""
    modules = []
    named: dict[str, str] = {}  # operation name → plugin id
    for console in consoles:
        module = _load(console, schema)
        for _, _, name in module.documents:
            if name in named:
                raise InvalidConsole(
                    f"the console operation {name} is plugin {named[name]}'s and plugin "
                    f"{console.plugin_id}'s: one of them must rename it"
                )
            named[name] = console.plugin_id
        modules.append(module)
    return modules


def _load(console: PluginConsoleFiles, schema: GraphQLSchema) -> PluginModule:
    where = f"plugin {console.plugin_id}'s console"
    files = sorted(
        p.relative_to(console.directory).as_posix()
        for p in console.directory.rglob("*")
        if p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(console.directory).parts)
    )
    digest = hashlib.blake2b(digest_size=8)
    for name in files:
        digest.update(name.encode() + b"\0" + (console.directory / name).read_bytes() + b"\0")
    operations: dict[str, tuple[str, OperationDefinitionNode]] = {}  # name → (file, node)
    fragments: dict[str, tuple[str, FragmentDefinitionNode]] = {}
    for name in files:
        if "/" in name or not name.endswith(".graphql"):
            continue
        text = (console.directory / name).read_text(encoding="utf-8")
        try:
            document = parse(text)
        except GraphQLError as exc:
            raise InvalidConsole(f"{where}: {name}: {_told(exc)}") from None
        found = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
        stem = name.removesuffix(".graphql")
        if len(found) > 1 or (found and (found[0].name is None or found[0].name.value != stem)):
            raise InvalidConsole(
                f"{where}: {name}: a file holds one operation, named as the file ({stem})"
            )
        if found:
            operations[stem] = (name, found[0])
        for definition in document.definitions:
            if isinstance(definition, FragmentDefinitionNode):
                fragment = definition.name.value
                if fragment in fragments:
                    raise InvalidConsole(
                        f"{where}: {name}: the fragment {fragment} is also in "
                        f"{fragments[fragment][0]}"
                    )
                fragments[fragment] = (name, definition)
    documents = []
    for stem, (name, operation) in sorted(operations.items()):
        used = _fragments_of(operation, fragments, f"{where}: {name}")
        document = DocumentNode(definitions=(operation, *used))
        errors = validate(schema, document)
        if errors:
            raise InvalidConsole(f"{where}: {name}: " + "; ".join(_told(e) for e in errors))
        body = print_ast(with_typenames(document))
        documents.append((document_hash(body), body, stem))
    return PluginModule(
        console.plugin_id,
        console.directory,
        console.module,
        digest.hexdigest(),
        tuple(documents),
        frozenset(f for f in files if not f.endswith(".graphql")),
    )


def _fragments_of(
    operation: OperationDefinitionNode,
    fragments: dict[str, tuple[str, FragmentDefinitionNode]],
    where: str,
) -> list[FragmentDefinitionNode]:
    """The fragments an operation spreads, at any depth, in the order first spread."""
    used: dict[str, FragmentDefinitionNode] = {}
    pending: list[Any] = [operation]
    while pending:
        spreads = _Spreads()
        visit(pending.pop(0), spreads)
        for spread in spreads.names:
            if spread in used:
                continue
            if spread not in fragments:
                raise InvalidConsole(f"{where}: Unknown fragment '{spread}'.")
            used[spread] = fragments[spread][1]
            pending.append(used[spread])
    return list(used.values())


class _Spreads(Visitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def enter_fragment_spread(self, spread: FragmentSpreadNode, *_: Any) -> None:
        self.names.append(spread.name.value)


_TYPENAME = FieldNode(name=NameNode(value="__typename"), arguments=(), directives=())


class _AddTypename(Visitor):
    """Apollo Client's addTypenameToDocument: ``__typename`` last in every selection set but
    an operation's own, unless it is there already (or an introspection field is), or the
    field is ``@export``-ed."""

    def enter_selection_set(
        self, node: SelectionSetNode, key: Any, parent: Any, *_: Any
    ) -> SelectionSetNode | None:
        if isinstance(parent, OperationDefinitionNode):
            return None
        if any(isinstance(s, FieldNode) and s.name.value.startswith("__") for s in node.selections):
            return None
        if isinstance(parent, FieldNode) and any(
            d.name.value == "export" for d in parent.directives or ()
        ):
            return None
        return SelectionSetNode(selections=(*node.selections, _TYPENAME))


def with_typenames(document: DocumentNode) -> DocumentNode:
    """The document as Apollo Client sends it (and the console's build prints it)."""
    changed: DocumentNode = visit(document, _AddTypename())
    return changed


def _told(error: GraphQLError) -> str:
    where = ", ".join(f"line {loc.line}, column {loc.column}" for loc in error.locations or ())
    return f"{error.message} ({where})" if where else error.message


async def plugin_console_files(request: Request) -> Response:
    """A file of a plugin's console part, at its versioned (immutable) address."""
    console = request.app.state.services.console
    modules: dict[str, PluginModule] = console.plugins if console is not None else {}
    params = request.path_params
    module = modules.get(params["plugin"])
    path = params["path"]
    if module is None or params["version"] != module.version or path not in module.files:
        return PlainTextResponse("Not Found", 404)
    suffix = Path(path).suffix.lower()
    media_type = _TYPES.get(suffix) or mimetypes.guess_type(path)[0] or "application/octet-stream"
    return FileResponse(
        module.directory / path,
        media_type=media_type,
        headers={
            "cache-control": "public, max-age=31536000, immutable",
            "x-content-type-options": "nosniff",
        },
    )
