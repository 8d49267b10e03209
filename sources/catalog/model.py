"""Backstage's entity model: validation of one document and the relations it declares.

A document is judged as Backstage's catalog judges it, in its order, so that the first
problem found is the one Backstage reports: the envelope (apiVersion, kind, metadata.name),
the Entity schema, fields foreign to the root, the formats of names, namespaces, labels,
annotations, tags and links (``sources.catalog.formats``), the kind's schema
(``sources.catalog.schema``), and last the refs of the spec, which become relations. Where
Atrium differs on purpose, ``sources.catalog.differences`` says so and why.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from sources.catalog import schema
from sources.catalog.differences import (
    DEPENDENCY_OF_LIST,
    INDEXED_TEXT,
    INDEXED_TEXT_MAX,
    MCP_DEFINITION_TEXT,
    UNSTORABLE_TEXT,
)
from sources.catalog.formats import check_formats
from sources.catalog.refs import DEFAULT_NAMESPACE, KINDS, make_ref, split_ref
from sources.errors import EntityValidationError, InvalidRef

__all__ = ["INVERSE", "RELATION_PAIRS", "Entity", "Relation", "validate_entity"]

API_VERSIONS: Final = ("backstage.io/v1alpha1", "backstage.io/v1beta1")
ROOT_FIELDS: Final = ("apiVersion", "kind", "metadata", "spec")

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
    default_kind: str | None  # None: the ref must name its kind (dependsOn, dependencyOf)
    required: bool = False


# spec field → the relation it declares, per kind, in the order Backstage reads them (its
# model's relation fields, which BuiltinKindsEntityProcessor follows).
_OWNER = _RefField("ownedBy", "Group", required=True)
_SYSTEM = _RefField("partOf", "System")
_DEPENDS_ON = _RefField("dependsOn", None)
_DEPENDENCY_OF = _RefField("dependencyOf", None)
_SPEC_REFS: Final[dict[str, dict[str, _RefField]]] = {
    "Component": {
        "owner": _OWNER,
        "subcomponentOf": _RefField("partOf", "Component"),
        "providesApis": _RefField("providesApi", "API"),
        "consumesApis": _RefField("consumesApi", "API"),
        "dependsOn": _DEPENDS_ON,
        "dependencyOf": _DEPENDENCY_OF,
        "system": _SYSTEM,
    },
    "API": {"owner": _OWNER, "system": _SYSTEM},
    "Resource": {
        "owner": _OWNER,
        "dependsOn": _DEPENDS_ON,
        "dependencyOf": _DEPENDENCY_OF,
        "system": _SYSTEM,
    },
    "System": {"owner": _OWNER, "domain": _RefField("partOf", "Domain")},
    "Domain": {"owner": _OWNER, "subdomainOf": _RefField("partOf", "Domain")},
    "Group": {
        "parent": _RefField("childOf", "Group"),
        "children": _RefField("parentOf", "Group"),
        "members": _RefField("hasMember", "User"),
    },
    "User": {"memberOf": _RefField("memberOf", "Group")},
    "Location": {},
}


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
    skip = _skipper(unavailable)
    if not isinstance(doc, dict):
        raise EntityValidationError("(document)", f"expected a mapping, got {schema.kind_of(doc)}")
    schema.check(doc, schema.ENVELOPE, "", skip)
    doc = _annotated(doc)
    schema.check(doc, schema.ENTITY, "", skip)
    for key in schema.js_keys(doc):
        if key not in ROOT_FIELDS:
            raise EntityValidationError(
                key, "Unknown field; an entity has only apiVersion, kind, metadata and spec"
            )
    check_formats(doc, skip)
    kind = _kind(doc)
    if "spec" not in doc:
        raise EntityValidationError("spec", "is required")
    doc = _defaulted(doc, kind)
    spec = doc["spec"]
    is_mcp_server = kind == "API" and isinstance(spec, dict) and spec.get("type") == "mcp-server"
    shape = schema.MCP_SERVER_SPEC if is_mcp_server else schema.SPECS[kind]
    schema.check(spec, shape, "spec", skip)
    spec = spec if isinstance(spec, dict) else {}  # not a mapping: its placeholder failed
    _stricter(doc["metadata"], spec, kind, is_mcp_server, skip)

    metadata = doc["metadata"]
    name = metadata["name"]
    namespace = metadata.get("namespace") or DEFAULT_NAMESPACE
    ref = make_ref(kind, namespace, name)
    relations: list[Relation] = []
    single_targets: dict[str, str] = {}
    for key, rule in _SPEC_REFS[kind].items():
        value = spec.get(key)
        if value is None and rule.required:
            raise EntityValidationError(f"spec.{key}", "is required")  # its placeholder failed
        if not value:
            continue  # as Backstage: an empty value declares nothing
        many = isinstance(value, list)
        for index, item in enumerate(value if many else [value]):
            where = f"spec.{key}[{index}]" if many else f"spec.{key}"
            target = _target(item, rule, namespace, where)
            relations.append(Relation(ref, rule.relation, target))
            relations.append(Relation(target, INVERSE[rule.relation], ref))
            if not many:
                single_targets[key] = target

    entity = Entity(
        ref=ref,
        kind=kind,
        namespace=namespace.lower(),
        name=name,
        title=_text(metadata.get("title")),
        description=_text(metadata.get("description")),
        spec_type=_text(spec.get("type")),
        lifecycle=_text(spec.get("lifecycle")),
        owner_ref=single_targets.get("owner"),
        system_ref=single_targets.get("system") or single_targets.get("domain"),
        tags=list(dict.fromkeys(metadata.get("tags") or [])),
        labels=metadata.get("labels") or {},
        annotations=metadata.get("annotations") or {},
        links=[_link(link) for link in metadata.get("links") or [] if isinstance(link, dict)],
        spec=spec,
        document=doc,
        relations=list(dict.fromkeys(relations)),
        unavailable=dict(unavailable),
    )
    # What was substituted is part of the document: a changed definition file updates the
    # entity. So is what could not be: a placeholder read at last updates it too.
    hashed = [doc, unavailable] if unavailable else doc
    try:
        canonical = orjson.dumps(hashed, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        raise EntityValidationError(
            "(document)", "contains a lone surrogate (not a Unicode character)", UNSTORABLE_TEXT.key
        ) from None
    if b"\\u0000" in canonical:
        # PostgreSQL stores no NUL character in text or jsonb.
        raise EntityValidationError("(document)", "contains a NUL character", UNSTORABLE_TEXT.key)
    entity.hash = hashlib.sha256(canonical).hexdigest()
    return entity


def _skipper(unavailable: dict[str, str]) -> Callable[[str], bool]:
    """Whether a path lies in a field whose placeholder could not be read."""
    if not unavailable:
        return lambda path: False
    if "(document)" in unavailable:
        return lambda path: True
    return lambda path: any(
        path == gone or path.startswith((f"{gone}.", f"{gone}[")) for gone in unavailable
    )


def _kind(doc: dict[str, Any]) -> str:
    """The kind, when Backstage's catalog has a processor for the apiVersion and kind."""
    api_version, kind = doc["apiVersion"], str(doc["kind"])
    if api_version not in API_VERSIONS:
        raise EntityValidationError(
            "apiVersion",
            f"{api_version!r} is not one of {', '.join(API_VERSIONS)}: no processor "
            "recognizes the entity",
        )
    if kind not in KINDS:
        cased = [k for k in KINDS if k.lower() == kind.lower()]
        hint = f" (kinds are case-sensitive: {cased[0]})" if cased else ""
        raise EntityValidationError(
            "kind",
            f"{kind!r} is not one of {', '.join(sorted(KINDS))}{hint}: no processor "
            "recognizes the entity",
        )
    return kind


