"""Generated and hostile operations against the whole live schema never make a server error.

The app is assembled as deployed (catalog, ownership, PinCompute watching two emulated
clusters) with the demo organisation, and asked over HTTP as three callers: nobody, a member
of the team owning checkout (through the trusted proxy's header), and an admin token.

- Property-based: hypothesis-graphql generates queries and mutations for every root field
  with arguments drawn from the schema (all of Unicode included), with a fixed seed so CI sees
  the same operations every time.
- A sweep: every argument of every root field given each hostile value in turn (NUL, SQL and
  LIKE metacharacters, path climbing, 100,000 characters, boundary integers...).

Every answer must be below 500, every error must carry ``extensions.code`` and none may be
``INTERNAL_SERVER_ERROR``; afterwards the server still answers ``/readyz`` and the catalog
has changed only where an allowed mutation said it would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from graphql import (
    GraphQLArgument,
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    get_named_type,
    get_nullable_type,
    is_leaf_type,
    print_schema,
)
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis_graphql import mutations, nodes, queries

from plugins.pincompute import PinComputePlugin
from plugins.pincompute.settings import ComputeSettings
from sources.catalog.documents import read_paths
from sources.catalog.store import apply_batch
from tests.conftest import EXAMPLES, AppFactory, Client
from tests.kube import kubeconfig, start_clusters
from tests.plugins.test_pincompute import eventually, pinapp

MEMBER = "amelia.chen"  # of checkout-team, which owns component:default/checkout
EXAMPLES_PER_FIELD = 12  # some 300 operations per caller

HOSTILE_STRINGS = [
    "\x00",
    "component:default/check\x00out",
    "",
    " ",
    "%",
    "_",
    "\\",
    "%_\\%",
    "'; drop table entities; --",
    '" or 1=1 --',
    "../../../../etc/passwd",
    "component:../../x",
    "${jndi:ldap://127.0.0.1/a}",
    "{{7*7}}",
    "<script>alert(1)</script>",
    "\r\nX-Injected: 1",
    "\u202eevil",
    "\ufeff",
    "\U0001f600" * 50,
    "\U0001d518\U0001d52b\U0001d526",  # letters outside the Basic Multilingual Plane
    "a" * 100_000,
    "component:default/" + "a" * 300,
    "atr_x_y",
    "Y3Vyc29y",  # base64 of "cursor"
    "RW50aXR5OmNvbXBvbmVudDpkZWZhdWx0L2NoZWNrb3V0",  # a well-formed global id
]
HOSTILE_INTS = [-(2**31), -1, 0, 1, 2**31 - 1]


@dataclass
class Caller:
    name: str
    headers: dict[str, str]


@dataclass
class Env:
    client: Client
    schema: GraphQLSchema
    callers: dict[str, Caller] = field(default_factory=dict)


@pytest.fixture
async def env(make_client: AppFactory, tmp_path: Path) -> AsyncIterator[Env]:
    async with start_clusters("east", "west") as (east, west):
        await east.put("pinapps", "shop", pinapp("checkout", "component:default/checkout"))
        await west.put("pinapps", "shop", pinapp("search", "component:default/search"))
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig(east, west)))
        compute = ComputeSettings(
            kubeconfig=str(path), compute_watch_timeout=2, compute_request_timeout=1.0
        )
        client: Client = await make_client(plugins=[PinComputePlugin(compute)])
        assert not (await apply_batch(client.services.db, read_paths([EXAMPLES]))).errors

        async def synced() -> bool:
            body = await client.gql("{ clusters { synced } }")
            return all(c["synced"] for c in body["data"]["clusters"])

        await eventually(synced)
        found = Env(client, client.services.assembly.schema._schema)
        found.callers = {
            "anonymous": Caller("anonymous", {}),
            "member": Caller("member", {"X-Forwarded-User": MEMBER}),
            "admin": Caller("admin", {"Authorization": f"Bearer {await client.admin_token()}"}),
        }
        yield found


async def send(env: Env, caller: Caller, query: str, variables: Any = None) -> None:
    """One operation; the answer must be a typed success or a typed client error."""
    response = await env.client.post(
        "/graphql", json={"query": query, "variables": variables}, headers=caller.headers
    )
    context = f"{caller.name}: {query[:400]!r} {str(variables)[:200]!r}"
    assert response.status_code < 500, f"{response.status_code} for {context}: {response.text}"
    body = orjson.loads(response.content)
    for error in body.get("errors", ()):
        code = (error.get("extensions") or {}).get("code")
        assert code, f"an error without a code for {context}: {error}"
        assert code != "INTERNAL_SERVER_ERROR", f"{context}: {error}"


async def catalog(env: Env) -> dict[str, str]:
    rows = await env.client.services.db.fetch("select ref, hash from entities")
    return {row["ref"]: row["hash"] for row in rows}


async def changes_allowed(env: Env) -> set[str] | None:
    """What allowed mutations may have changed: their targets (None: an allowed import,
    which may change anything it names)."""
    rows = await env.client.services.db.fetch(
        "select action, target_ref from audit_log where outcome = 'allowed'"
    )
    if any(row["action"] == "catalog.applyEntities" for row in rows):
        return None
    return {row["target_ref"] for row in rows if row["target_ref"]}


async def assert_intact(env: Env, before: dict[str, str]) -> None:
    ready = await env.client.get("/readyz")
    assert ready.status_code == 200, ready.text
    after = await catalog(env)
    changed = {ref for ref in before.keys() | after.keys() if before.get(ref) != after.get(ref)}
    allowed = await changes_allowed(env)
    if allowed is not None:
        assert changed <= allowed, f"changed without an allowed mutation: {changed - allowed}"
    else:
        assert len(after) >= len(before) - len(changed)


@pytest.mark.parametrize("who", ["anonymous", "member", "admin"])
async def test_generated_operations(env: Env, who: str) -> None:
    caller = env.callers[who]
    before = await catalog(env)
    operations = generated(env.schema)
    assert env.schema.mutation_type is not None
    root_fields = len(env.schema.query_type.fields) + len(env.schema.mutation_type.fields)
    assert len(operations) == EXAMPLES_PER_FIELD * root_fields > 200
    for operation in operations:
        await send(env, caller, operation)
    await assert_intact(env, before)


_GENERATED: dict[str, list[str]] = {}


def generated(schema: GraphQLSchema) -> list[str]:
    """EXAMPLES_PER_FIELD operations for every root query and mutation field, drawn by
    hypothesis-graphql, the same ones on every run (derandomized), generated once per schema.
    They are collected first and sent after: the app lives on the event loop the test runs on,
    which hypothesis's synchronous runner would block."""
    sdl = print_schema(schema)
    if sdl not in _GENERATED:
        found: list[str] = []
        for strategy, root in ((queries, schema.query_type), (mutations, schema.mutation_type)):
            assert root is not None
            for name in sorted(root.fields):

                @settings(
                    max_examples=EXAMPLES_PER_FIELD,
                    derandomize=True,
                    database=None,
                    deadline=None,
                    phases=[Phase.generate],
                    suppress_health_check=list(HealthCheck),
                )
                @given(operation=strategy(sdl, fields=[name], custom_scalars=_custom_scalars()))
                def collect(operation: str) -> None:
                    found.append(operation)

                collect()
        _GENERATED[sdl] = found
    return _GENERATED[sdl]


