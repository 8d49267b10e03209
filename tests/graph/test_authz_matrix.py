"""The authorization matrix: every mutation of the served schema (the core's and every bundled
plugin's, read from the schema, so a mutation added without a case here fails), every private
read and the console's controls, for the ten callers of ``atrium.testing.authz`` (nobody, API
tokens of each scope with and without a subject, a person of another business unit, a member of
the owning team's parent group, the owner, an admin), over ``/graphql`` and the pages.

What each caller meets is declared once per field (``cases``: for the owners of what the field
changes, for admins only, or a person's own), and ``check_authorization`` holds every cell to
it: refused callers first, each refusal the code declared, audited as denied, with the catalog,
the cluster, the hooks, the silences, the pipelines and the stars read back unchanged; then the
admitted, the owner on checkout-team's objects and the admins on search-squad's. The
cross-tenant manifests that once got through (``cross_tenant``) are cases of their own: a
PinScaler of one's own component aimed at checkout's PinApp, a PinApp of one's own in
checkout's namespace or serving checkout's host, and the owner's PinScaler aimed at another
team's PinApp. The README's "The authorization matrix" says the same for its readers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from graphql import GraphQLObjectType

from atrium.testing import select_plugins
from atrium.testing.authz import (
    ADMIN,
    ADMIN_TOKEN,
    ADMINS,
    ADMITTED,
    HIDDEN,
    OWNER,
    OWNERS,
    OWNERS_READ_TOKEN,
    OWNERS_WRITE_TOKEN,
    PERSONAL,
    REFUSED,
    ROLES,
    Case,
    Page,
    Read,
    authz_callers,
    check_authorization,
    permission,
)
from atrium.testing.operations import FieldRef, operation_for
from plugins.pincompute import PinComputePlugin
from plugins.pincompute.settings import ComputeSettings
from tests.change_receiver import eventually
from tests.conftest import AppFactory, Client
from tests.kube import Cluster, kubeconfig, start_clusters
from tests.plugins.test_pincompute import pinapp
from tests.plugins.test_pincompute_tenancy import app, scaler

A = "component:default/checkout"  # checkout-team's: what the owner acts on
B = "component:default/search-service"  # search-squad's: what the admins act on
HOST = "checkout.junipermarket.example"
WEB_DIST = Path(__file__).resolve().parents[2] / "web" / "dist"  # the console's build


def manifest(body: dict[str, Any]) -> str:
    return yaml.safe_dump(body)


def workload(namespace: str, name: str) -> dict[str, Any]:
    return {"cluster": "east", "namespace": namespace, "name": name}


CHECKOUT = workload("checkout", "checkout")
SEARCH = workload("search", "search-service")


def owners(
    on_a: dict[str, Any],
    on_b: dict[str, Any],
    *,
    token_a: dict[str, Any] | None = None,
    token_b: dict[str, Any] | None = None,
    **more: Any,
) -> Case:
    """A field for the owners of what it changes: the owner (and the owner's write token) on
    checkout's, the admins (and the admin token) on search-squad's; refused callers aim at
    the owner's. ``token_a``, ``token_b``: the tokens' own objects, when a call uses one up."""
    admitted = {
        OWNERS_WRITE_TOKEN: token_a or on_a,
        ADMIN: on_b,
        ADMIN_TOKEN: token_b or on_b,
    }
    return Case(OWNERS, on_a, admitted, **more)


def admins(refused: dict[str, Any], person: dict[str, Any], token: dict[str, Any]) -> Case:
    return Case(ADMINS, refused, {ADMIN: person, ADMIN_TOKEN: token})


# What a resolver answers once the rule has let the caller in, where the test runs no backend:
# a silence's call, with no Alertmanager, UNAVAILABLE; a promotion or a rollback, with no
# pipeline yet (setPipeline's cases come after theirs), FAILED_PRECONDITION.
NO_ALERTMANAGER = frozenset({"UNAVAILABLE"})
NO_PIPELINE = frozenset({"FAILED_PRECONDITION"})


def cases(hooks: list[str], silences: list[str]) -> dict[str, Case]:
    component = {"component": A}
    component_b = {"component": B}
    stages = [{"name": "production", "production": True}]
    return {
        "applyEntities": admins(
            {"yaml": document("matrix-refused")},
            {"yaml": document("matrix-by-admin")},
            {"yaml": document("matrix-by-admin-token")},
        ),
        "deleteEntity": owners(
            {"ref": "component:default/cart-service"},
            {"ref": "component:default/search-indexer"},
            token_a={"ref": "component:default/order-service"},
            token_b={"ref": "component:default/query-autocomplete"},
        ),
        "starEntity": Case(PERSONAL, {"ref": A}),
        "unstarEntity": Case(PERSONAL, {"ref": A}),
        "createChangeHook": admins(
            hook_arguments("refused"), hook_arguments("admin"), hook_arguments("token")
        ),
        "pauseChangeHook": admins({"id": hooks[0]}, {"id": hooks[0]}, {"id": hooks[1]}),
        "resumeChangeHook": admins({"id": hooks[0]}, {"id": hooks[0]}, {"id": hooks[1]}),
        "redeliverChangeHook": admins({"id": hooks[0]}, {"id": hooks[0]}, {"id": hooks[1]}),
        "deleteChangeHook": admins({"id": hooks[0]}, {"id": hooks[0]}, {"id": hooks[1]}),
        "createSilence": owners(
            {"ref": A, "durationSeconds": 3600, "comment": "matrix"},
            {"ref": B, "durationSeconds": 3600, "comment": "matrix"},
            resolver_codes=NO_ALERTMANAGER,
        ),
        "expireSilence": owners(
            {"id": silences[0]}, {"id": silences[1]}, resolver_codes=NO_ALERTMANAGER
        ),
        "scaleWorkload": owners(CHECKOUT | {"replicas": 4}, SEARCH | {"replicas": 3}),
        "restartWorkload": owners(CHECKOUT, SEARCH),
        "setWorkloadImage": owners(
            CHECKOUT | {"image": "registry.example/checkout:2.0"},
            SEARCH | {"image": "registry.example/search-service:2.0"},
        ),
        "applyWorkloadManifest": owners(
            {"cluster": "east", "manifest": app("checkout-canary", A, "checkout")},
            {"cluster": "east", "manifest": app("search-canary", B, "search")},
        ),
        "promoteRelease": owners(
            component | {"release": "1.0.0", "stage": "production"},
            component_b | {"release": "1.0.0", "stage": "production"},
            resolver_codes=NO_PIPELINE,
        ),
        "rollbackStage": owners(
            component | {"stage": "production"},
            component_b | {"stage": "production"},
            resolver_codes=NO_PIPELINE,
        ),
        "setPipeline": owners(component | {"stages": stages}, component_b | {"stages": stages}),
    }


def document(name: str) -> str:
    return manifest(
        {
            "apiVersion": "backstage.io/v1alpha1",
            "kind": "Component",
            "metadata": {"name": name},
            "spec": {"type": "service", "lifecycle": "experimental", "owner": "checkout-team"},
        }
    )


def hook_arguments(who: str) -> dict[str, Any]:
    return {"url": f"http://127.0.0.1:9/{who}", "secret": "a secret of sixteen characters"}


def cross_tenant() -> dict[str, Case]:
    """The manifests that found the holes: a component of one's own (marketing's, which none
    of the callers owns), aimed at what checkout-team runs. Refused to all but the admins; a
    host another owner's PinApp serves, to the admins too."""
    own = "component:default/loyalty-service"

    def shape(expected: dict[str, str], text: str) -> Case:
        arguments = {"cluster": "east", "manifest": text}
        return Case(expected, arguments, field="applyWorkloadManifest")

    return {
        "a PinScaler of one's own aimed at checkout's PinApp": shape(
            ADMINS, scaler("emma-scaler", own, "checkout", namespace="checkout")
        ),
        "a PinApp of one's own in checkout's namespace": shape(
            ADMINS, app("checkout-shadow", own, "checkout")
        ),
        "a PinApp of one's own serving checkout's host": shape(
            REFUSED, app("loyalty", own, "loyalty", host=HOST)
        ),
        "a PinScaler of checkout aimed at search-service": shape(
            ADMINS, scaler("checkout-reach", A, "search-service", namespace="search")
        ),
    }


