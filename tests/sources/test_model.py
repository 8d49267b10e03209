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
        (lambda d: d.update(kind="Widget"), "kind", "no processor recognizes the entity"),
        (lambda d: d.update(kind="component"), "kind", "kinds are case-sensitive: Component"),
        (lambda d: d["metadata"].update(name="bad name!"), "metadata.name", "is not valid"),
        (lambda d: d["metadata"].update(name="x" * 64), "metadata.name", "at most 63"),
        (lambda d: d["metadata"].pop("name"), "metadata.name", "is required"),
        (lambda d: d["metadata"].update(namespace="Payments"), "metadata.namespace", "[a-z0-9]"),
        (lambda d: d["metadata"].update(title=""), "metadata.title", "must not be empty"),
        (lambda d: d["metadata"].update(title=None), "metadata.title", "expected a string"),
        (lambda d: d["metadata"].update(tags=None), "metadata.tags", "expected a list"),
        (lambda d: d["spec"].pop("owner"), "spec.owner", "is required"),
        (lambda d: d["spec"].pop("lifecycle"), "spec.lifecycle", "is required"),
        (lambda d: d["spec"].update(owner=42), "spec.owner", "expected a string, got a number"),
        (lambda d: d["spec"].update(system=None), "spec.system", "expected a string"),
        (lambda d: d["spec"].update(dependsOn="x"), "spec.dependsOn", "expected a list"),
        (
            lambda d: d["spec"].update(dependsOn=["component:ok", "orders-db"]),
            "spec.dependsOn[1]",
            'Entity reference "orders-db" had missing or empty kind',
        ),
        (lambda d: d["spec"].update(owner="group:"), "spec.owner", "was not on the form"),
        (lambda d: d.update(status={}), "status", "Unknown field"),
        (lambda d: d.update(extra=1), "extra", "Unknown field"),
        (lambda d: d["metadata"].update(tags=["Has Space"]), "metadata.tags[0]", "is not valid"),
        (lambda d: d["metadata"].update(labels={"a": 1}), "metadata.labels.a", "expected a string"),
        (lambda d: d["metadata"].update(labels={"a": "b c"}), "metadata.labels.a", "is not valid"),
        (
            lambda d: d["metadata"].update(annotations={"a/b/c": "x"}),
            "metadata.annotations.a/b/c",
            "a valid prefix and/or suffix",
        ),
        (
            lambda d: d["metadata"].update(links=[{"title": "x"}]),
            "metadata.links[0].url",
            "is required",
        ),
        (
            lambda d: d["metadata"].update(links=[{"url": "/runbook"}]),
            "metadata.links[0].url",
            'a valid url but found "/runbook"',
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
    assert caught.value.difference is None


def test_refs_in_a_spec_are_split_not_judged_as_names() -> None:
    entity = validate_entity(component(owner="artists@example.com", system="team:x"))
    assert entity.owner_ref == "group:default/artists@example.com"
    assert entity.system_ref == "team:default/x"


def test_groups_and_users_get_their_lists_filled_in() -> None:
    group = validate_entity(
        {
            "apiVersion": "backstage.io/v1alpha1",
            "kind": "Group",
            "metadata": {"name": "team-a"},
            "spec": {"type": "team"},
        }
    )
    assert group.document["spec"] == {"type": "team", "children": []}
    user = validate_entity(
        {
            "apiVersion": "backstage.io/v1alpha1",
            "kind": "User",
            "metadata": {"name": "ann"},
            "spec": {},
        }
    )
    assert user.spec == {"memberOf": []}


@pytest.mark.parametrize(
    ("mutate", "field", "difference"),
    [
        (
            lambda d: d["spec"].update(dependencyOf="component:x"),
            "spec.dependencyOf",
            "dependency-of-list",
        ),
        (
            lambda d: d["spec"].update(dependencyOf=[{"kind": "component", "name": "x"}]),
            "spec.dependencyOf[0]",
            "dependency-of-list",
        ),
        (lambda d: d["metadata"].update(title="t" * 501), "metadata.title", "indexed-text"),
        (lambda d: d["spec"].update(owner="o" * 500), "spec.owner", "indexed-text"),
        (lambda d: d["metadata"].update(description="a\ud800b"), "(document)", "unstorable-text"),
    ],
)
def test_where_atrium_is_stricter_it_says_which_difference(
    mutate: Any, field: str, difference: str
) -> None:
    doc = component()
    mutate(doc)
    with pytest.raises(EntityValidationError) as caught:
        validate_entity(doc)
    assert (caught.value.field, caught.value.difference) == (field, difference)


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
        {"type": "mcp-server", "remotes": [REMOTE], "definition": ""},
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
        ({"type": "soap", "definition": ""}, "spec.definition", "must not be empty"),
        ({"type": "graphql", "definition": {"a": 1}}, "spec.definition", "expected a string"),
        ({"type": "mcp-server"}, "spec.remotes", "is required"),
        # No model layer of Backstage's describes these by remotes: a definition, as any API.
        ({"type": "ai-model-server", "remotes": [REMOTE]}, "spec.definition", "is required"),
        ({"type": "mcp-server", "remotes": []}, "spec.remotes", "must not be empty"),
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
    with pytest.raises(EntityValidationError, match="expected a string, got nothing"):
        validate_entity(api(type="openapi", definition=None))
