"""The catalog through GraphQL, on the demo organisation."""

from __future__ import annotations

import base64

import pytest

from tests.conftest import Client

# Also run through PgBouncer in transaction pooling mode (tests/conftest.py).
pytestmark = pytest.mark.pgbouncer


PAGE = """
query Page($ref: String!) {
  entity(ref: $ref) {
    id ref kind name title tags labels annotations links { url title }
    ... on Component {
      type lifecycle ownerRef
      owner { ref ... on Group { profile { displayName email } } }
      system { ref domain { ref } }
      dependencies { ref kind }
      dependents { ref }
      providesApis { ref consumers { ref } providers { ref } }
      consumesApis { ref }
    }
  }
}
"""


async def test_a_component_page_has_real_relations(demo_client: Client) -> None:
    entity = (await demo_client.gql(PAGE, {"ref": "Component:Checkout"}))["data"]["entity"]
    assert entity["ref"] == "component:default/checkout"
    assert entity["kind"] == "Component"
    assert entity["owner"]["ref"] == entity["ownerRef"] == "group:default/checkout-team"
    assert entity["owner"]["profile"]["displayName"]
    assert entity["system"] == {
        "ref": "system:default/checkout",
        "domain": {"ref": "domain:default/commerce"},
    }
    dependencies = {d["ref"] for d in entity["dependencies"]}
    assert "resource:default/checkout-cache" in dependencies
    assert {d["kind"] for d in entity["dependencies"]} == {"Component", "Resource"}
    [api] = entity["providesApis"]
    assert {"ref": "component:default/checkout"} in api["providers"]
    assert len(entity["consumesApis"]) == 7


async def test_relations_are_navigable_both_ways(demo_client: Client) -> None:
    query = """{ entity(ref: "group:checkout-team") { ... on Group {
        owns { ref } members { ref memberOf { ref } } parent { ref children { ref } } } } }"""
    group = (await demo_client.gql(query))["data"]["entity"]
    assert "component:default/checkout" in {o["ref"] for o in group["owns"]}
    assert group["members"], "the team has members"
    for member in group["members"]:
        assert "group:default/checkout-team" in {g["ref"] for g in member["memberOf"]}
    assert "group:default/checkout-team" in {c["ref"] for c in group["parent"]["children"]}


async def test_node_resolves_global_ids(demo_client: Client) -> None:
    entity = (await demo_client.gql(PAGE, {"ref": "component:checkout"}))["data"]["entity"]
    found = await demo_client.gql(
        "query($id: ID!) { node(id: $id) { id ... on Component { ref } } }", {"id": entity["id"]}
    )
    assert found["data"]["node"] == {"id": entity["id"], "ref": "component:default/checkout"}
    assert base64.b64decode(entity["id"]).decode() == "Component:component:default/checkout"


async def test_filtered_list_with_cursors_walks_every_page(demo_client: Client) -> None:
    query = """query($after: String) { entities(filter: {kind: ["component"], owner: ["checkout-team"]}, first: 2, after: $after) {
        totalCount edges { cursor node { ref ... on Component { ownerRef } } } pageInfo { hasNextPage endCursor } } }"""
    seen: list[str] = []
    after = None
    while True:
        page = (await demo_client.gql(query, {"after": after}))["data"]["entities"]
        seen += [e["node"]["ref"] for e in page["edges"]]
        assert all(e["node"]["ownerRef"] == "group:default/checkout-team" for e in page["edges"])
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert len(seen) == page["totalCount"] == len(set(seen)) > 2
    assert seen == sorted(seen, key=lambda r: (r.split("/")[1], r))


async def test_filters_combine(demo_client: Client) -> None:
    query = """{ entities(filter: {kind: ["API"], type: ["grpc"], system: ["payments"]}, first: 50) {
        totalCount nodes { ... on API { type system { ref } } } } }"""
    result = (await demo_client.gql(query))["data"]["entities"]
    assert result["totalCount"] == len(result["nodes"]) > 0
    assert all(
        n["type"] == "grpc" and n["system"]["ref"] == "system:default/payments"
        for n in result["nodes"]
    )