PERMISSIONS = {
    "PinApp.viewerCanManage": (
        '{ pinApp(cluster: "east", namespace: "checkout", name: "checkout") { viewerCanManage } }',
        lambda data: data["pinApp"]["viewerCanManage"],
    ),
    "Component.viewerCanDeploy": (
        f'{{ entity(ref: "{A}") {{ ... on Component {{ viewerCanDeploy }} }} }}',
        lambda data: data["entity"]["viewerCanDeploy"],
    ),
    "Component.viewerCanSilence": (
        f'{{ entity(ref: "{A}") {{ ... on Component {{ viewerCanSilence }} }} }}',
        lambda data: data["entity"]["viewerCanSilence"],
    ),
}
# What a person starred is theirs: the owner's star shows to the owner and to tokens acting as
# them, to no one else (and is no error for anyone).
STARRED = "component:default/tax-calculator"
OWN_STARS = {
    role: ADMITTED if role in (OWNER, OWNERS_READ_TOKEN, OWNERS_WRITE_TOKEN) else HIDDEN
    for role in ROLES
}
ADMIN_READS = {
    "Query.auditLog": ("{ auditLog(first: 1) { action } }", "auditLog"),
    "Query.changeHooks": ("{ changeHooks { id } }", "changeHooks"),
    "Query.changeHook": ('{ changeHook(id: "1") { id } }', "changeHook"),
}


