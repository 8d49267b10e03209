"""Compiled plans answer exactly as the generic executor does (graph/plans/).

Differential: each operation runs through graphql-core under Strawberry (the generic path) and
through its plan, each on a fresh request context as the same viewer, and the two answers must
be the same bytes once encoded as the HTTP view encodes them, with the same cache policy and
the same cache tags. The operations:

- every query and mutation of the console's persisted-query manifest, with variables drawn by
  Hypothesis from each variable's type (the demo's names, missing and malformed ones, hostile
  strings, sizes out of range) and as four viewers (nobody, an owner, a non-owner, an admin);
  mutations run only as viewers who are refused (or whose change is idempotent: any signed-in
  person may star, and starring twice is starring once), so both runs see the same state;
- every operation written in the test suite (string literals anywhere under ``tests/`` that
  parse and validate against the assembled schema), with drawn variables;
- queries Hypothesis generates from the schema (hypothesis-graphql), over the catalog's
  fields and over a probe plugin built to fail: errors from synchronous and asynchronous
  resolvers, nulls in non-null positions (fields and list items), wrong runtime types,
  leaves that do not coerce, bare ``await asyncio.sleep(0)``, loader batches, interfaces
  and unions behind fragments;
- hand-written documents for ``@skip``/``@include`` on variables, nested fragments on
  interfaces and unions, aliases merging and a mutation run serially.

- the test kit's ``check_plan_equivalence`` over a query for each field each installed plugin
  adds (Atrium's bundled ones, and any other package's).

The app is assembled as deployed (every installed plugin, two emulated clusters, the demo).
"""

from __future__ import annotations

import ast
import asyncio
import enum
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import pytest
import strawberry
import yaml
from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLSchema,
    OperationDefinitionNode,
    OperationType,
    parse,
    validate,
)
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis_graphql import queries
from strawberry.dataloader import DataLoader

from atrium.testing import (
    check_plan_equivalence,
    installed_plugin_ids,
    plugin_queries,
    select_plugins,
)
from atrium.testing.plans import compare_on_plan
from graph.context import Info
from graph.plugin import PluginBuilder
from sources.auth import Viewer
from sources.catalog.store import apply_batch
from tests.conftest import AppFactory, Client, demo_batch
from tests.kube import kubeconfig, start_clusters
from tests.plugins.test_pincompute import eventually, pinapp

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "web" / "dist" / "persisted-query-manifest.json"

OWNER = Viewer("user:default/amelia.chen", "proxy", frozenset({"read", "write"}))
NOT_OWNER = Viewer("user:default/marcus.johnson", "proxy", frozenset({"read", "write"}))
ANONYMOUS = Viewer(None, "anonymous", frozenset({"read"}))
ADMIN = Viewer(None, "token", frozenset({"read", "write", "admin"}), token_name="tests")
VIEWERS = {"anonymous": ANONYMOUS, "owner": OWNER, "not-owner": NOT_OWNER, "admin": ADMIN}
# Mutations run only as viewers who are refused: both runs then see the same state. (The
# not-owner may star, but a second star changes nothing: the runs still agree.)
REFUSED = {"anonymous": ANONYMOUS, "not-owner": NOT_OWNER}

# Strings variables are drawn from, by variable name; others draw from GENERAL.
NAMES: dict[str, list[str]] = {
    "ref": [
        "component:default/checkout",
        "component:checkout",
        "group:default/checkout-team",
        "group:default/search-squad",
        "user:default/amelia.chen",
        "api:default/checkout-api",
        "system:default/storefront",
        "component:default/nope",
        "not a ref",
        "",
    ],
    "component": ["checkout", "component:default/checkout", "search", "nope"],
    "cluster": ["east", "west", "nowhere"],
    "namespace": ["shop", "nowhere"],
    "name": ["checkout", "search", "nope"],
    "search": ["check", "", "%_\\", "a" * 300],
    "stage": ["production", "staging", "nope"],
    "release": ["1.42.0", "nope"],
    "id": ["nope", "c2lsZW5jZQ=="],
}
GENERAL = ["checkout", "", "x", "Robert'); DROP TABLE entities;--", "\u00e9\u00e8\u2603", "a" * 64]
INTS = [0, 1, 5, 50, 3600, -1, 2**31 - 1, 86400 * 30]


