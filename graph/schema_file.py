"""The schema as SDL: what ``atrium schema print`` prints and ``schema.graphql`` commits, and
what one plugin adds to it (``atrium schema print --plugin ID``), a plugin's own fragment.

Atrium's committed schema is the core's and its bundled plugins' (those Atrium's distribution
publishes): a third-party plugin installed beside them never changes it. A plugin's fragment
is the difference its fields make to that schema: its types whole, and ``extend type`` for the
fields (enum values, union members, interfaces) it adds to types it does not define.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import strawberry
from graphql import (
    DefinitionNode,
    EnumTypeDefinitionNode,
    EnumTypeExtensionNode,
    EnumValueDefinitionNode,
    FieldDefinitionNode,
    InputObjectTypeDefinitionNode,
    InputObjectTypeExtensionNode,
    InputValueDefinitionNode,
    InterfaceTypeDefinitionNode,
    InterfaceTypeExtensionNode,
    NamedTypeNode,
    ObjectTypeDefinitionNode,
    ObjectTypeExtensionNode,
    UnionTypeDefinitionNode,
    UnionTypeExtensionNode,
    parse,
    print_ast,
)

from graph.assembly import assemble, core_plugins, discover_plugins, installed_plugins, load_plugin
from graph.plugin import Plugin, PluginConflict
from graph.settings import Settings

# What a type's definition lists by name: fields, input fields, enum values, union members and
# interfaces.
Named = TypeVar(
    "Named", FieldDefinitionNode, InputValueDefinitionNode, EnumValueDefinitionNode, NamedTypeNode
)

__all__ = ["PluginSchema", "atrium_plugins", "fragment_sdl", "plugin_schema", "schema_sdl"]


def atrium_plugins(settings: Settings) -> list[Plugin]:
    """The core and the bundled plugins (less disabled ones): Atrium's own schema."""
    return [*core_plugins(), *discover_plugins(settings, bundled=True)]


def schema_sdl(settings: Settings, plugins: Sequence[Plugin] | None = None) -> str:
    """The SDL of the core and ``plugins``; by default the bundled ones, never a third-party
    plugin installed beside them (``discover_plugins(settings)`` gives every plugin)."""
    found = list(plugins) if plugins is not None else discover_plugins(settings, bundled=True)
    return _sdl(assemble(settings, [*core_plugins(), *found]).schema)


@dataclass(frozen=True, slots=True)
class PluginSchema:
    """One plugin's part of the schema: Atrium's own without it and with it."""

    plugin_id: str
    base_sdl: str  # the core and the bundled plugins, less this one
    live: strawberry.Schema  # the same with this plugin
    live_sdl: str

    @property
    def fragment(self) -> str:
        return fragment_sdl(self.base_sdl, self.live_sdl)


def plugin_schema(settings: Settings, plugin_id: str) -> PluginSchema:
    """The schema Atrium with its bundled plugins has without and with the installed plugin
    ``plugin_id`` (a third-party one, or a bundled one: then measured against the others)."""
    found = {ep.name: ep for ep in installed_plugins()}
    if plugin_id not in found:
        raise PluginConflict(
            f"no installed plugin {plugin_id} (installed: {', '.join(sorted(found)) or 'none'})"
        )
    others = [p for p in discover_plugins(settings, bundled=True) if p.id != plugin_id]
    plugin = load_plugin(found[plugin_id])
    with_it = sorted([*others, plugin], key=lambda p: p.id)
    live = assemble(settings, [*core_plugins(), *with_it]).schema
    assert live is not None
    return PluginSchema(
        plugin_id,
        base_sdl=_sdl(assemble(settings, [*core_plugins(), *others]).schema),
        live=live,
        live_sdl=_sdl(live),
    )


def fragment_sdl(base_sdl: str, live_sdl: str) -> str:
    """What ``live_sdl`` adds to ``base_sdl``, as SDL that ``base_sdl`` extends: new types and
    directives whole, new fields, values, members and interfaces of existing types as
    ``extend`` definitions; empty when nothing was added."""
    base = {_name(d): d for d in parse(base_sdl).definitions if _name(d)}
    parts = []
    for definition in parse(live_sdl).definitions:
        name = _name(definition)
        if not name:
            continue
        if name not in base:
            parts.append(print_ast(definition))
            continue
        extension = _extension(base[name], definition)
        if extension is not None:
            parts.append(print_ast(extension))
    return "".join(f"{part}\n\n" for part in parts)[:-1]


def _sdl(schema: strawberry.Schema | None) -> str:
    assert schema is not None
    return schema.as_str() + "\n"


def _name(definition: DefinitionNode) -> str:
    name = getattr(definition, "name", None)
    return name.value if name is not None else ""


def _new(old: tuple[Named, ...] | None, new: tuple[Named, ...] | None) -> tuple[Named, ...]:
    known = {item.name.value for item in old or ()}
    return tuple(item for item in new or () if item.name.value not in known)


def _extension(old: DefinitionNode, new: DefinitionNode) -> DefinitionNode | None:
    """The part of a type's definition ``new`` that ``old`` lacks, as an extension."""
    extension: DefinitionNode | None = None
    if isinstance(new, ObjectTypeDefinitionNode) and isinstance(old, ObjectTypeDefinitionNode):
        fields, interfaces = _new(old.fields, new.fields), _new(old.interfaces, new.interfaces)
        if fields or interfaces:
            extension = ObjectTypeExtensionNode(
                name=new.name, interfaces=interfaces, directives=(), fields=fields
            )
    elif isinstance(new, InterfaceTypeDefinitionNode) and isinstance(
        old, InterfaceTypeDefinitionNode
    ):
        fields, interfaces = _new(old.fields, new.fields), _new(old.interfaces, new.interfaces)
        if fields or interfaces:
            extension = InterfaceTypeExtensionNode(
                name=new.name, interfaces=interfaces, directives=(), fields=fields
            )
    elif isinstance(new, InputObjectTypeDefinitionNode) and isinstance(
        old, InputObjectTypeDefinitionNode
    ):
        inputs = _new(old.fields, new.fields)
        if inputs:
            extension = InputObjectTypeExtensionNode(name=new.name, directives=(), fields=inputs)
    elif isinstance(new, EnumTypeDefinitionNode) and isinstance(old, EnumTypeDefinitionNode):
        values = _new(old.values, new.values)
        if values:
            extension = EnumTypeExtensionNode(name=new.name, directives=(), values=values)
    elif isinstance(new, UnionTypeDefinitionNode) and isinstance(old, UnionTypeDefinitionNode):
        members = _new(old.types, new.types)
        if members:
            extension = UnionTypeExtensionNode(name=new.name, directives=(), types=members)
    return extension
