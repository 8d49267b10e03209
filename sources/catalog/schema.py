"""The shape of an entity, as Backstage's JSON schemas describe it, checked in their order.

Backstage's catalog checks an entity against JSON schemas (its envelope, ``Entity`` with
``EntityMeta``, and one schema per kind) with ajv, and reports the first error. These are those
schemas as data, walked in the order ajv walks them (a value's type, then an object's required
properties, unknown ones where none are allowed, its properties in the schema's order; a
list's length, then its items), so that Atrium and Backstage blame the same field of the same
document. The words are Atrium's: ``expected a string, got a list`` for ajv's ``must be string``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from sources.errors import EntityValidationError

__all__ = [
    "API_SPEC",
    "ENTITY",
    "ENVELOPE",
    "MCP_SERVER_SPEC",
    "SPECS",
    "Obj",
    "check",
    "js_keys",
    "kind_of",
]


@dataclass(frozen=True, slots=True)
class Str:
    min_length: int = 0
    pattern: re.Pattern[str] | None = None


@dataclass(frozen=True, slots=True)
class Enum:
    values: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Arr:
    items: Shape | None = None
    min_items: int = 0


@dataclass(frozen=True, slots=True)
class Obj:
    required: tuple[str, ...] = ()
    properties: dict[str, Shape] = field(default_factory=dict)
    # The shape of every value whose key is non-empty and on one line (patternProperties ^.+$).
    values: Shape | None = None
    closed: bool = False  # additionalProperties: false


Shape = Str | Enum | Arr | Obj

_TEXT: Final = Str(min_length=1)
_TEXTS: Final = Arr(_TEXT)
_PROFILE: Final = Obj(properties={"displayName": _TEXT, "email": _TEXT, "picture": _TEXT})

ENVELOPE: Final = Obj(
    required=("apiVersion", "kind", "metadata"),
    properties={
        "apiVersion": _TEXT,
        "kind": _TEXT,
        "metadata": Obj(required=("name",), properties={"name": _TEXT, "namespace": _TEXT}),
    },
)
_REFERENCE: Final = Obj(
    required=("kind", "namespace", "name"),
    properties={"kind": _TEXT, "namespace": _TEXT, "name": _TEXT},
    closed=True,
)
_STATUS_ITEM: Final = Obj(
    required=("type", "level", "message"),
    properties={
        "type": _TEXT,
        "level": Enum(("info", "warning", "error")),
        "message": Str(),
        "error": Obj(
            required=("name", "message"),
            properties={"name": _TEXT, "message": Str(), "code": Str(), "stack": Str()},
        ),
    },
)
ENTITY: Final = Obj(
    required=("apiVersion", "kind", "metadata"),
    properties={
        "apiVersion": _TEXT,
        "kind": _TEXT,
        "metadata": Obj(
            required=("name",),
            properties={
                "uid": _TEXT,
                "etag": _TEXT,
                "name": _TEXT,
                "namespace": _TEXT,
                "title": _TEXT,
                "description": Str(),
                "labels": Obj(values=Str()),
                "annotations": Obj(values=Str()),
                "tags": _TEXTS,
                "links": Arr(
                    Obj(
                        required=("url",),
                        properties={"url": _TEXT, "title": _TEXT, "icon": _TEXT, "type": _TEXT},
                    )
                ),
            },
        ),
        "spec": Obj(),
        "relations": Arr(
            Obj(
                required=("type", "targetRef"),
                properties={
                    "type": Str(min_length=1, pattern=re.compile(r"^[A-Za-z0-9_]+$")),
                    "target": _REFERENCE,
                    "targetRef": _TEXT,
                },
                closed=True,
            )
        ),
        "status": Obj(properties={"items": Arr(_STATUS_ITEM)}),
    },
    closed=True,
)

# spec, per kind (the kinds' schemas, Component.v1alpha1.schema.json and the others).
API_SPEC: Final = Obj(
    required=("type", "lifecycle", "owner", "definition"),
    properties={k: _TEXT for k in ("type", "lifecycle", "owner", "system", "definition")},
)
# Backstage's opt-in model layer for MCP servers (API.v1alpha1.mcp-server.schema.json).
MCP_SERVER_SPEC: Final = Obj(
    required=("type", "lifecycle", "owner", "remotes"),
    properties={
        **{k: _TEXT for k in ("type", "lifecycle", "owner", "system")},
        "remotes": Arr(
            Obj(required=("type", "url"), properties={"type": _TEXT, "url": _TEXT}), min_items=1
        ),
    },
)
SPECS: Final[dict[str, Obj]] = {
    "API": API_SPEC,
    "Component": Obj(
        required=("type", "lifecycle", "owner"),
        properties={
            **{k: _TEXT for k in ("type", "lifecycle", "owner", "system", "subcomponentOf")},
            **{k: _TEXTS for k in ("providesApis", "consumesApis", "dependsOn")},
        },
    ),
    "Resource": Obj(
        required=("type", "owner"),
        properties={"type": _TEXT, "owner": _TEXT, "dependsOn": _TEXTS, "system": _TEXT},
    ),
    "Group": Obj(
        required=("type", "children"),
        properties={
            "type": _TEXT,
            "profile": _PROFILE,
            "parent": _TEXT,
            "children": _TEXTS,
            "members": _TEXTS,
        },
    ),
    "Location": Obj(
        properties={
            "type": _TEXT,
            "target": _TEXT,
            "targets": _TEXTS,
            "presence": Enum(("required", "optional")),
        }
    ),
    "User": Obj(required=("memberOf",), properties={"profile": _PROFILE, "memberOf": _TEXTS}),
    "System": Obj(required=("owner",), properties={k: _TEXT for k in ("owner", "domain", "type")}),
    "Domain": Obj(
        required=("owner",), properties={k: _TEXT for k in ("owner", "subdomainOf", "type")}
    ),
}

_TYPES: Final = {Str: (str, "a string"), Enum: (str, "a string"), Arr: (list, "a list")}
_LINE_BREAKS: Final = re.compile("[\n\r\u2028\u2029]")


def check(value: Any, shape: Shape, path: str, skip: Callable[[str], bool]) -> None:
    """Raise EntityValidationError for the first way ``value`` (at ``path``, dotted) breaks
    ``shape``. ``skip`` names fields whose placeholder could not be read: left empty, they
    are not held against the document."""
    if skip(path):
        return
    if isinstance(shape, Obj):
        _object(value, shape, path, skip)
        return
    expected, described = _TYPES[type(shape)]
    if not isinstance(value, expected):
        raise EntityValidationError(_at(path), f"expected {described}, got {kind_of(value)}")
    if isinstance(shape, Str):
        if len(value) < shape.min_length:
            raise EntityValidationError(_at(path), "must not be empty")
        if shape.pattern is not None and not shape.pattern.search(value):
            raise EntityValidationError(_at(path), f"must match {shape.pattern.pattern}")
    elif isinstance(shape, Enum):
        if value not in shape.values:
            raise EntityValidationError(_at(path), f"must be one of {', '.join(shape.values)}")
    else:
        if len(value) < shape.min_items:
            raise EntityValidationError(_at(path), "must not be empty")
        if shape.items is not None:
            for index, item in enumerate(value):
                check(item, shape.items, f"{path}[{index}]", skip)


def _object(value: Any, shape: Obj, path: str, skip: Callable[[str], bool]) -> None:
    if not isinstance(value, dict):
        raise EntityValidationError(_at(path), f"expected a mapping, got {kind_of(value)}")
    for key in shape.required:
        if key not in value and not skip(_join(path, key)):
            raise EntityValidationError(_join(path, key), "is required")
    if shape.closed:
        for key in js_keys(value):
            if key not in shape.properties:
                raise EntityValidationError(_join(path, key), _unknown(path, shape))
    for key, inner in shape.properties.items():
        if key in value:
            check(value[key], inner, _join(path, key), skip)
    if shape.values is not None:
        for key in js_keys(value):
            if key and not _LINE_BREAKS.search(key):
                check(value[key], shape.values, _join(path, key), skip)


def _unknown(path: str, shape: Obj) -> str:
    if not path:
        return f"Unknown field; an entity has only {_listed(shape.properties)}"
    return f"is not allowed here; expected only {_listed(shape.properties)}"


def _listed(names: Iterable[str]) -> str:
    names = [n for n in names if n not in ("relations", "status")] or list(names)
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


def js_keys(mapping: dict[str, Any]) -> list[str]:
    """The keys in JavaScript's order for them: array indexes ("0", "7") first, ascending,
    then the others as written. Backstage checks keys in that order."""
    indexes = [k for k in mapping if _is_index(k)]
    if not indexes:
        return list(mapping)
    numbered = set(indexes)
    return sorted(indexes, key=int) + [k for k in mapping if k not in numbered]


def _is_index(key: str) -> bool:
    return (
        key.isascii()
        and key.isdigit()
        and (key == "0" or key[0] != "0")
        and len(key) <= 10
        and int(key) < 2**32 - 1
    )


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _at(path: str) -> str:
    return path or "(document)"


def kind_of(value: object) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", type(None): "nothing"}.get(
        type(value), "a boolean" if isinstance(value, bool) else "a number"
    )