def _custom_scalars() -> dict[str, st.SearchStrategy[Any]]:
    return {
        "DateTime": st.datetimes().map(lambda d: d.isoformat()).map(nodes.String),
        "JSON": st.text(max_size=20).map(nodes.String),
    }


@pytest.mark.parametrize("who", ["anonymous", "admin"])
async def test_every_argument_with_hostile_values(env: Env, who: str) -> None:
    caller = env.callers[who]
    before = await catalog(env)
    sent = 0
    for root in (env.schema.query_type, env.schema.mutation_type):
        assert root is not None
        for name, definition in root.fields.items():
            for argument_name, argument in definition.args.items():
                for value in _hostile_values(argument.type):
                    query, variables = _operation(root, name, definition, argument_name, value)
                    await send(env, caller, query, variables)
                    sent += 1
    assert sent > 300
    await assert_intact(env, before)


async def test_json_that_cannot_carry_a_lone_surrogate_is_a_400(env: Env) -> None:
    response = await env.client.post(
        "/graphql",
        content=b'{"query": "{ entity(ref: \\"\\ud800\\") { ref } }"}',
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["extensions"]["code"] == "BAD_REQUEST"


def _hostile_values(kind: GraphQLInputType) -> Iterator[Any]:
    named = get_named_type(kind)
    if isinstance(named, GraphQLScalarType) and named.name in ("String", "ID", "JSON"):
        values: list[Any] = HOSTILE_STRINGS
    elif isinstance(named, GraphQLScalarType) and named.name == "Int":
        values = HOSTILE_INTS
    else:
        return
    for value in values:
        yield [value] if isinstance(get_nullable_type(kind), GraphQLList) else value


def _operation(
    root: GraphQLObjectType, name: str, definition: GraphQLField, hostile: str, value: Any
) -> tuple[str, dict[str, Any]]:
    """``name`` with the hostile value in ``hostile`` and plain values in the other required
    arguments, all passed as variables."""
    declarations, arguments, variables = [], [], {}
    for argument_name, argument in definition.args.items():
        if argument_name == hostile:
            given_value = value
        elif isinstance(argument.type, GraphQLNonNull) and argument.default_value is None:
            given_value = _plain(argument)
        else:
            continue
        declarations.append(f"${argument_name}: {argument.type}")
        arguments.append(f"{argument_name}: ${argument_name}")
        variables[argument_name] = given_value
    selection = "" if is_leaf_type(get_named_type(definition.type)) else " { __typename }"
    kind = "mutation" if root.name == "Mutation" else "query"
    head = f"({', '.join(declarations)})" if declarations else ""
    call = f"({', '.join(arguments)})" if arguments else ""
    return f"{kind} Sweep{head} {{ {name}{call}{selection} }}", variables


def _plain(argument: GraphQLArgument) -> Any:
    named = get_named_type(argument.type)
    value: Any
    if isinstance(named, GraphQLEnumType):
        value = next(iter(named.values))
    elif isinstance(named, GraphQLInputObjectType):
        value = {}
    elif named.name == "Int":
        value = 1
    elif named.name == "Boolean":
        value = False
    elif named.name == "Float":
        value = 1.0
    else:
        value = "component:default/checkout"
    return [value] if isinstance(get_nullable_type(argument.type), GraphQLList) else value


HOSTILE_HEADERS: list[dict[str, bytes]] = [
    {"authorization": b"Bearer"},
    {"authorization": b"Bearer "},
    {"authorization": b"Basic YWRtaW46YWRtaW4="},
    {"authorization": b"Bearer atr_\xff\xfe_secret"},
    {"authorization": b"Bearer atr_" + b"a" * 40 + b"_x"},
    {"authorization": b"Bearer " + b"x" * 10_000},
    {"authorization": b"bearer atr_000000000000_nope"},
    {"x-forwarded-user": b"../../admin"},
    {"x-forwarded-user": b"\xff\xfe\xfd"},
    {"x-forwarded-user": b"%00"},
    {"x-forwarded-user": b"a" * 5000},
    {"accept": b"application/json;q=abc, */*;q=0"},
    {"accept": b";;;,,,"},
    {"accept": b"text/html;q=0, application/graphql-response+json;q=0.0001"},
    {"content-type": b"application/json; charset=\xff"},
    {"if-none-match": b'W/"", *, "' + b"x" * 1000},
    {"accept": b"*/*" * 2000},
]


async def test_hostile_headers_get_typed_answers(env: Env) -> None:
    for headers in HOSTILE_HEADERS:
        await _with_headers(env, headers)


async def _with_headers(env: Env, headers: dict[str, bytes]) -> None:
    query = '{ entity(ref: "component:checkout") { ref } }'
    for method in ("GET", "POST"):
        request = env.client.build_request(
            method,
            "/graphql",
            params={"query": query} if method == "GET" else None,
            json={"query": query} if method == "POST" else None,
            headers={"content-type": "application/json"},
        )
        for name, value in headers.items():
            request.headers[name] = value.decode("latin-1")
        response = await env.client.send(request)
        assert response.status_code < 500, f"{headers}: {response.text}"
        if response.status_code != 304:
            body = orjson.loads(response.content)
            for error in body.get("errors", ()):
                assert error["extensions"]["code"] not in (None, "INTERNAL_SERVER_ERROR")