@dataclass
class Env:
    client: Client
    schema: GraphQLSchema

    @property
    def services(self) -> Any:
        return self.client.services


# -- a plugin made to fail in every way a resolver can ---------------------------------------


@strawberry.enum
class Flavour(enum.Enum):
    SWEET = "sweet"
    SOUR = "sour"


@strawberry.interface
class Thing:
    name: str


@strawberry.type
class Widget(Thing):
    size: int

    @strawberry.field
    async def parts(self) -> list[Widget]:
        await asyncio.sleep(0)
        return [Widget(name=f"{self.name}.{i}", size=i) for i in range(2)]

    @strawberry.field
    def broken_parts(self) -> list[Widget]:
        return [Widget(name="ok", size=1), None]  # type: ignore[list-item]


@strawberry.type
class Gadget(Thing):
    power: float | None

    @strawberry.field
    async def twin(self, info: Info) -> Gadget | None:
        return await info.context.loaders["probe.gadgets"].load(self.name)


Item = Annotated[Widget | Gadget, strawberry.union("Item")]


@strawberry.type
class Probe:
    seed: int

    @strawberry.field
    def text(self) -> str:
        return f"probe {self.seed}"

    @strawberry.field
    async def later(self) -> str:
        await asyncio.sleep(0)
        return f"later {self.seed}"

    @strawberry.field
    async def batched(self, info: Info) -> str:
        return str(await info.context.loaders["probe.squares"].load(self.seed))

    @strawberry.field
    def fails(self) -> str | None:
        raise ValueError(f"sync failure {self.seed}")

    @strawberry.field
    async def fails_later(self) -> str | None:
        await asyncio.sleep(0)
        raise ValueError(f"async failure {self.seed}")

    @strawberry.field
    def must(self) -> str:
        raise ValueError("a required field failed")

    @strawberry.field
    async def must_later(self) -> str:
        await asyncio.sleep(0)
        raise ValueError("a required field failed later")

    @strawberry.field
    def missing(self) -> str:
        return None  # type: ignore[return-value]

    @strawberry.field
    async def missing_later(self, info: Info) -> str:
        return await info.context.loaders["probe.nothing"].load(self.seed)  # type: ignore[no-any-return]

    @strawberry.field
    def huge(self) -> int:
        return 2**40

    @strawberry.field
    def nan(self) -> float | None:
        return float("nan")

    @strawberry.field
    def not_text(self) -> str | None:
        return {"not": "text"}  # type: ignore[return-value]

    @strawberry.field
    def flavour(self) -> Flavour:
        return Flavour.SOUR if self.seed % 2 else Flavour.SWEET

    @strawberry.field
    def bad_flavour(self) -> Flavour | None:
        return "bitter"  # type: ignore[return-value]

    @strawberry.field
    def not_a_list(self) -> list[int] | None:
        return 5  # type: ignore[return-value]

    @strawberry.field
    def numbers(self) -> list[int | None]:
        return [1, None, 3]

    @strawberry.field
    def awaited_items(self) -> list[str | None]:
        async def ok() -> str:
            return "ok"

        async def bad() -> str:
            raise ValueError("a list item failed")

        return [ok(), bad()]  # type: ignore[list-item]

    @strawberry.field
    def items(self) -> list[Item]:
        return [Widget(name="w", size=self.seed), Gadget(name="g", power=1.5)]

    @strawberry.field
    def maybe_items(self) -> list[Item | None]:
        return [None, Gadget(name="g2", power=None)]

    @strawberry.field
    def things(self) -> list[Thing]:
        return [Widget(name="tw", size=2), Gadget(name="tg", power=None)]

    @strawberry.field
    def wrong(self) -> Widget:
        return Gadget(name="pretending", power=0.0)  # type: ignore[return-value]

    @strawberry.field
    def wrong_maybe(self) -> Widget | None:
        return Gadget(name="pretending", power=0.0)  # type: ignore[return-value]

    @strawberry.field
    def echo(self, text: str, times: int = 1, flavour: Flavour = Flavour.SWEET) -> str:
        return f"{text * max(0, min(times, 5))} {flavour.value}"

    @strawberry.field
    def child(self, seed: int = 0) -> Probe | None:
        return Probe(seed=self.seed * 10 + seed) if self.seed < 1000 else None

    @strawberry.field
    async def required_child(self) -> Probe:
        await asyncio.sleep(0)
        return Probe(seed=self.seed + 1)