# Lists Backstage requires (though they may be empty) and Atrium defaults to empty, as
# Backstage defaults a namespace: a membership is declared on either side, so the list on
# the other side adds nothing, and catalogs written without it keep importing.
_DEFAULTED: Final = {"Group": "children", "User": "memberOf"}


def _defaulted(doc: dict[str, Any], kind: str) -> dict[str, Any]:
    """``doc`` with the lists of ``_DEFAULTED`` filled in (a copy, only when one is missing),
    so that the entity served has every field Backstage's clients count on."""
    key, spec = _DEFAULTED.get(kind), doc.get("spec")
    if key is None or not isinstance(spec, dict) or key in spec:
        return doc
    return {**doc, "spec": {**spec, key: []}}


def _annotated(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with annotations that JavaScript takes for false (null, "", 0, false) read as
    none, as Backstage's catalog reads them: it adds its own annotations to a file's
    entities, and starts from an empty mapping when the file's are false."""
    metadata = doc["metadata"]
    value = metadata.get("annotations", {})
    falsy = (
        value is None
        or value is False
        or value == ""
        or (type(value) in (int, float) and value == 0)
    )
    if not falsy:
        return doc
    return {**doc, "metadata": {**metadata, "annotations": {}}}


def _stricter(
    metadata: dict[str, Any],
    spec: dict[str, Any],
    kind: str,
    is_mcp_server: bool,
    skip: Callable[[str], bool],
) -> None:
    """Atrium's own rules beyond Backstage's (see sources.catalog.differences)."""
    for where, value in (
        ("metadata.title", metadata.get("title")),
        ("spec.type", spec.get("type")),
        ("spec.lifecycle", spec.get("lifecycle")),
    ):
        if isinstance(value, str) and len(value) > INDEXED_TEXT_MAX:
            raise EntityValidationError(
                where, f"is longer than {INDEXED_TEXT_MAX} characters", INDEXED_TEXT.key
            )
    definition = spec.get("definition")
    if is_mcp_server and not isinstance(definition, str | None) and not skip("spec.definition"):
        raise EntityValidationError(
            "spec.definition",
            f"expected a string, got {schema.kind_of(definition)}",
            MCP_DEFINITION_TEXT.key,
        )
    if "dependencyOf" in _SPEC_REFS[kind] and not skip("spec.dependencyOf"):
        value = spec.get("dependencyOf")
        if value is not None and not isinstance(value, list):
            raise EntityValidationError(
                "spec.dependencyOf",
                f"expected a list of refs, got {schema.kind_of(value)}",
                DEPENDENCY_OF_LIST.key,
            )
        for index, item in enumerate(value or []):
            if item is not None and not isinstance(item, str):
                raise EntityValidationError(
                    f"spec.dependencyOf[{index}]",
                    f"expected a ref, got {schema.kind_of(item)}",
                    DEPENDENCY_OF_LIST.key,
                )


def _target(item: Any, rule: _RefField, namespace: str, where: str) -> str:
    try:
        target = make_ref(
            *split_ref(item or "", default_kind=rule.default_kind, default_namespace=namespace)
        )
    except InvalidRef as exc:
        raise EntityValidationError(where, str(exc)) from None
    if len(target) > INDEXED_TEXT_MAX:
        raise EntityValidationError(
            where, f"is longer than {INDEXED_TEXT_MAX} characters", INDEXED_TEXT.key
        )
    return target


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _link(link: dict[str, Any]) -> dict[str, str]:
    return {k: v for k in ("url", "title", "icon", "type") if isinstance(v := link.get(k), str)}