async def test_tag_and_label_filters(demo_client: Client) -> None:
    tagged = (
        await demo_client.gql('{ entities(filter: {tag: ["pci"]}, first: 100) { nodes { tags } } }')
    )["data"]
    assert tagged["entities"]["nodes"] and all(
        "pci" in n["tags"] for n in tagged["entities"]["nodes"]
    )
    labelled = await demo_client.gql(
        "query($l: JSON) { entities(filter: {labels: $l}, first: 100) { totalCount nodes { labels } } }",
        {"l": {"tier": "1"}},
    )
    nodes = labelled["data"]["entities"]["nodes"]
    assert nodes and all(n["labels"]["tier"] == "1" for n in nodes)


async def test_descending_order(demo_client: Client) -> None:
    query = '{ entities(filter: {kind: ["domain"]}, orderBy: NAME_DESC) { nodes { name } } }'
    names = [n["name"] for n in (await demo_client.gql(query))["data"]["entities"]["nodes"]]
    assert names == sorted(names, reverse=True) and len(names) == 4


@pytest.mark.parametrize("text", ["checkout", "Checkout", "chekout", "checkuot service"])
async def test_search_finds_the_service_despite_typos(demo_client: Client, text: str) -> None:
    query = "query($q: String) { entities(search: $q, first: 5) { totalCount nodes { ref } } }"
    result = (await demo_client.gql(query, {"q": text}))["data"]["entities"]
    assert "component:default/checkout" in [n["ref"] for n in result["nodes"]], result


async def test_search_ranks_the_exact_name_first(demo_client: Client) -> None:
    query = '{ entities(search: "checkout", first: 5) { nodes { name } } }'
    names = [n["name"] for n in (await demo_client.gql(query))["data"]["entities"]["nodes"]]
    # The checkout system and component come before checkout-sdk, checkout-team and the rest.
    assert names[:2] == ["checkout", "checkout"] and "checkout" not in names[2:]


async def test_search_pages_by_relevance(demo_client: Client) -> None:
    query = 'query($after: String) { entities(search: "service", first: 3, after: $after) { totalCount nodes { ref } pageInfo { hasNextPage endCursor } } }'
    first = (await demo_client.gql(query))["data"]["entities"]
    second = (await demo_client.gql(query, {"after": first["pageInfo"]["endCursor"]}))["data"][
        "entities"
    ]
    assert first["totalCount"] > 6
    assert not {n["ref"] for n in first["nodes"]} & {n["ref"] for n in second["nodes"]}


@pytest.mark.parametrize(
    "hostile",
    [
        "'; drop table entities; --",
        "a & | ! :* ( <-> )",
        "\\x00",
        "%_%",
        "💥" * 100,
        "x" * 10_000,
        "",
    ],
)
async def test_hostile_search_and_filter_strings_are_harmless(
    demo_client: Client, hostile: str
) -> None:
    query = """query($q: String, $t: [String!]) {
        entities(search: $q, filter: {tag: $t, type: $t}) { totalCount nodes { ref } }
        facets(field: TAG, search: $q) { value } }"""
    body = await demo_client.gql(query, {"q": hostile, "t": [hostile]})
    assert body["data"]["entities"]["totalCount"] == 0
    assert await demo_client.services.db.fetchval("select count(*) from entities") > 150


async def test_nul_characters_are_a_clear_error(demo_client: Client) -> None:
    body = await demo_client.gql(
        "query($t: [String!]) { entities(filter: {tag: $t}) { totalCount } }",
        {"t": ["a\x00b"]},
        expect_errors=True,
    )
    assert "NUL" in body["errors"][0]["message"]
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_bad_arguments_are_clear_errors(demo_client: Client) -> None:
    cases = {
        "{ entities(first: 1000) { totalCount } }": "first must be between 0 and 100",
        '{ entities(after: "garbage!") { totalCount } }': "cursor",
        "{ entities(orderBy: RELEVANCE) { totalCount } }": "needs a search",
        '{ entities(filter: {kind: ["widget"]}) { totalCount } }': "unknown kind",
        '{ entities(filter: {owner: ["group:"]}) { totalCount } }': "was not on the form",
        "{ entities(filter: {labels: [1]}) { totalCount } }": "labels must be an object",
    }
    for query, message in cases.items():
        body = await demo_client.gql(query, expect_errors=True)
        [error] = body["errors"]
        assert message in error["message"], (query, error)
        assert error["extensions"]["code"] == "BAD_USER_INPUT"


