"""Cache hints with Apollo's semantics, and the HTTP caching of GET answers."""

from __future__ import annotations

import pytest
import strawberry
from graphql import parse

from graph.assembly import assemble, core_plugins
from graph.cache_control import CacheControl, CacheHints, CacheScope, static_policy
from graph.settings import Settings
from tests.conftest import AppFactory, Client


@strawberry.type(directives=[CacheControl(max_age=30)])
class Slow:
    name: str
    price: int = strawberry.field(directives=[CacheControl(max_age=5)])
    secret: str = strawberry.field(directives=[CacheControl(scope=CacheScope.PRIVATE)])


@strawberry.type
class Unhinted:
    name: str


@strawberry.type(directives=[CacheControl(inherit_max_age=True)])
class Wrapper:
    slow: Slow
    unhinted: Unhinted


@strawberry.interface
class Thing:
    name: str


@strawberry.type(directives=[CacheControl(max_age=100)])
class Big(Thing):
    size: int


@strawberry.type(directives=[CacheControl(max_age=20)])
class Small(Thing):
    size: int


@strawberry.type
class Query:
    @strawberry.field(directives=[CacheControl(max_age=50)])
    def slow(self) -> Slow:
        return Slow(name="s", price=1, secret="x")

    @strawberry.field
    def plain(self) -> Slow:
        return Slow(name="s", price=1, secret="x")

    @strawberry.field
    def count(self) -> int:
        return 1

    @strawberry.field(directives=[CacheControl(max_age=10)])
    def wrapper(self) -> Wrapper:
        raise NotImplementedError

    @strawberry.field
    def things(self) -> list[Thing]:
        return []

    @strawberry.field(directives=[CacheControl(max_age=1000)])
    def unhinted(self) -> Unhinted:
        return Unhinted(name="u")


@strawberry.type
class Mutation:
    @strawberry.mutation
    def touch(self) -> int:
        return 1


HINTS = CacheHints(strawberry.Schema(Query, Mutation, types=[Big, Small])._schema)


def policy(query: str, operation: str | None = None) -> tuple[int, bool] | None:
    found = static_policy(HINTS, parse(query), operation)
    return None if found is None else (found.seconds, found.private)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # A field hint wins over its type's; the type's applies where the field has none.
        ("{ slow { name } }", (50, False)),
        ("{ plain { name } }", (30, False)),
        # A leaf with a hint counts; one without takes its parent's.
        ("{ slow { name price } }", (5, False)),
        ("{ slow { secret } }", (50, True)),
        # A root field without a hint, even a scalar one, is 0.
        ("{ count slow { name } }", (0, False)),
        # An object type without a hint is 0 below a hinted field...
        ("{ wrapper { unhinted { name } } }", (0, False)),
        # ...and a type that inherits takes its parent's.
        ("{ wrapper { slow { name } } }", (10, False)),
        # An interface without a hint: the strictest of its implementations.
        ("{ things { name } }", (20, False)),
        # A field hint on a field of an unhinted type.
        ("{ unhinted { name } }", (1000, False)),
        # Fragments are followed; __typename counts for nothing.
        ("{ ...F } fragment F on Query { slow { ... on Slow { price } __typename } }", (5, False)),
        ("{ __typename }", (0, False)),
        ("{ __schema { types { name } } slow { name } }", (0, False)),
    ],
)
def test_apollo_semantics(query: str, expected: tuple[int, bool]) -> None:
    assert policy(query) == expected


def test_mutations_and_unknown_operations_have_no_policy() -> None:
    assert policy("mutation { touch }") is None
    assert policy("query A { count } query B { slow { name } }", "B") == (50, False)
    assert policy("query A { count } query B { slow { name } }", "C") is None


def test_the_catalog_is_hinted_and_the_viewer_is_private() -> None:
    assembly = assemble(Settings(), core_plugins())
    hints = assembly.policies.hints
    assert hints is not None
    page = """{ entity(ref: "component:a") { name ... on Component { owner { name }
        system { name } dependencies { ref } } relations(types: ["ownedBy"]) { target { ref } } } }"""
    for query in (
        page,
        "{ entities(first: 5) { edges { node { name } } pageInfo { hasNextPage } } }",
    ):
        found = static_policy(hints, parse(query), None)
        assert found is not None and found.seconds == 60 and not found.private
    viewer = static_policy(hints, parse("{ viewer { ref groups { name } } }"), None)
    assert viewer is not None and viewer.private
    runs = static_policy(hints, parse("{ ldapSyncRuns { id } }"), None)
    assert runs is not None and runs.seconds == 0


PAGE = """query Page($ref: String!) {
  entity(ref: $ref) { ref title ... on Component { owner { ref } dependencies { ref } } }
}"""


async def test_get_answers_carry_cache_control_and_an_etag(demo_client: Client) -> None:
    variables = {"ref": "component:checkout"}
    response = await demo_client.persisted_get(PAGE, variables)
    assert response.status_code == 200
    headers = response.headers
    assert headers["cache-control"] == "max-age=60, public"
    etag = headers["etag"]
    assert etag.startswith('"') and len(etag) == 34
    # Whatever names the viewer: a browser must not show one person's answer to the next
    # (in development the demo user's cookie names them too).
    assert headers["vary"] == "Accept, Authorization, X-Forwarded-User, Cookie"

    again = await demo_client.persisted_get(PAGE, variables, {"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == etag
    assert again.headers["cache-control"] == "max-age=60, public"
    other = await demo_client.persisted_get(
        PAGE, variables, {"If-None-Match": '"other", W/' + etag}
    )
    assert other.status_code == 304
    stale = await demo_client.persisted_get(PAGE, variables, {"If-None-Match": '"stale"'})
    assert stale.status_code == 200 and stale.json()["data"]["entity"]["ref"] == (
        "component:default/checkout"
    )


async def test_get_answers_that_must_not_be_kept(demo_client: Client) -> None:
    runs = await demo_client.persisted_get("{ ldapSyncRuns { id } }")
    assert runs.headers["cache-control"] == "no-store"
    assert "etag" not in runs.headers
    # An answer with errors is never kept, whatever its hints.
    broken = await demo_client.persisted_get('{ entity(ref: "no-kind") { ref } }')
    assert broken.json()["errors"]
    assert broken.headers["cache-control"] == "no-store"
    assert "etag" not in broken.headers
    viewer = await demo_client.persisted_get(
        "{ viewer { ref } }", headers={"X-Forwarded-User": "ada"}
    )
    assert viewer.headers["cache-control"] == "max-age=60, private"
    # POST answers carry no caching headers (only GETs are cacheable over HTTP).
    posted = await demo_client.post(
        "/graphql", json={"query": PAGE, "variables": {"ref": "component:checkout"}}
    )
    assert "cache-control" not in posted.headers and "etag" not in posted.headers


async def test_without_anonymous_reading_answers_are_private_to_http_caches(
    make_client: AppFactory,
) -> None:
    client = await make_client(anonymous_read=False)
    response = await client.persisted_get(
        '{ entity(ref: "component:x") { ref } }', headers={"X-Forwarded-User": "ada"}
    )
    assert response.headers["cache-control"] == "max-age=60, private"


def test_production_answers_do_not_vary_with_cookies() -> None:
    from graph.http_output import vary_header
    from graph.settings import Settings

    production = Settings(mode="production", user_header="X-Auth-User")
    assert vary_header(production) == (b"vary", b"Accept, Authorization, X-Auth-User")
