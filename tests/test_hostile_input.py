"""Generated and hostile operations against the whole live schema never make a server error.

The app is assembled as deployed (catalog, ownership, every installed plugin: PinCompute
watching two emulated clusters, observability reading a real Alertmanager and Prometheus) with
the demo organisation, and asked over HTTP (subscriptions over an in-process websocket) as
three callers: nobody, a member of the team owning checkout (through the trusted proxy's
header), and an admin token.

- Property-based: hypothesis-graphql generates queries and mutations for every root field,
  arguments drawn from the schema, its scalars mixed with hostile values and the demo's own
  names (``tests/hostile_values.py``), sometimes as literals and sometimes as variables,
  derandomized so CI sees the same operations every time. Hypothesis runs in a thread and
  hands each operation to the app's event loop, so a failure is shrunk to a small example.
- A sweep: every argument of every root field (subscriptions included) given each hostile
  value in turn, the other required arguments a valid silence length (and for subscriptions a
  real workload, pod and component) so that the value reaches Alertmanager or the cluster
  behind. A caller's subscriptions are all sent at once (a hundred a websocket), each given
  until its connection goes quiet: one still waiting (for events) is a clean answer.
- The test kit's ``check_hostile_inputs`` over each installed plugin's own fields, those it
  adds to other types and its subscriptions included (Atrium's bundled plugins, and any other
  package's).

Every answer must be below 500, every error must carry ``extensions.code`` and none may be
``INTERNAL_SERVER_ERROR``; no websocket may be closed by the server; every mutation that ran or
was refused as unstorable is in the audit log; afterwards the server still answers ``/readyz``
and the catalog changed only where the caller could change it and an allowed mutation said it
would.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from graphql import (
    ArgumentNode,
    DocumentNode,
    FieldNode,
    GraphQLField,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    NameNode,
    OperationDefinitionNode,
    OperationType,
    StringValueNode,
    VariableDefinitionNode,
    VariableNode,
    get_named_type,
    is_leaf_type,
    parse_type,
    print_ast,
    print_schema,
    value_from_ast_untyped,
)
from graphql.pyutils import Undefined
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis_graphql import mutations, queries

from atrium.testing import check_hostile_inputs, installed_plugin_ids, select_plugins
from atrium.testing.hostile import hostile_values, subscription_failures
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from tests.alertmanager import alertmanager
from tests.conftest import AppFactory, Client, demo_batch
from tests.hostile_values import (
    BY_ARGUMENT,
    HOSTILE_STRINGS,
    MEMBER,
    TARGETS,
    plain_value,
    scalar_strategies,
)
from tests.kube import kubeconfig, start_clusters
from tests.plugins.test_pincompute import eventually, pinapp
from tests.prometheus import openmetrics, prometheus

EXAMPLES_PER_FIELD = 20  # some 400 operations per caller
GUARD_REFUSAL = "it cannot be stored, so it is refused"  # graph/input_guard.py's wording
# Seconds without a message after which a caller's subscriptions that have not answered are
# taken to be waiting for events.
SUBSCRIPTIONS_QUIET = 0.5


@dataclass
class Caller:
    name: str
    headers: dict[str, str]


@dataclass
class Env:
    client: Client
    schema: GraphQLSchema
    callers: dict[str, Caller] = field(default_factory=dict)
    sent: int = 0


@dataclass(frozen=True)
class Backends:
    alertmanager: str
    prometheus: str


@pytest.fixture(scope="module")
def backends(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backends]:
    """A real Alertmanager (checkout's alert firing) and Prometheus (an hour of checkout's
    requests and its pods' CPU) for the module's apps; what the sweep silences stays there."""
    root = tmp_path_factory.mktemp("observability")
    now = int(time.time()) - 60
    hour = range(now - 3600, now, 60)
    history = openmetrics(
        {
            'http_requests_total{service="checkout",code="200"}': [
                (t, t - now + 4000) for t in hour
            ],
            'http_requests_total{service="checkout",code="500"}': [(t, 1) for t in hour],
            'container_cpu_usage_seconds_total{namespace="shop",pod="checkout-6b7f9-x2x",container="app"}': [
                (t, (t - now + 3600) / 10) for t in hour
            ],
        }
    )
    with alertmanager(root / "alertmanager") as am, prometheus(root, history) as prom:
        am.fire({"labels": {"alertname": "HighErrorRate", "service": "checkout"}})
        yield Backends(am.url, prom.url)


@pytest.fixture
async def env(
    make_client: AppFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    backends: Backends,
) -> AsyncIterator[Env]:
    async with start_clusters("east", "west") as (east, west):
        await east.put("pinapps", "shop", pinapp("checkout", "component:default/checkout"))
        await west.put("pinapps", "shop", pinapp("search", "component:default/search"))
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig(east, west)))
        # Every installed plugin, each reading its settings as `atrium serve` does.
        monkeypatch.setenv("ATRIUM_KUBECONFIG", str(path))
        monkeypatch.setenv("ATRIUM_COMPUTE_WATCH_TIMEOUT", "2")
        monkeypatch.setenv("ATRIUM_COMPUTE_REQUEST_TIMEOUT", "1.0")
        monkeypatch.setenv("ATRIUM_ALERTMANAGER_URL", backends.alertmanager)
        monkeypatch.setenv("ATRIUM_PROMETHEUS_URL", backends.prometheus)
        client: Client = await make_client(plugins=select_plugins(None))
        assert not (await apply_batch(client.services.db, demo_batch())).errors

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


async def send(env: Env, caller: Caller, query: str, variables: Any = None) -> dict[str, Any]:
    """One operation; the answer must be a typed success or a typed client error. The body is
    JSON as a browser's JSON.stringify writes it: a lone surrogate travels as ``\\ud800``."""
    env.sent += 1
    response = await env.client.post(
        "/graphql",
        content=json.dumps({"query": query, "variables": variables}),
        headers={**caller.headers, "content-type": "application/json"},
    )
    context = f"{caller.name}: {query[:400]!r} {str(variables)[:300]!r}"
    assert response.status_code < 500, f"{response.status_code} for {context}: {response.text}"
    body: dict[str, Any] = orjson.loads(response.content)
    for error in body.get("errors", ()):
        code = (error.get("extensions") or {}).get("code")
        assert code, f"an error without a code for {context}: {error}"
        assert code != "INTERNAL_SERVER_ERROR", f"{context}: {error}"
    return body


async def audit_rows(env: Env) -> int:
    return int(await env.client.services.db.fetchval("select count(*) from audit_log"))


async def exchange(env: Env, caller: Caller, document: DocumentNode, variables: Any) -> None:
    """Send a generated operation; a mutation that ran, or that the guard refused, must have
    left its attempt in the audit log."""
    [operation] = document.definitions
    assert isinstance(operation, OperationDefinitionNode)
    is_mutation = operation.operation is OperationType.MUTATION
    before = await audit_rows(env) if is_mutation else 0
    body = await send(env, caller, print_ast(document), variables)
    if not is_mutation:
        return
    added = await audit_rows(env) - before
    fields = [s for s in operation.selection_set.selections if isinstance(s, FieldNode)]
    if any(GUARD_REFUSAL in error["message"] for error in body.get("errors", ())):
        assert added == len(fields), f"a refused mutation left {added} audit rows: {body}"
    elif "data" in body:
        assert added >= 1, f"a mutation that ran left no audit row: {body}"


def with_variables(schema: GraphQLSchema, document: DocumentNode) -> tuple[DocumentNode, Any]:
    """The root fields' literal arguments moved into variables, as clients usually send them."""
    [operation] = document.definitions
    assert isinstance(operation, OperationDefinitionNode)
    root = schema.get_root_type(operation.operation)
    assert root is not None
    definitions, variables, selections = [], {}, []
    for index, selection in enumerate(operation.selection_set.selections):
        if not isinstance(selection, FieldNode) or not selection.arguments:
            selections.append(selection)
            continue
        arguments = []
        for argument in selection.arguments:
            name = f"{argument.name.value}{index}"
            kind = root.fields[selection.name.value].args[argument.name.value].type
            variables[name] = value_from_ast_untyped(argument.value)
            variable = VariableNode(name=NameNode(value=name))
            definitions.append(
                VariableDefinitionNode(variable=variable, type=parse_type(str(kind)))
            )
            arguments.append(ArgumentNode(name=argument.name, value=variable))
        selections.append(replace(selection, arguments=tuple(arguments)))
    operation = replace(
        operation,
        variable_definitions=tuple(definitions),
        selection_set=replace(operation.selection_set, selections=tuple(selections)),
    )
    return DocumentNode(definitions=(operation,)), variables


def aimed(document: DocumentNode, values: dict[str, str]) -> DocumentNode:
    """The root fields' arguments named in ``values`` given those values instead."""
    if not values:
        return document
    [operation] = document.definitions
    assert isinstance(operation, OperationDefinitionNode)
    selections = [
        replace(
            s,
            arguments=tuple(
                replace(a, value=StringValueNode(value=values[a.name.value]))
                if a.name.value in values
                else a
                for a in s.arguments
            ),
        )
        if isinstance(s, FieldNode)
        else s
        for s in operation.selection_set.selections
    ]
    selection_set = replace(operation.selection_set, selections=tuple(selections))
    return DocumentNode(definitions=(replace(operation, selection_set=selection_set),))


def operations(schema: GraphQLSchema, root: GraphQLObjectType, name: str) -> Any:
    """(document, variables) for one root field: arguments as generated, some aimed at one
    real workload or entity (TARGETS, so that mutations sometimes find what they change) and
    some given what their parser or decoder stands behind (BY_ARGUMENT), sent as literals or
    as variables."""
    make = mutations if root is schema.mutation_type else queries
    documents = make(
        schema, fields=[name], custom_scalars=scalar_strategies(), print_ast=lambda d: d
    )
    arguments = root.fields[name].args
    targets = st.just({}) | st.sampled_from(TARGETS)
    special = st.fixed_dictionaries(
        {},
        optional={
            argument: st.sampled_from(values)
            for argument, values in BY_ARGUMENT.items()
            if argument in arguments
        },
    )

    def sent_as(
        drawn: tuple[DocumentNode, dict[str, str], dict[str, str], bool],
    ) -> tuple[DocumentNode, Any]:
        document, target, hostile, as_variables = drawn
        document = aimed(document, {**target, **hostile})
        return with_variables(schema, document) if as_variables else (document, None)

    return st.tuples(documents, targets, special, st.booleans()).map(sent_as)


# Each root field's strategy, by the schema's SDL: the three callers' tests each start an app
# of their own, whose schema is another object with the same types; made and validated once,
# instead of by each test. The operations drawn are the same (derandomized by the test).
_STRATEGIES: dict[tuple[str, str, str], Any] = {}
# And what each field's derandomized run drew, in order, once every one of them was answered:
# the next caller is sent the same operations again without drawing them again (~25 ms each).
# A field whose replay fails is run by Hypothesis again, which shrinks a failure it meets again.
_DRAWN: dict[tuple[str, str, str], list[tuple[DocumentNode, Any]]] = {}


def _operations(schema: GraphQLSchema, sdl: str, root: GraphQLObjectType, name: str) -> Any:
    key = (sdl, root.name, name)
    if key not in _STRATEGIES:
        _STRATEGIES[key] = operations(schema, root, name)
    return _STRATEGIES[key]


def generate(schema: GraphQLSchema, each: Callable[[DocumentNode, Any], None]) -> None:
    """EXAMPLES_PER_FIELD operations for every root query and mutation field, the same ones
    on every run; runs in a thread, ``each`` sending them to the app's loop."""
    sdl = print_schema(schema)
    for root in (schema.query_type, schema.mutation_type):
        assert root is not None
        for name in sorted(root.fields):
            _send_field(schema, sdl, root, name, each)


def _send_field(
    schema: GraphQLSchema,
    sdl: str,
    root: GraphQLObjectType,
    name: str,
    each: Callable[[DocumentNode, Any], None],
) -> None:
    """One root field's operations, drawn (or drawn before, for this schema) and sent."""
    key = (sdl, root.name, name)
    replayed: Exception | None = None
    if key in _DRAWN:
        try:
            for operation in _DRAWN[key]:
                each(*operation)
            return
        except Exception as failed:  # drawn again below, and shrunk if it fails again
            replayed = failed
    drawn: list[tuple[DocumentNode, Any]] = []

    @settings(
        max_examples=EXAMPLES_PER_FIELD,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
            HealthCheck.filter_too_much,
        ],
    )
    @given(operation=_operations(schema, sdl, root, name))
    def check(operation: tuple[DocumentNode, Any]) -> None:
        drawn.append(operation)
        each(*operation)

    check()
    if replayed is not None:  # it failed once: the test says so, even if not again
        raise replayed
    _DRAWN[key] = drawn


