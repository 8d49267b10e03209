"""The query cost limit: list arguments multiply, pages are capped, variables count."""

from __future__ import annotations

from typing import Any

import pytest
from graphql import FragmentDefinitionNode, OperationDefinitionNode, parse

from graph.assembly import assemble, core_plugins
from graph.limits import query_cost
from graph.settings import Settings
from tests.conftest import AppFactory

SCHEMA = assemble(Settings(), core_plugins()).schema._schema  # type: ignore[union-attr]
PAGE = "query($n: Int!) { entities(first: $n) { edges { node { ref } } } }"
NESTED = """{ entities(first: 100) { edges { node { ... on Component {
    dependencies { ... on Component { dependencies { ref } } } } } } } }"""


def cost(query: str, variables: dict[str, Any] | None = None) -> int:
    document = parse(query)
    operation = next(d for d in document.definitions if isinstance(d, OperationDefinitionNode))
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    return query_cost(SCHEMA, operation, fragments, variables, max_page=100, assumed_list_size=10)


@pytest.mark.parametrize(
    ("query", "variables", "expected"),
    [
        ('{ entity(ref: "a:b") { ref title } }', None, 3),
        # A page of 10: each of its items costs edges + node + ref.
        ("{ entities(first: 10) { edges { node { ref } } } }", None, 40),
        (PAGE, {"n": 5}, 20),
        (PAGE, {"n": 100}, 400),
        # Pages are capped at the largest the API serves.
        (PAGE, {"n": 100_000}, 400),
        # A size that is not a number yet counts as the largest page.
        (PAGE, {}, 400),
        # The argument's default when it is not given (first: 20).
        ("{ entities { edges { node { ref } } } }", None, 80),
        # Lists without a size argument count as ten items each, and multiply.
        (NESTED, None, 100 * (1 + 1 + 1 + 10 * (1 + 10 * 2))),
        # Fragments are costed where they are spread.
        (
            "{ ...F } fragment F on Query { entities(first: 2) { edges { node { ref } } } }",
            None,
            8,
        ),
    ],
)
def test_cost(query: str, variables: dict[str, Any] | None, expected: int) -> None:
    assert cost(query, variables) == expected


async def test_a_costly_query_is_refused_before_it_runs(make_client: AppFactory) -> None:
    client = await make_client(max_cost=100)
    queries = client.services.db.queries
    response = await client.post("/graphql", json={"query": PAGE, "variables": {"n": 100}})
    assert response.status_code == 400
    error = response.json()["errors"][0]
    assert error["extensions"] == {
        "code": "COST_ESTIMATED_TOO_EXPENSIVE",
        "cost": 400,
        "maxCost": 100,
    }
    assert "data" not in response.json()
    assert client.services.db.queries == queries, "nothing ran"
    # The same document with a smaller page is fine.
    ok = await client.gql(PAGE, {"n": 5})
    assert ok["data"]["entities"]["edges"] == []


async def test_the_default_limit_refuses_deep_nesting_of_lists(make_client: AppFactory) -> None:
    client = await make_client()
    deeper = NESTED.replace(
        "dependencies { ref }", "dependencies { ... on Component { dependents { ref } } }"
    )
    response = await client.post("/graphql", json={"query": deeper})
    assert response.json()["errors"][0]["extensions"]["code"] == "COST_ESTIMATED_TOO_EXPENSIVE"
    assert "errors" not in (await client.post("/graphql", json={"query": NESTED})).json()
