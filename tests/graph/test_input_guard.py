"""Client input ends in a typed client error, never a server error: strings PostgreSQL cannot
store are refused at the front door (and the attempt is kept), and what decodes or parses a
client's text (cursors, global IDs, YAML, tokens) says what is wrong with it."""

from __future__ import annotations

import base64

import orjson
import pytest

from tests.conftest import AppFactory, Client

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


async def test_a_subscription_holding_a_nul_or_a_lone_surrogate_is_refused_alike(
    make_client: AppFactory,
) -> None:
    from plugins.deployments import plugin as deployments

    client = await make_client(plugins=[deployments])
    document = "subscription($c: String!) { componentDeploys(component: $c) { id } }"
    async with client.websocket() as ws:
        literal = 'subscription { componentDeploys(component: "check\\u0000out") { id } }'
        await ws.subscribe("literal", literal)
        await ws.subscribe("variable", document, {"c": "check\ud800out"})
        answers = await ws.settle(["literal", "variable"])
    for name, why in (
        ("literal", "argument component of componentDeploys holds a NUL"),
        ("variable", "variable $c holds a lone surrogate"),
    ):
        first, ended = answers[name]
        [error] = first["payload"]["errors"]
        assert error["extensions"]["code"] == "BAD_USER_INPUT", error
        assert error["message"].startswith(why), error
        assert ended["type"] == "complete"


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


async def test_a_denied_mutation_holding_a_nul_is_audited_spelled_out(demo_client: Client) -> None:
    """Nobody may delete anything; asked with a NUL, the attempt is still kept, and readable."""
    response = await demo_client.post(
        "/graphql",
        json={
            "query": 'mutation { deleteEntity(ref: "component:default/check\\u0000out") { ref } }'
        },
    )
    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["message"].startswith("argument ref of deleteEntity holds a NUL character")
    row = await demo_client.services.db.fetchrow(
        "select actor, action, outcome, arguments from audit_log"
    )
    assert (row["actor"], row["action"], row["outcome"]) == (
        "anonymous",
        "catalog.deleteEntity",
        "failed",
    )
    assert row["arguments"] == {"ref": "component:default/check\\u0000out"}


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode()


@pytest.mark.parametrize(
    ("field", "cursor"),
    [
        ("entities", _b64(orjson.dumps(["check\x00out", "component:default/checkout"]))),
        ("entities", _b64(orjson.dumps(["a", "component:default/\x00"]))),
        ('entitiesOwnedBy(ref: "group:checkout-team", ', _b64(orjson.dumps(["a\x00", "b"]))),
        ('entities(search: "checkout", ', _b64(str(2**63 - 1).encode())),
        ('entities(search: "checkout", ', _b64(orjson.dumps(-1))),
        ("entities", _b64(b'["a", "\\ud800"]')),
        ("entities", "not base64 at all \u00e9"),
    ],
)
async def test_a_cursor_this_api_never_issued_is_bad_input_naming_after(
    demo_client: Client, field: str, cursor: str
) -> None:
    call = f"{field}(" if not field.endswith(", ") else field
    body = await demo_client.gql(
        f"query($a: String) {{ x: {call}first: 5, after: $a) {{ totalCount }} }}",
        {"a": cursor},
        expect_errors=True,
    )
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
    assert (
        error["message"].startswith("after: ")
        and "not a cursor this API issued" in error["message"]
    )


@pytest.mark.parametrize("raw", [b"Query:x", b"Nope:x", b":", b"PageInfo:x"])
async def test_a_global_id_naming_no_node_type_is_bad_input(
    demo_client: Client, raw: bytes
) -> None:
    body = await demo_client.gql(
        "query($id: ID!) { node(id: $id) { id } }",
        {"id": base64.b64encode(raw).decode()},
        expect_errors=True,
    )
    assert body["data"] == {"node": None}
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
    assert "GlobalID requires" in error["message"]


