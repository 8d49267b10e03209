"""Backstage's entity model: validation of one document and the relations it declares."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from sources.catalog.refs import DEFAULT_NAMESPACE, canonical_kind, check_name, make_ref, parse_ref
from sources.errors import EntityValidationError, InvalidRef

__all__ = ["RELATION_PAIRS", "Entity", "Relation", "validate_entity"]

API_VERSIONS: Final = ("backstage.io/v1alpha1", "backstage.io/v1beta1")

# Every relation and its inverse; both directions are stored.
RELATION_PAIRS: Final = {
    "ownedBy": "ownerOf",
    "partOf": "hasPart",
    "dependsOn": "dependencyOf",
    "providesApi": "apiProvidedBy",
    "consumesApi": "apiConsumedBy",
    "memberOf": "hasMember",
    "childOf": "parentOf",
}
INVERSE: Final = {**RELATION_PAIRS, **{b: a for a, b in RELATION_PAIRS.items()}}


@dataclass(frozen=True, slots=True)
class _RefField:
    relation: str
    default_kind: str
    many: bool = False
    required: bool = False


# spec field → the relation it declares, per kind (Backstage's BuiltinKindsEntityProcessor).
_OWNER = _RefField("ownedBy", "Group", required=True)
_SPEC_REFS: Final[dict[str, dict[str, _RefField]]] = {
    "Component": {
        "owner": _OWNER,
        "system": _RefField("partOf", "System"),
        "subcomponentOf": _RefField("partOf", "Component"),
        "providesApis": _RefField("providesApi", "API", many=True),
        "consumesApis": _RefField("consumesApi", "API", many=True),
        "dependsOn": _RefField("dependsOn", "Component", many=True),
        "dependencyOf": _RefField("dependencyOf", "Component", many=True),
    },
    "API": {"owner": _OWNER, "system": _RefField("partOf", "System")},
    "Resource": {
        "owner": _OWNER,
        "system": _RefField("partOf", "System"),
        "dependsOn": _RefField("dependsOn", "Component", many=True),
        "dependencyOf": _RefField("dependencyOf", "Component", many=True),
    },
    "System": {"owner": _OWNER, "domain": _RefField("partOf", "Domain")},
    "Domain": {"owner": _OWNER, "subdomainOf": _RefField("partOf", "Domain")},
    "Group": {
        "parent": _RefField("childOf", "Group"),
        "children": _RefField("parentOf", "Group", many=True),
        "members": _RefField("hasMember", "User", many=True),
    },
    "User": {"memberOf": _RefField("memberOf", "Group", many=True)},
    "Location": {},
}
# spec fields that must be non-empty strings, per kind (an API's definition: see _api_spec).
_REQUIRED_STRINGS: Final = {
    "Component": ("type", "lifecycle"),
    "API": ("type", "lifecycle"),
    "Resource": ("type",),
    "Group": ("type",),
}
_TAG: Final = re.compile(r"^[a-z0-9:+#]+(-[a-z0-9:+#]+)*$")


@dataclass(frozen=True, slots=True)
class Relation:
    source_ref: str
    type: str
    target_ref: str


@dataclass(slots=True)
class Entity:
    """A validated entity, ready to store."""

    ref: str
    kind: str
    namespace: str
    name: str
    title: str | None
    description: str | None
    spec_type: str | None
    lifecycle: str | None
    owner_ref: str | None
    system_ref: str | None
    tags: list[str]
    labels: dict[str, str]
    annotations: dict[str, str]
    links: list[dict[str, str]]
    spec: dict[str, Any]
    document: dict[str, Any]
    relations: list[Relation] = field(default_factory=list)
    # Fields whose placeholder ($text, $json, $yaml) could not be read: path → why.
    unavailable: dict[str, str] = field(default_factory=dict)
    hash: str = ""


def validate_entity(doc: object, unavailable: dict[str, str] | None = None) -> Entity:
    """Check one document against the model; raises EntityValidationError naming the field.
    ``unavailable`` names fields whose placeholder could not be read: they are left empty,
    and that is not held against the document."""
    unavailable = unavailable or {}
    if not isinstance(doc, dict):
        raise EntityValidationError("(document)", f"expected a mapping, got {_kind_of(doc)}")
    api_version = doc.get("apiVersion")
    if api_version not in API_VERSIONS:
        raise EntityValidationError(
            "apiVersion", f"{_short(api_version)} is not one of {', '.join(API_VERSIONS)}"
        )
    raw_kind = _string(doc, "kind", "kind", required=True)
    try:
        kind = canonical_kind(raw_kind or "")
    except InvalidRef as exc:
        raise EntityValidationError("kind", str(exc)) from None
    metadata = _mapping(doc, "metadata", "metadata", required=True)
    spec = _mapping(doc, "spec", "spec", required=kind != "Location")

    name = _string(metadata, "name", "metadata.name", required=True) or ""
    _check(check_name(name), "metadata.name")
    namespace = _string(metadata, "namespace", "metadata.namespace") or DEFAULT_NAMESPACE
    _check(check_name(namespace, "namespace"), "metadata.namespace")
    title = _string(metadata, "title", "metadata.title")
    description = _string(metadata, "description", "metadata.description")
    tags = _tags(metadata)
    labels = _string_map(metadata, "labels")
    annotations = _string_map(metadata, "annotations")
    links = _links(metadata)

    for key in _REQUIRED_STRINGS.get(kind, ()):
        _string(spec, key, f"spec.{key}", required=f"spec.{key}" not in unavailable)
    if kind == "API":
        _api_spec(spec, unavailable)
    spec_type = _string(spec, "type", "spec.type")
    lifecycle = _string(spec, "lifecycle", "spec.lifecycle")

    ref = make_ref(kind, namespace, name)
    relations: list[Relation] = []
    single_targets: dict[str, str] = {}
    for key, rule in _SPEC_REFS[kind].items():
        value = spec.get(key)
        if value is None:
            if rule.required:
                raise EntityValidationError(f"spec.{key}", "is required")
            continue
        values = value if rule.many else [value]
        if rule.many and not isinstance(value, list):
            raise EntityValidationError(f"spec.{key}", f"expected a list, got {_kind_of(value)}")
        for index, item in enumerate(values):
            where = f"spec.{key}[{index}]" if rule.many else f"spec.{key}"
            if not isinstance(item, str):
                raise EntityValidationError(where, f"expected a reference, got {_kind_of(item)}")
            try:
                target = make_ref(
                    *parse_ref(item, default_kind=rule.default_kind, default_namespace=namespace)
                )
            except InvalidRef as exc:
                raise EntityValidationError(where, str(exc)) from None
            relations.append(Relation(ref, rule.relation, target))
            relations.append(Relation(target, INVERSE[rule.relation], ref))
            if not rule.many:
                single_targets[key] = target

    entity = Entity(
        ref=ref,
        kind=kind,
        namespace=namespace.lower(),
        name=name,
        title=title,
        description=description,
        spec_type=spec_type,
        lifecycle=lifecycle,
        owner_ref=single_targets.get("owner"),
        system_ref=single_targets.get("system") or single_targets.get("domain"),
        tags=tags,
        labels=labels,
        annotations=annotations,
        links=links,
        spec=spec,
        document=doc,
        relations=list(dict.fromkeys(relations)),
        unavailable=dict(unavailable),
    )
    # What was substituted is part of the document: a changed definition file updates the
    # entity. So is what could not be: a placeholder read at last updates it too.
    hashed = [doc, unavailable] if unavailable else doc
    canonical = orjson.dumps(hashed, option=orjson.OPT_SORT_KEYS)
    if b"\\u0000" in canonical:
        # PostgreSQL stores no NUL character in text or jsonb.
        raise EntityValidationError("(document)", "contains a NUL character")
    entity.hash = hashlib.sha256(canonical).hexdigest()
    return entity


# API types described by where they are reached instead of by a definition document, as
# Backstage's model layers for them have it (API.v1alpha1.mcp-server.schema.json and
# API.v1alpha1.ai-model-server.schema.json): spec.remotes is required, the definition is not.
# Every other type needs its definition (API.v1alpha1.schema.json).
REMOTE_TYPES: Final = frozenset({"mcp-server", "ai-model-server"})


def _api_spec(spec: dict[str, Any], unavailable: dict[str, str]) -> None:
    if spec.get("type") not in REMOTE_TYPES:
        _string(
            spec, "definition", "spec.definition", required="spec.definition" not in unavailable
        )
        return
    _string(spec, "definition", "spec.definition")
    if "spec.remotes" in unavailable:
        return
    remotes = spec.get("remotes")
    if remotes is None:
        raise EntityValidationError("spec.remotes", "is required for an API of this type")
    if not isinstance(remotes, list):
        raise EntityValidationError("spec.remotes", f"expected a list, got {_kind_of(remotes)}")
    if not remotes:
        raise EntityValidationError("spec.remotes", "must name at least one {type, url}")
    for index, remote in enumerate(remotes):
        where = f"spec.remotes[{index}]"
        if not isinstance(remote, dict):
            raise EntityValidationError(where, f"expected a mapping, got {_kind_of(remote)}")
        _string(remote, "type", f"{where}.type", required=True)
        _string(remote, "url", f"{where}.url", required=True)


def _check(problem: str | None, where: str) -> None:
    if problem:
        raise EntityValidationError(where, problem)


def _kind_of(value: object) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", type(None): "nothing"}.get(
        type(value), type(value).__name__
    )


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _string(
    container: dict[str, Any], key: str, where: str, *, required: bool = False
) -> str | None:
    value = container.get(key)
    if value is None or value == "":
        if required:
            raise EntityValidationError(where, "is required")
        return None
    if not isinstance(value, str):
        raise EntityValidationError(where, f"expected a string, got {_kind_of(value)}")
    return value


def _mapping(
    container: dict[str, Any], key: str, where: str, *, required: bool = False
) -> dict[str, Any]:
    value = container.get(key)
    if value is None:
        if required:
            raise EntityValidationError(where, "is required")
        return {}
    if not isinstance(value, dict):
        raise EntityValidationError(where, f"expected a mapping, got {_kind_of(value)}")
    return value


def _tags(metadata: dict[str, Any]) -> list[str]:
    value = metadata.get("tags") or []
    if not isinstance(value, list):
        raise EntityValidationError("metadata.tags", f"expected a list, got {_kind_of(value)}")
    for index, tag in enumerate(value):
        if not isinstance(tag, str) or len(tag) > 63 or not _TAG.match(tag):
            raise EntityValidationError(
                f"metadata.tags[{index}]",
                f"{_short(tag)} must be lowercase letters, digits, : + # joined by single dashes",
            )
    return list(dict.fromkeys(value))


def _string_map(metadata: dict[str, Any], key: str) -> dict[str, str]:
    value = _mapping(metadata, key, f"metadata.{key}")
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise EntityValidationError(
                f"metadata.{key}.{k}", f"keys and values must be strings, got {_kind_of(v)}"
            )
    return value


def _links(metadata: dict[str, Any]) -> list[dict[str, str]]:
    value = metadata.get("links") or []
    if not isinstance(value, list):
        raise EntityValidationError("metadata.links", f"expected a list, got {_kind_of(value)}")
    links = []
    for index, link in enumerate(value):
        where = f"metadata.links[{index}]"
        if not isinstance(link, dict):
            raise EntityValidationError(where, f"expected a mapping, got {_kind_of(link)}")
        url = _string(link, "url", f"{where}.url", required=True)
        entry = {"url": url}
        for key in ("title", "icon", "type"):
            text = _string(link, key, f"{where}.{key}")
            if text is not None:
                entry[key] = text
        links.append(entry)
    return links  # type: ignore[return-value]
