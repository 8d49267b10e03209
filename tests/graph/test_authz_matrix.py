"""The authorization matrix's first slice: every mutation of the served schema (the core's and
every bundled plugin's, read from the schema so none can be left out) is refused to those who
may change nothing, whatever it targets: nobody (UNAUTHENTICATED), a read-scope token naming
no one and a read-scope token acting as the owner (FORBIDDEN). Each refusal is audited as
denied, and the catalog is as it was.

Each argument is given a well-formed value (``VALUES`` by name, else ``plain_value``), so that
a refusal is the rule's, not the parser's."""

from __future__ import annotations

from typing import Any

import pytest
from graphql import get_named_type, is_leaf_type

from atrium.testing import select_plugins
from sources.auth import create_token
from sources.catalog.store import apply_batch
from tests.conftest import AppFactory, Client, demo_batch
from tests.hostile_values import CATALOG_DOCUMENT, CHECKOUT_MANIFEST, plain_value

OWNER = "amelia.chen"  # of checkout, through checkout-team
# What each argument is given by name, else a plain value of its type (plain_value).
VALUES: dict[str, Any] = {
    "manifest": CHECKOUT_MANIFEST,
    "yaml": CATALOG_DOCUMENT,
    "cluster": "east",
    "namespace": "shop",
    "name": "checkout",
    "image": "registry.example/checkout:2.0",
    "release": "1.0.0",
    "stage": "production",
    "stages": [{"name": "production", "production": True}],
    "durationSeconds": 3600,
    "comment": "a probe",
    "url": "https://hooks.example.com/atrium",
    "secret": "a secret of sixteen characters or more",
    "id": "3f1c2b9e-8d2a-4e57-9b1a-2f6c0d4e8a71",  # a silence's, as Alertmanager gives them
}
EXPECTED = {
    "nobody": "UNAUTHENTICATED",
    "read token": "FORBIDDEN",
    "owner's read token": "FORBIDDEN",
}


def mutations(client: Client) -> list[tuple[str, str, dict[str, Any]]]:
    """(field, document, variables) for every mutation, each argument given a value."""
    schema = client.services.assembly.schema._schema
    found = []
    for name, field in sorted(schema.mutation_type.fields.items()):
        declared = [f"${a}: {arg.type}" for a, arg in field.args.items()]
        passed = [f"{a}: ${a}" for a in field.args]
        selection = "" if is_leaf_type(get_named_type(field.type)) else " { __typename }"
        document = (
            f"mutation Probe({', '.join(declared)}) {{ {name}({', '.join(passed)}){selection} }}"
        )
        variables = {a: VALUES.get(a, plain_value(arg)) for a, arg in field.args.items()}
        found.append((name, document, variables))
    return found


@pytest.fixture
async def atrium(make_client: AppFactory) -> Client:
    client: Client = await make_client(plugins=select_plugins(None))
    assert not (await apply_batch(client.services.db, demo_batch())).errors
    return client


async def test_every_mutation_is_refused_to_those_who_may_change_nothing(atrium: Client) -> None:
    db = atrium.services.db
    _, reader = await create_token(db, "dashboard", ["read"], None)
    _, owners_reader = await create_token(db, "owners-dashboard", ["read"], f"user:default/{OWNER}")
    callers = {
        "nobody": {},
        "read token": {"Authorization": f"Bearer {reader}"},
        "owner's read token": {"Authorization": f"Bearer {owners_reader}"},
    }
    before = await db.fetch("select ref, hash from entities order by ref")
    probes = mutations(atrium)
    assert len(probes) >= 18
    wrong = []
    for who, headers in callers.items():
        for name, document, variables in probes:
            denied = await db.fetchval("select count(*) from audit_log where outcome = 'denied'")
            response = await atrium.post(
                "/graphql", json={"query": document, "variables": variables}, headers=headers
            )
            body = response.json()
            codes = [e.get("extensions", {}).get("code") for e in body.get("errors") or []]
            if codes != [EXPECTED[who]] or body.get("data") not in (None, {name: None}):
                wrong.append(f"{who}: {name}: {response.status_code} {body}"[:600])
                continue
            after = await db.fetchval("select count(*) from audit_log where outcome = 'denied'")
            if after != denied + 1:
                wrong.append(f"{who}: {name}: refused but not audited as denied")
    assert not wrong, "\n".join(wrong)
    assert await db.fetch("select ref, hash from entities order by ref") == before