def answered(field: str) -> Callable[[Any], bool]:
    """Whether an answer has ``field`` (null for a hook that is not there is an answer)."""
    return lambda data: field in (data or {})


@pytest.fixture
async def atrium(
    demo_database: None, make_client: AppFactory, tmp_path: Path
) -> AsyncIterator[tuple[Client, Cluster]]:
    async with start_clusters("east") as (east,):
        checkout = pinapp("checkout", A, namespace="checkout")
        checkout["spec"]["ingress"] = {"host": HOST, "path": "/"}
        await east.put("pinapps", "checkout", checkout)
        await east.put("pinapps", "search", pinapp("search-service", B, namespace="search"))
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig(east)))
        compute = PinComputePlugin(
            ComputeSettings(
                kubeconfig=str(path), compute_watch_timeout=2, compute_request_timeout=1.0
            )
        )
        plugins = [compute if p.id == compute.id else p for p in select_plugins(None)]
        client: Client = await make_client(
            plugins=plugins, web_dir=WEB_DIST, change_hooks_allowed_networks=["127.0.0.0/8"]
        )
        assert await client.services.db.fetchval("select count(*) from entities") > 150

        async def synced() -> bool:
            body = await client.gql("{ clusters { synced healthy } }")
            return all(c["synced"] and c["healthy"] for c in body["data"]["clusters"])

        await eventually(synced, "the cluster synced")
        yield client, east


async def state(client: Client, east: Cluster) -> list[Any]:
    db = client.services.db
    return [
        await db.fetch("select ref, hash from entities order by ref"),
        await db.fetch("select id, url, paused from change_hooks order by id"),
        await db.fetch("select id, entity_ref from observability_silences order by id"),
        await db.fetch("select component_ref, stages from deployment_pipelines order by 1"),
        await db.fetch("select user_ref, entity_ref from stars order by 1, 2"),
        [east.objects(plural) for plural in ("pinapps", "pinscalers")],
    ]