async def test_facets_count_values(demo_client: Client) -> None:
    body = await demo_client.gql("""{
        kinds: facets(field: KIND) { value count }
        owners: facets(field: OWNER, filter: {kind: ["component"]}, first: 3) { value count }
        tags: facets(field: TAG, search: "payments") { value count } }""")
    kinds = {f["value"]: f["count"] for f in body["data"]["kinds"]}
    assert kinds["Component"] == 60 and kinds["User"] == 60 and sum(kinds.values()) == 190
    owners = body["data"]["owners"]
    assert len(owners) == 3 and owners[0]["count"] >= owners[1]["count"] >= owners[2]["count"]
    total = await demo_client.gql(
        'query($o: [String!]) { entities(filter: {kind: ["component"], owner: $o}) { totalCount } }',
        {"o": [owners[0]["value"]]},
    )
    assert total["data"]["entities"]["totalCount"] == owners[0]["count"]
    assert body["data"]["tags"]


async def test_apply_entities_reports_errors_and_imports_the_rest(client: Client) -> None:
    yaml = """
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: svc}
spec: {type: service, lifecycle: production, owner: team-z}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: broken}
spec: {type: service, owner: team-z}
"""
    mutation = """mutation($y: String!) { applyEntities(yaml: $y, location: "repo/catalog-info.yaml") {
        created updated unchanged deleted errors { location document field message } } }"""
    token = await client.admin_token()
    result = (await client.gql(mutation, {"y": yaml}, token=token))["data"]["applyEntities"]
    assert result["created"] == ["component:default/svc"]
    assert result["errors"] == [
        {
            "location": "repo/catalog-info.yaml",
            "document": 2,
            "field": "spec.lifecycle",
            "message": "is required",
        }
    ]
    again = (await client.gql(mutation, {"y": yaml}, token=token))["data"]["applyEntities"]
    assert again["created"] == [] and again["unchanged"] == 1
    # The owner group arrives later: the relation resolves then.
    owner = '{ entity(ref: "component:svc") { ... on Component { ownerRef owner { ref } } } }'
    assert (await client.gql(owner))["data"]["entity"] == {
        "ownerRef": "group:default/team-z",
        "owner": None,
    }
    await client.gql(
        mutation.replace("repo/catalog-info.yaml", "org.yaml"),
        {
            "y": "apiVersion: backstage.io/v1alpha1\nkind: Group\nmetadata: {name: team-z}\nspec: {type: team}\n"
        },
        token=token,
    )
    assert (await client.gql(owner))["data"]["entity"]["owner"] == {"ref": "group:default/team-z"}


async def test_broken_yaml_through_the_api_is_an_error_not_a_crash(client: Client) -> None:
    mutation = (
        "mutation($y: String!) { applyEntities(yaml: $y) { created errors { document message } } }"
    )
    token = await client.admin_token()
    body = await client.gql(mutation, {"y": "kind: [unclosed\n\tfoo: 'x"}, token=token)
    result = body["data"]["applyEntities"]
    assert result["created"] == []
    assert "invalid YAML" in result["errors"][0]["message"]


async def test_a_ref_backstage_keeps_is_stored_and_answers(client: Client) -> None:
    """As in Backstage, a ref in a spec is split, not judged as a name: the owner below is a
    group no entity can be, kept as the component's owner ref and found by a filter on it."""
    mutation = "mutation($y: String!) { applyEntities(yaml: $y) { created errors { message } } }"
    yaml = (
        "apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata: {name: songs}\n"
        "spec: {type: service, lifecycle: production, owner: artists@example.com}\n"
    )
    token = await client.admin_token()
    result = (await client.gql(mutation, {"y": yaml}, token=token))["data"]["applyEntities"]
    assert result == {"created": ["component:default/songs"], "errors": []}
    body = await client.gql("""{
        songs: entity(ref: "component:songs") { ... on Component { ownerRef owner { ref } } }
        group: entity(ref: "group:default/Artists@Example.com") { ref }
        owned: entities(filter: {owner: ["artists@example.com"]}) { nodes { ref } }
    }""")
    assert body["data"] == {
        "songs": {"ownerRef": "group:default/artists@example.com", "owner": None},
        "group": None,
        "owned": {"nodes": [{"ref": "component:default/songs"}]},
    }