class ProbePlugin:
    id = "probe"

    def setup(self, builder: PluginBuilder) -> None:
        @builder.query
        @strawberry.type
        class Query:
            @strawberry.field
            def probe(self, seed: int = 1) -> Probe | None:
                return Probe(seed=seed)

            @strawberry.field
            async def required_probe(self) -> Probe:
                return Probe(seed=7)

            @strawberry.field
            def probes(self, count: int = 3) -> list[Probe]:
                return [Probe(seed=i) for i in range(max(0, min(count, 20)))]

        @builder.mutation
        @strawberry.type
        class Mutation:
            @strawberry.mutation
            async def bump(self, seed: int) -> Probe:
                await asyncio.sleep(0)
                return Probe(seed=seed + 1)

            @strawberry.mutation
            def refuse(self) -> Probe:
                raise ValueError("refused")

        builder.types(Widget, Gadget)

        async def squares(keys: list[int]) -> list[int]:
            return [k * k for k in keys]

        async def nothing(keys: list[int]) -> list[None]:
            return [None for _ in keys]

        async def gadgets(keys: list[str]) -> list[Gadget | None]:
            return [Gadget(name=f"{k}-twin", power=2.0) if len(k) < 12 else None for k in keys]

        builder.loader("squares", lambda services: DataLoader(squares))
        builder.loader("nothing", lambda services: DataLoader(nothing))
        builder.loader("gadgets", lambda services: DataLoader(gadgets))


# -- the environment ---------------------------------------------------------------------------