async def test_every_caller_meets_what_each_field_declares(atrium: tuple[Client, Cluster]) -> None:
    client, east = atrium
    callers = await authz_callers(
        client, owner="amelia.chen", non_owner="emma.wilson", parent_member="grace.okafor"
    )
    admin_token = {"Authorization": callers.headers[ADMIN_TOKEN]["Authorization"]}
    hooks = []
    for name in ("first", "second"):
        made = await client.post(
            "/graphql",
            json={
                "query": "mutation($u: String!, $s: String!) { createChangeHook(url: $u, "
                "secret: $s) { id } }",
                "variables": {"u": f"http://127.0.0.1:9/{name}", "s": "sixteen characters!"},
            },
            headers=admin_token,
        )
        hooks.append(made.json()["data"]["createChangeHook"]["id"])
    silences = ["8e1c2b9e-8d2a-4e57-9b1a-2f6c0d4e8a71", "9f1c2b9e-8d2a-4e57-9b1a-2f6c0d4e8a72"]
    for silence, ref in zip(silences, (A, B), strict=True):
        await client.services.db.execute(
            "insert into observability_silences (id, entity_ref, created_by) values ($1, $2, $3)",
            silence,
            ref,
            "matrix",
        )
    await client.services.db.execute(
        "insert into stars (user_ref, entity_ref) values ($1, $2)",
        f"user:default/{callers.owner}",
        STARRED,
    )
    matrix_cases = cases(hooks, silences) | cross_tenant()
    reads = (
        {
            "Viewer.starred": Read(
                "{ viewer { starred(first: 50) { ref } } }",
                OWN_STARS,
                lambda data: STARRED in [e["ref"] for e in data["viewer"]["starred"]],
            ),
            "Entity.viewerStarred": Read(
                f'{{ entity(ref: "{STARRED}") {{ viewerStarred }} }}',
                OWN_STARS,
                lambda data: data["entity"]["viewerStarred"],
            ),
        }
        | {
            name: Read(document, permission(OWNERS), shows)
            for name, (document, shows) in PERMISSIONS.items()
        }
        | {
            name: Read(document, ADMINS, answered(key))
            for name, (document, key) in ADMIN_READS.items()
        }
    )
    pages = {
        "the workload's controls": Page("/workloads/east/checkout/checkout", "Scale…", OWNERS),
        "the entity's star": Page(
            "/catalog/default/component/checkout", 'aria-label="Star"', PERSONAL
        ),
    }
    # Every read of the schema that says whether the viewer may (the console draws its controls
    # from them) and every root field for admins only is among the reads: found in the schema,
    # so a new one cannot be left out.
    schema = client.services.assembly.schema._schema
    assert {
        f"{name}.{field}"
        for name, kind in schema.type_map.items()
        if isinstance(kind, GraphQLObjectType) and not name.startswith("__")
        for field in kind.fields
        if field.startswith("viewerCan")
    } == set(PERMISSIONS)
    assert {
        f"Query.{name}"
        for name, field in schema.query_type.fields.items()
        if "Admins only" in (field.description or "")
    } == set(ADMIN_READS)
    # Nobody hears that they must sign in before anything about what they sent: every
    # mutation with plain values of its types (refs and manifests that are not ones).
    for name in schema.mutation_type.fields:
        document, variables = operation_for(schema, FieldRef("Mutation", name), {}, {})
        body = (
            await client.post("/graphql", json={"query": document, "variables": variables})
        ).json()
        assert [e["extensions"]["code"] for e in body["errors"]] == ["UNAUTHENTICATED"], body
    matrix = await check_authorization(
        client,
        callers,
        matrix_cases,
        state=lambda: state(client, east),
        reads=reads,
        pages=pages,
    )
    assert matrix.fields >= 18
    print(f"authorization matrix: {matrix}")