APPLY = "mutation($y: String!) { applyEntities(yaml: $y) { created errors { document message } } }"
ENTITY = "apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata: {{name: {name}}}\nspec: {{type: service, lifecycle: production, owner: checkout-team, extra: {extra}}}\n"


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ('"a\\0b"', "invalid YAML (line 9, column 75): a string that holds a NUL character"),
        # libyaml refuses the escape itself (the pure-Python reader took it, then Atrium did).
        ('"\\ud800"', "invalid YAML (line 9, column 78): found invalid Unicode character escape"),
        ("123456789012345678901234567890", "an integer beyond 64 bits cannot be stored"),
        ("{1: a, ? [b]: c}", "a key must be a string, not a list or mapping"),
        ("!!binary aGVsbG8=", "the tag !!binary has no JSON form"),
        ("[" * 3_000, "values are nested more than 64 deep"),
    ],
)
async def test_yaml_no_json_can_hold_is_a_document_error_naming_the_line(
    demo_client: Client, extra: str, expected: str
) -> None:
    """Reported as YAML that stopped parsing, at its document and line; the documents before
    it are stored, and the attempt is audited."""
    text = (
        ENTITY.format(name="first", extra=1) + "---\n" + ENTITY.format(name="second", extra=extra)
    )
    body = await demo_client.gql(APPLY, {"y": text}, token=await demo_client.admin_token())
    result = body["data"]["applyEntities"]
    assert result["created"] == ["component:default/first"]
    [error] = result["errors"]
    assert error["document"] == 2 and expected in error["message"], error
    outcome = await demo_client.services.db.fetchval(
        "select outcome from audit_log where action = 'catalog.applyEntities'"
    )
    assert outcome == "allowed"


async def test_a_token_with_a_nul_is_unauthenticated(demo_client: Client) -> None:
    request = demo_client.build_request("POST", "/graphql", json={"query": "{ viewer { ref } }"})
    request.headers["authorization"] = "Bearer atr_0a\x00b_secret"
    response = await demo_client.send(request)
    assert response.status_code == 401, response.text
    assert response.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_variables_nested_as_deep_as_json_allows_are_checked(demo_client: Client) -> None:
    """The guard walks variables without recursion: a thousand levels are no server error,
    and a NUL at the bottom is still found."""
    query = "query($l: JSON) { entities(filter: {labels: $l}) { totalCount } }"
    for leaf, status, code in (("1", 200, "BAD_USER_INPUT"), ('"\\u0000"', 400, "BAD_USER_INPUT")):
        body = (
            f'{{"query": "{query.replace(chr(34), chr(92) + chr(34))}", "variables": {{"l": '
            + "[" * 1000
            + leaf
            + "]" * 1000
            + "}}"
        )
        response = await demo_client.post(
            "/graphql", content=body.encode(), headers={"content-type": "application/json"}
        )
        assert response.status_code == status, response.text
        [error] = response.json()["errors"]
        assert error["extensions"]["code"] == code
        if status == 400:
            assert error["message"].startswith("variable $l holds a NUL character")


async def test_a_persisted_query_with_variables_too_deep_to_key_is_bad_input(
    demo_client: Client,
) -> None:
    """An answer is kept under its variables written as JSON, which stops at 254 levels."""
    from sources.persisted import document_hash

    query = "query($l: JSON) { entities(filter: {labels: $l}) { totalCount } }"
    persisted = {"persistedQuery": {"version": 1, "sha256Hash": document_hash(query)}}
    for depth, status in ((200, 200), (300, 400)):
        body = (
            orjson.dumps({"query": query, "extensions": persisted})[:-1]
            + b', "variables": {"l": '
            + b"[" * depth
            + b"1"
            + b"]" * depth
            + b"}}"
        )
        response = await demo_client.post(
            "/graphql", content=body, headers={"content-type": "application/json"}
        )
        assert response.status_code == status, response.text
        [error] = response.json()["errors"]
        assert error["extensions"]["code"] == "BAD_USER_INPUT", error
        if status == 400:
            assert error["message"] == "variables are nested too deep to be keyed"
