"""Strings PostgreSQL cannot store are refused at the front door, and the attempt is kept."""

from __future__ import annotations

from tests.conftest import Client

GQL = "application/graphql-response+json"


async def test_a_nul_in_an_argument_is_bad_input_before_any_sql(demo_client: Client) -> None:
    db = demo_client.services.db
    before = db.queries
    response = await demo_client.post(
        "/graphql", json={"query": '{ entities(search: "check\\u0000out") { totalCount } }'}
    )
    assert response.status_code == 400 and response.headers["content-type"] == GQL
    [error] = response.json()["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "argument search of entities" in error["message"] and "NUL" in error["message"]
    assert "data" not in response.json()
    assert db.queries == before, "nothing reached PostgreSQL"


async def test_a_nul_in_a_variable_names_the_variable(demo_client: Client) -> None:
    response = await demo_client.post(
        "/graphql",
        json={
            "query": "query($f: EntityFilter) { entities(filter: $f) { totalCount } }",
            "variables": {"f": {"tag": ["go", "x\u0000"]}},
        },
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["message"].startswith("variable $f holds a NUL")


async def test_a_refused_mutation_is_audited_with_its_arguments_spelled_out(
    demo_client: Client,
) -> None:
    response = await demo_client.post(
        "/graphql",
        json={
            "query": "mutation($r: String!) { deleteEntity(ref: $r) { ref } }",
            "variables": {"r": "component:default/check\u0000out"},
        },
        headers={"X-Forwarded-User": "amelia.chen"},
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    row = await demo_client.services.db.fetchrow(
        "select actor, action, target_ref, outcome, arguments, message from audit_log"
    )
    assert row["actor"] == "user:default/amelia.chen"
    assert row["action"] == "catalog.deleteEntity"
    assert row["outcome"] == "failed"
    assert row["target_ref"] == "component:default/check\\u0000out"
    assert row["arguments"] == {"ref": "component:default/check\\u0000out"}
    assert "variable $r holds a NUL" in row["message"]
    # Nothing was deleted.
    still = await demo_client.gql('{ entity(ref: "component:checkout") { ref } }')
    assert still["data"]["entity"]["ref"] == "component:default/checkout"


async def test_a_raw_nul_in_the_document_is_refused_before_it_is_stored(
    demo_client: Client,
) -> None:
    from sources.persisted import document_hash

    query = "{ entities(first: 1) { totalCount } } # a comment with \u0000"
    response = await demo_client.post(
        "/graphql",
        json={
            "query": query,
            "extensions": {"persistedQuery": {"version": 1, "sha256Hash": document_hash(query)}},
        },
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    stored = await demo_client.services.db.fetchval("select count(*) from persisted_queries")
    assert stored == 0


async def test_an_id_that_is_not_a_global_id_is_bad_input(demo_client: Client) -> None:
    body = await demo_client.gql('{ node(id: "garbage") { id } }', expect_errors=True)
    assert body["data"] == {"node": None}
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