@pytest.mark.parametrize("who", ["anonymous", "member", "admin"])
async def test_generated_operations(env: Env, who: str) -> None:
    caller = env.callers[who]
    before = await catalog(env)
    changeable = await changeable_by(env, who)
    loop = asyncio.get_running_loop()

    def each(document: DocumentNode, variables: Any) -> None:
        asyncio.run_coroutine_threadsafe(exchange(env, caller, document, variables), loop).result()

    await asyncio.to_thread(generate, env.schema, each)
    assert env.schema.mutation_type is not None
    root_fields = len(env.schema.query_type.fields) + len(env.schema.mutation_type.fields)
    assert env.sent >= EXAMPLES_PER_FIELD * root_fields > 250
    await assert_intact(env, before, changeable)


async def catalog(env: Env) -> dict[str, str]:
    rows = await env.client.services.db.fetch("select ref, hash from entities")
    return {row["ref"]: row["hash"] for row in rows}


async def changeable_by(env: Env, who: str) -> set[str] | None:
    """What the caller may change: nothing for nobody; for the member, what they own through
    their teams; for an admin, anything (None)."""
    if who == "admin":
        return None
    if who == "anonymous":
        return set()
    found: set[str] = set()
    after = None
    while True:
        body = await env.client.gql(
            "query($ref: String!, $after: String) { entitiesOwnedBy(ref: $ref, first: 100, "
            "after: $after) { edges { node { ref } } pageInfo { hasNextPage endCursor } } }",
            {"ref": f"user:default/{MEMBER}", "after": after},
        )
        page = body["data"]["entitiesOwnedBy"]
        found |= {edge["node"]["ref"] for edge in page["edges"]}
        if not page["pageInfo"]["hasNextPage"]:
            return found
        after = page["pageInfo"]["endCursor"]


