from __future__ import annotations

from typing import Any

import pytest

from sources.catalog.model import Relation, validate_entity
from sources.errors import EntityValidationError


def component(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "backstage.io/v1alpha1",
        "kind": "Component",
        "metadata": {"name": "checkout", "tags": ["go", "tier-1"]},
        "spec": {"type": "service", "lifecycle": "production", "owner": "team-a", **spec},
    }


def test_relations_are_derived_both_ways_with_backstage_defaults() -> None:
    entity = validate_entity(
        component(
            system="shop",
            providesApis=["checkout-api"],
            consumesApis=["payments/pay-api"],
            dependsOn=["resource:orders-db"],
        )
    )
    assert entity.ref == "component:default/checkout"
    assert entity.owner_ref == "group:default/team-a"
    assert entity.system_ref == "system:default/shop"
    me = entity.ref
    assert set(entity.relations) == {
        Relation(me, "ownedBy", "group:default/team-a"),
        Relation("group:default/team-a", "ownerOf", me),
        Relation(me, "partOf", "system:default/shop"),
        Relation("system:default/shop", "hasPart", me),
        Relation(me, "providesApi", "api:default/checkout-api"),
        Relation("api:default/checkout-api", "apiProvidedBy", me),
        Relation(me, "consumesApi", "api:payments/pay-api"),
        Relation("api:payments/pay-api", "apiConsumedBy", me),
        Relation(me, "dependsOn", "resource:default/orders-db"),
        Relation("resource:default/orders-db", "dependencyOf", me),
    }


def test_spec_refs_default_to_the_entity_namespace() -> None:
    doc = component()
    doc["metadata"]["namespace"] = "payments"
    assert validate_entity(doc).owner_ref == "group:payments/team-a"


def test_group_and_user_relations() -> None:
    group = validate_entity(
        {
            "apiVersion": "backstage.io/v1alpha1",
            "kind": "Group",
            "metadata": {"name": "team-a"},
            "spec": {"type": "team", "parent": "eng", "children": ["team-a1"], "members": ["ann"]},
        }
    )
    assert {(r.type, r.target_ref) for r in group.relations if r.source_ref == group.ref} == {
        ("childOf", "group:default/eng"),
        ("parentOf", "group:default/team-a1"),
        ("hasMember", "user:default/ann"),
    }


def test_the_hash_changes_with_the_document_only() -> None:
    assert validate_entity(component()).hash == validate_entity(component()).hash
    assert validate_entity(component()).hash != validate_entity(component(system="x")).hash


@pytest.mark.parametrize(
    ("mutate", "field", "message"),
    [
        (lambda d: d.update(apiVersion="v1"), "apiVersion", "is not one of"),
        (lambda d: d.update(kind="Widget"), "kind", "unknown kind"),
        (lambda d: d["metadata"].update(name="bad name!"), "metadata.name", "must consist of"),
        (lambda d: d["metadata"].update(name="x" * 64), "metadata.name", "longer than 63"),
        (lambda d: d["metadata"].pop("name"), "metadata.name", "is required"),
        (lambda d: d["spec"].pop("owner"), "spec.owner", "is required"),
        (lambda d: d["spec"].pop("lifecycle"), "spec.lifecycle", "is required"),
        (lambda d: d["spec"].update(owner=42), "spec.owner", "expected a reference"),
        (lambda d: d["spec"].update(dependsOn="x"), "spec.dependsOn", "expected a list"),
        (
            lambda d: d["spec"].update(dependsOn=["ok", "widget:x"]),
            "spec.dependsOn[1]",
            "unknown kind",
        ),
        (lambda d: d["metadata"].update(tags=["Has Space"]), "metadata.tags[0]", "lowercase"),
        (lambda d: d["metadata"].update(labels={"a": 1}), "metadata.labels.a", "must be strings"),
        (
            lambda d: d["metadata"].update(links=[{"title": "x"}]),
            "metadata.links[0].url",
            "required",
        ),
        (lambda d: d.update(spec=[1]), "spec", "expected a mapping"),
    ],
)
def test_invalid_documents_name_the_field(mutate: Any, field: str, message: str) -> None:
    doc = component()
    mutate(doc)
    with pytest.raises(EntityValidationError) as caught:
        validate_entity(doc)
    assert caught.value.field == field
    assert message in caught.value.message


def test_a_document_that_is_not_a_mapping() -> None:
    with pytest.raises(EntityValidationError, match="expected a mapping"):
        validate_entity(["not", "an", "entity"])


def test_nul_characters_are_refused() -> None:
    doc = component()
    doc["metadata"]["description"] = "a\x00b"
    with pytest.raises(EntityValidationError, match="NUL"):
        validate_entity(doc)


def api(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "backstage.io/v1alpha1",
        "kind": "API",
        "metadata": {"name": "tools"},
        "spec": {"lifecycle": "experimental", "owner": "team-a", **spec},
    }


REMOTE = {"type": "streamable-http", "url": "http://localhost:7007/api/mcp/v1"}


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "openapi", "definition": "openapi: 3.0.0"},
        {"type": "soap", "definition": "<wsdl/>"},  # any type Backstage has no layer for
        {"type": "mcp-server", "remotes": [REMOTE]},
        {"type": "mcp-server", "remotes": [REMOTE], "definition": "tools: []"},
        {"type": "ai-model-server", "remotes": [{"type": "https", "url": "https://m.example/v1"}]},
    ],
)
def test_apis_as_backstage_describes_each_type(spec: dict[str, Any]) -> None:
    entity = validate_entity(api(**spec))
    assert entity.spec_type == spec["type"] and entity.owner_ref == "group:default/team-a"


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ({"type": "openapi"}, "spec.definition", "is required"),
        ({"type": "openapi", "remotes": [REMOTE]}, "spec.definition", "is required"),
        ({"type": "soap", "definition": ""}, "spec.definition", "is required"),
        ({"type": "graphql", "definition": {"a": 1}}, "spec.definition", "expected a string"),
        ({"type": "mcp-server"}, "spec.remotes", "is required for an API of this type"),
        ({"type": "ai-model-server"}, "spec.remotes", "is required for an API of this type"),
        ({"type": "mcp-server", "remotes": []}, "spec.remotes", "at least one {type, url}"),
        ({"type": "mcp-server", "remotes": REMOTE}, "spec.remotes", "expected a list"),
        ({"type": "mcp-server", "remotes": ["http://x"]}, "spec.remotes[0]", "expected a mapping"),
        (
            {"type": "mcp-server", "remotes": [{"url": "http://x"}]},
            "spec.remotes[0].type",
            "required",
        ),
        (
            {"type": "mcp-server", "remotes": [REMOTE, {"type": "sse"}]},
            "spec.remotes[1].url",
            "required",
        ),
        (
            {"type": "mcp-server", "remotes": [{"type": "sse", "url": 7}]},
            "spec.remotes[0].url",
            "expected a string",
        ),
    ],
)
def test_what_each_api_type_requires(spec: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(EntityValidationError) as caught:
        validate_entity(api(**spec))
    assert caught.value.field == field
    assert message in caught.value.message


def test_a_field_whose_placeholder_failed_is_not_held_against_the_document() -> None:
    unavailable = {"spec.definition": "$text './x.yaml': no such file"}
    entity = validate_entity(api(type="openapi", definition=None), unavailable)
    assert entity.unavailable == unavailable
    assert entity.hash != validate_entity(api(type="openapi", definition="x")).hash
    with pytest.raises(EntityValidationError, match="is required"):
        validate_entity(api(type="openapi", definition=None))