@pytest.fixture
async def env(
    make_client: AppFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
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
        client: Client = await make_client(plugins=[*select_plugins(None), ProbePlugin()])
        assert not (await apply_batch(client.services.db, demo_batch())).errors

        async def synced() -> bool:
            body = await client.gql("{ clusters { synced } }")
            return all(c["synced"] for c in body["data"]["clusters"])

        await eventually(synced)
        assert client.services.assembly.plans is not None
        yield Env(client, client.services.assembly.schema._schema)


@dataclass
class Outcomes:
    compared: int = 0
    with_errors: int = 0
    generic_only: int = 0


async def differ(
    env: Env,
    query: str,
    variables: dict[str, Any] | None,
    operation_name: str | None,
    viewer: Viewer,
    outcomes: Outcomes,
) -> None:
    """Run one operation both ways (the test kit's comparison); fail with both answers when
    they differ."""
    compared = await compare_on_plan(env.services, query, variables, operation_name, viewer)
    if not compared.on_plan:
        outcomes.generic_only += 1
        return
    outcomes.compared += 1
    outcomes.with_errors += compared.with_errors


# -- variables drawn from their types ----------------------------------------------------------


def value_strategy(name: str, graphql_type: GraphQLInputType) -> st.SearchStrategy[Any]:
    if isinstance(graphql_type, GraphQLNonNull):
        return value_strategy(name, graphql_type.of_type).filter(lambda v: v is not None)
    nullable = st.none()
    if isinstance(graphql_type, GraphQLList):
        items = value_strategy(name, graphql_type.of_type)
        return nullable | st.lists(items, max_size=3)
    if isinstance(graphql_type, GraphQLEnumType):
        return nullable | st.sampled_from(list(graphql_type.values))
    if isinstance(graphql_type, GraphQLInputObjectType):
        fields = graphql_type.fields
        required = {
            k: value_strategy(k, f.type)
            for k, f in fields.items()
            if isinstance(f.type, GraphQLNonNull)
        }
        optional = {k: value_strategy(k, f.type) for k, f in fields.items() if k not in required}
        return nullable | st.fixed_dictionaries(required, optional=optional)
    scalar = graphql_type.name  # type: ignore[union-attr]
    if scalar == "Int":
        return nullable | st.sampled_from(INTS)
    if scalar == "Float":
        return nullable | st.sampled_from([0.0, 1.5, -2.0])
    if scalar == "Boolean":
        return nullable | st.booleans()
    return nullable | st.sampled_from(NAMES.get(name, GENERAL))


def variable_sets(
    schema: GraphQLSchema, operation: OperationDefinitionNode, count: int
) -> list[dict[str, Any]]:
    from graphql import type_from_ast

    definitions = {}
    for definition in operation.variable_definitions or ():
        graphql_type = type_from_ast(schema, definition.type)
        assert graphql_type is not None
        strategy = value_strategy(definition.variable.name.value, graphql_type)  # type: ignore[arg-type]
        if definition.default_value is not None:
            strategy = st.just(...) | strategy  # sometimes left to its default
        definitions[definition.variable.name.value] = strategy
    if not definitions:
        return [{}]
    drawn: list[dict[str, Any]] = []

    @given(st.fixed_dictionaries(definitions))
    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def draw(values: dict[str, Any]) -> None:
        drawn.append({k: v for k, v in values.items() if v is not ...})

    draw()
    return drawn


def operations(document: str) -> list[tuple[str | None, OperationDefinitionNode]]:
    parsed = parse(document)
    found = [d for d in parsed.definitions if isinstance(d, OperationDefinitionNode)]
    return [(d.name.value if d.name else None, d) for d in found]


# -- the tests -----------------------------------------------------------------------------------


async def test_the_consoles_operations_answer_alike(env: Env) -> None:
    import json

    manifest = json.loads(MANIFEST.read_text())["operations"]
    outcomes = Outcomes()
    for entry in manifest:
        if entry["type"] == "subscription":
            continue
        for name, operation in operations(entry["body"]):
            viewers = REFUSED if operation.operation is OperationType.MUTATION else VIEWERS
            for variables in variable_sets(env.schema, operation, 12):
                for viewer in viewers.values():
                    await differ(env, entry["body"], variables, name, viewer, outcomes)
    assert outcomes.compared > 600, outcomes
    assert outcomes.with_errors > 50, outcomes  # refusals, bad refs, unavailable backends


def suite_documents() -> list[str]:
    """String literals in the test suite that parse as GraphQL operations."""
    found: dict[str, None] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                continue
            text = node.value.strip()
            if not text.startswith(("{", "query", "mutation")) or len(text) > 20_000:
                continue
            try:
                parse(text)
            except Exception:
                continue
            found[node.value] = None
    return list(found)


async def test_the_test_suites_operations_answer_alike(env: Env) -> None:
    outcomes = Outcomes()
    documents = 0
    for document in suite_documents():
        if validate(env.schema, parse(document)):
            continue
        documents += 1
        for name, operation in operations(document):
            if operation.operation is OperationType.SUBSCRIPTION:
                continue
            viewers = (
                REFUSED
                if operation.operation is OperationType.MUTATION
                else {"owner": OWNER, "anonymous": ANONYMOUS}
            )
            for variables in variable_sets(env.schema, operation, 4):
                for viewer in viewers.values():
                    await differ(env, document, variables, name, viewer, outcomes)
    assert documents > 100, documents
    assert outcomes.compared > 200, outcomes


def generated(schema: GraphQLSchema, fields: list[str], count: int) -> list[str]:
    drawn: list[str] = []

    @given(queries(schema, fields=fields))
    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def draw(query: str) -> None:
        drawn.append(query)

    draw()
    return drawn


async def test_generated_probe_queries_answer_alike(env: Env) -> None:
    outcomes = Outcomes()
    for query in generated(env.schema, ["probe", "requiredProbe", "probes"], 300):
        await differ(env, query, None, None, OWNER, outcomes)
    assert outcomes.compared >= 250, outcomes
    assert outcomes.with_errors > 80, outcomes


async def test_generated_catalog_queries_answer_alike(env: Env) -> None:
    outcomes = Outcomes()
    fields = ["entity", "entities", "viewer", "components", "search", "node"]
    fields = [f for f in fields if f in env.schema.query_type.fields]  # type: ignore[union-attr]
    for query in generated(env.schema, fields, 150):
        for viewer in (OWNER, ANONYMOUS):
            await differ(env, query, None, None, viewer, outcomes)
    assert outcomes.compared >= 200, outcomes


HAND_WRITTEN = """
query Directives($a: Boolean!, $b: Boolean!, $seed: Int = 3) {
  probe(seed: $seed) {
    text @include(if: $a)
    later @skip(if: $b)
    ... on Probe @include(if: $b) { fails must: text }
    ...More @skip(if: $a)
    child(seed: 2) { ...More text }
  }
  again: probe(seed: $seed) @include(if: $a) { seed }
}
fragment More on Probe {
  items { __typename ...Named ... on Widget { size parts { name } } ... on Gadget { power twin { name } } }
  things { ...Named ... on Gadget { twin { power } } }
  maybeItems { ... on Thing { name } }
}
fragment Named on Thing { name __typename }

query Nulls($seed: Int!) {
  probe(seed: $seed) { text child { text mustLater } numbers awaitedItems }
  probes(count: 4) { seed batched later missingLater }
  other: probes(count: 2) { seed child { required: requiredChild { text must } } }
}

query RequiredNull { requiredProbe { text missing } }
query WrongTypes { probe { wrongMaybe { size } huge nan notText badFlavour notAList flavour } }
query WrongRequired { probe { wrong { size } } }
query BrokenList { probe { items { ... on Widget { brokenParts { name } } } } }
query Echo($text: String!, $times: Int, $flavour: Flavour) {
  probe { echo(text: $text, times: $times, flavour: $flavour) e2: echo(text: "x") }
}
mutation Serial($seed: Int!) { first: bump(seed: $seed) { seed later } second: bump(seed: 2) { seed } }
mutation Refused { first: bump(seed: 1) { seed } refuse { seed } third: bump(seed: 3) { seed } }
"""


async def test_hand_written_documents_answer_alike(env: Env) -> None:
    outcomes = Outcomes()
    for name, operation in operations(HAND_WRITTEN):
        for variables in variable_sets(env.schema, operation, 16):
            await differ(env, HAND_WRITTEN, variables, name, OWNER, outcomes)
    assert outcomes.compared >= 40, outcomes
    # Each @skip/@include combination is a variant of its own, built once.
    plan = env.services.assembly.plans.get(HAND_WRITTEN, "Directives")
    assert plan is not None and len(plan.variants) == 4


async def test_persisted_gets_run_on_plans_and_match_the_generic_answer(
    env: Env, make_client: AppFactory
) -> None:
    """Over HTTP: the first GET of a persisted document runs generically and builds the plan,
    the next ones run on it, and an app with plans turned off answers the same bytes."""
    query = (
        "query Page($ref: String!) { entity(ref: $ref) { ref name"
        " ... on Component { owner { ref } system { ref } } } }"
    )
    plans = env.services.assembly.plans
    generic = await make_client(compiled_plans=False)
    assert generic.services.assembly.plans is None
    refs = ["component:default/checkout", "group:default/checkout-team", "component:default/nope"]
    first = await env.client.persisted_get(query, {"ref": refs[0]})
    assert first.status_code == 200 and plans.get(query, None) is not None
    runs = plans.runs
    for ref in refs[1:]:
        compiled = await env.client.persisted_get(query, {"ref": ref})
        expected = await generic.persisted_get(query, {"ref": ref})
        assert compiled.status_code == expected.status_code == 200
        assert compiled.content == expected.content
        assert compiled.headers["etag"] == expected.headers["etag"]
    assert plans.runs == runs + 2


# What a plugin's fields are reached through: the demo's names.
PLUGIN_VALUES = {
    "ref": "component:default/checkout",
    "cluster": "east",
    "namespace": "shop",
    "name": "checkout",
    "Group": {"ref": "group:default/checkout-team"},
}


@pytest.mark.parametrize("plugin_id", installed_plugin_ids())
async def test_every_installed_plugins_fields_answer_alike(env: Env, plugin_id: str) -> None:
    """The kit's check, as a plugin's own tests run it: a query for each field the plugin
    adds (reached from the root), as nobody and as an owner, answers alike on its plan."""
    queries = plugin_queries(env.client, plugin_id, PLUGIN_VALUES)
    assert queries, f"{plugin_id} adds no field a query reaches"
    for user in (None, "amelia.chen"):
        assert await check_plan_equivalence(env.client, queries, as_user=user) == len(queries)