async def allowed_changes(env: Env) -> set[str]:
    """What allowed mutations named: their targets, and the entities of imported YAML."""
    rows = await env.client.services.db.fetch(
        "select action, target_ref, arguments from audit_log where outcome = 'allowed'"
    )
    named: set[str] = set()
    for row in rows:
        if row["action"] == "catalog.applyEntities":
            arguments = row["arguments"]
            batch = parse_documents(arguments["yaml"], arguments.get("location", "api"))
            named |= {entity.ref for _, entity in batch.entities}
        elif row["target_ref"]:
            named.add(row["target_ref"])
    return named


async def assert_intact(env: Env, before: dict[str, str], changeable: set[str] | None) -> None:
    ready = await env.client.get("/readyz")
    assert ready.status_code == 200, ready.text
    after = await catalog(env)
    changed = {ref for ref in before.keys() | after.keys() if before.get(ref) != after.get(ref)}
    if changeable is not None:
        assert changed <= changeable, f"changed what the caller may not: {changed - changeable}"
    allowed = await allowed_changes(env)
    assert changed <= allowed, f"changed without an allowed mutation: {changed - allowed}"


# The other required arguments of a swept field, by name: a silence length Alertmanager is
# asked for, so that createSilence's hostile values go on to it; for subscriptions also a real
# workload, pod and component, so that theirs go on to the cluster and the deploy feed.
SWEEP_VALUES: dict[str, Any] = {"durationSeconds": 3600}
SUBSCRIPTION_VALUES: dict[str, Any] = {
    **SWEEP_VALUES,
    "cluster": "east",
    "namespace": "shop",
    "name": "checkout",
    "pod": "checkout-abc",
    "component": "component:default/checkout",
}


@pytest.mark.parametrize("who", ["anonymous", "member", "admin"])
async def test_every_argument_with_hostile_values(env: Env, who: str) -> None:
    caller = env.callers[who]
    before = await catalog(env)
    failures: list[str] = []  # all of them, not only the first: a regression shows its extent
    for root in (env.schema.query_type, env.schema.mutation_type):
        assert root is not None
        for _, query, variables in _sweep(root, SWEEP_VALUES):
            try:
                await send(env, caller, query, variables)
            except AssertionError as exc:
                failures.append(str(exc).splitlines()[0][:500])
    assert env.schema.subscription_type is not None
    subscriptions = [
        (f"{caller.name}: {name} {str(variables)[:200]!r}", query, variables)
        for name, query, variables in _sweep(env.schema.subscription_type, SUBSCRIPTION_VALUES)
    ]
    failures += await subscription_failures(
        env.client, subscriptions, caller.headers, quiet=SUBSCRIPTIONS_QUIET
    )
    env.sent += len(subscriptions)
    assert not failures, "\n".join(failures)
    assert env.sent > 1000
    assert len(subscriptions) >= 9 * len(HOSTILE_STRINGS)
    await assert_intact(env, before, await changeable_by(env, who))


def _sweep(
    root: GraphQLObjectType, values: dict[str, Any]
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(field, document, variables): every argument of every field of ``root`` given each
    hostile value of its type, the other required arguments ``values`` by name."""
    for name, definition in root.fields.items():
        for argument_name, argument in definition.args.items():
            for value in hostile_values(argument.type):
                yield name, *_operation(root, name, definition, argument_name, value, values)


def _operation(
    root: GraphQLObjectType,
    name: str,
    definition: GraphQLField,
    hostile: str,
    value: Any,
    values: dict[str, Any],
) -> tuple[str, dict[str, Any]]:
    """``name`` with the hostile value in ``hostile`` and plain values (``values``, else
    ``plain_value``) in the other required arguments, all passed as variables."""
    declarations, arguments, variables = [], [], {}
    for argument_name, argument in definition.args.items():
        if argument_name == hostile:
            given_value = value
        elif isinstance(argument.type, GraphQLNonNull) and argument.default_value is Undefined:
            given_value = values.get(argument_name, plain_value(argument))
        else:
            continue
        declarations.append(f"${argument_name}: {argument.type}")
        arguments.append(f"{argument_name}: ${argument_name}")
        variables[argument_name] = given_value
    selection = "" if is_leaf_type(get_named_type(definition.type)) else " { __typename }"
    kind = root.name.lower()  # query, mutation or subscription
    head = f"({', '.join(declarations)})" if declarations else ""
    call = f"({', '.join(arguments)})" if arguments else ""
    return f"{kind} Sweep{head} {{ {name}{call}{selection} }}", variables


async def test_json_escapes_of_lone_surrogates_get_typed_answers(env: Env) -> None:
    for body in (
        b'{"query": "query($a: String!) { entity(ref: $a) { ref } }", "variables": {"a": "\\ud800"}}',
        b'{"query": "{ entity(ref: \\"\\ud800\\") { ref } }"}',
        b'{"query": "{ entity(ref: \\"\\\\uD800\\") { ref } }"}',
    ):
        response = await env.client.post(
            "/graphql", content=body, headers={"content-type": "application/json"}
        )
        assert 400 <= response.status_code < 500, response.text
        [error] = response.json()["errors"]
        assert error["extensions"]["code"] in ("BAD_REQUEST", "GRAPHQL_PARSE_FAILED"), error


HOSTILE_HEADERS: list[dict[str, bytes]] = [
    {"authorization": b"Bearer"},
    {"authorization": b"Bearer "},
    {"authorization": b"Basic YWRtaW46YWRtaW4="},
    {"authorization": b"Bearer atr_\xff\xfe_secret"},
    {"authorization": b"Bearer atr_\x00_secret"},
    {"authorization": b"Bearer atr_0a\x00b_secret"},
    {"authorization": b"Bearer atr_" + b"a" * 40 + b"_x"},
    {"authorization": b"Bearer " + b"x" * 10_000},
    {"authorization": b"bearer atr_000000000000_nope"},
    {"x-forwarded-user": b"../../admin"},
    {"x-forwarded-user": b"\xff\xfe\xfd"},
    {"x-forwarded-user": b"a\x00b"},
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


# What a plugin's field is reached through, and given besides the hostile value: the demo's
# names, so that fields of other types (Component.workloads...) are reached on a real entity
# and logs on a real workload's pod; and a silence long enough for Alertmanager to be asked.
PLUGIN_VALUES = {
    **TARGETS[0],
    "pod": "checkout-abc",
    "durationSeconds": 3600,
    "Group": {"ref": "group:default/checkout-team"},
}


@pytest.mark.parametrize("plugin_id", installed_plugin_ids())
async def test_every_installed_plugins_fields_with_hostile_values(env: Env, plugin_id: str) -> None:
    """The kit's check, as a plugin's own tests run it: every argument of every field the
    plugin adds (on the root, on other types, and its subscriptions), as nobody and as an
    admin."""
    before = await catalog(env)
    sent = await check_hostile_inputs(
        env.client, plugin_id, values=PLUGIN_VALUES, quiet=SUBSCRIPTIONS_QUIET
    )
    assert sent > 100, sent
    await assert_intact(env, before, None)
