"""What other tools point at Atrium, run for real against a uvicorn-served Atrium with the demo
organisation: Backstage's own catalog client (npm ``@backstage/catalog-client``, run by Node)
over the catalog REST API, gql (graphql-python's client) over GraphQL with an API token, and
``atrium owner`` and ``atrium lookup`` as a script runs them. What each returns is compared
with what GraphQL or the database says, never with numbers written here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from gql import Client, gql
from gql.transport.exceptions import TransportQueryError
from gql.transport.httpx import HTTPXAsyncTransport

from atrium.testing.databases import new_database_name
from sources.auth import create_token
from sources.catalog.store import apply_batch
from sources.db import Database
from tests.conftest import EXAMPLES, ROOT, _admin, _with_database, demo_batch
from tests.test_real_clients import atrium_serve, node

CHECKOUT = "component:default/checkout"
CHECKOUT_FILE = EXAMPLES / "components" / "checkout.yaml"


@dataclass(frozen=True, slots=True)
class Served:
    base: str
    database_url: str
    token: str  # a read token, as a tool is given
    log: Path

    def graphql(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """A plain POST: the reference answer."""
        response = httpx.post(
            f"{self.base}/graphql",
            json={"query": query, "variables": variables},
            headers={"authorization": f"Bearer {self.token}"},
        )
        body: dict[str, Any] = response.json()
        assert response.status_code == 200 and "errors" not in body, body
        return body["data"]  # type: ignore[no-any-return]

    def refs(self, filter: dict[str, Any] | None = None, **arguments: Any) -> list[str]:
        """Every ref of a GraphQL list, page after page, in its order."""
        found: list[str] = []
        after = None
        while True:
            page = self.graphql(
                "query($f: EntityFilter, $after: String, $search: String, $order: EntityOrder) {"
                " entities(filter: $f, first: 100, after: $after, search: $search,"
                " orderBy: $order) { nodes { ref } pageInfo { hasNextPage endCursor } } }",
                {"f": filter, "after": after, **arguments},
            )["entities"]
            found += [node["ref"] for node in page["nodes"]]
            if not page["pageInfo"]["hasNextPage"]:
                return found
            after = page["pageInfo"]["endCursor"]

    def owned(self, ref: str) -> list[str]:
        """What ``ref`` owns (transitively), every page."""
        found: list[str] = []
        after = None
        while True:
            page = self.graphql(
                "query($ref: String!, $after: String) { entitiesOwnedBy(ref: $ref, first: 100,"
                " after: $after) { nodes { ref } pageInfo { hasNextPage endCursor } } }",
                {"ref": ref, "after": after},
            )["entitiesOwnedBy"]
            found += [node["ref"] for node in page["nodes"]]
            if not page["pageInfo"]["hasNextPage"]:
                return found
            after = page["pageInfo"]["endCursor"]

    async def rows(self, sql: str, *args: Any) -> list[Any]:
        db = await Database.connect(self.database_url, min_size=1, max_size=1)
        try:
            return await db.fetch(sql, *args)
        finally:
            await db.close()


@pytest.fixture(scope="module")
async def served(pg_admin_url: str, template_db: str) -> AsyncIterator[Served]:
    name = new_database_name()
    async with _admin(pg_admin_url) as conn:
        await conn.execute(f'create database "{name}" template "{template_db}"')
    url = _with_database(pg_admin_url, name)
    db = await Database.connect(url, min_size=1, max_size=2)
    try:
        result = await apply_batch(db, demo_batch())
        assert not result.errors
        _, token = await create_token(db, "a-tool", ["read"], None)
    finally:
        await db.close()
    try:
        with atrium_serve(url) as (base, log):
            yield Served(base, url, token, log)
    finally:
        async with _admin(pg_admin_url) as conn:
            await conn.execute(f'drop database if exists "{name}" with (force)')


@pytest.fixture(scope="module")
def catalog_client(served: Served) -> dict[str, Any]:
    """Every read method of CatalogApi, once (catalog_client.mjs)."""
    out = node("catalog_client.mjs", served.base, served.token, str(CHECKOUT_FILE))
    assert isinstance(out, dict)
    return out


def ok(out: dict[str, Any], step: str) -> Any:
    value = out[step]
    assert not (isinstance(value, dict) and "error" in value), value
    return value


# ------------------------------------------------------------- @backstage/catalog-client


def test_filters_match_what_backstages_own_rules_match(catalog_client: dict[str, Any]) -> None:
    """Each filter's answer equals the entities Backstage's search rows (its own traverse,
    run over the entities Atrium serves) and its backend's rules select."""
    parity = ok(catalog_client, "parity")
    for name, found in parity.items():
        assert found["served"] == found["backstage"], name
        assert found["served"] or name == "nothing", f"{name} matched nothing: a weak case"


async def test_get_entities_lists_what_the_catalog_holds(
    served: Served, catalog_client: dict[str, Any]
) -> None:
    everything = ok(catalog_client, "all")
    stored = await served.rows("select ref from entities order by lower(name), ref")
    assert everything == [row["ref"] for row in stored]
    services = ok(catalog_client, "services")
    assert services == served.refs({"kind": ["component"], "type": ["service"]})


def test_fields_keep_only_what_they_name(served: Served, catalog_client: dict[str, Any]) -> None:
    groups = ok(catalog_client, "fields")
    assert [g["metadata"]["name"] for g in groups] == [
        ref.split("/")[1] for ref in served.refs({"kind": ["group"]})
    ]
    for group in groups:
        assert set(group) == {"kind", "metadata", "spec"}
        assert set(group["metadata"]) == {"name"} and set(group["spec"]) <= {"profile"}
        assert group["kind"] == "Group"


def test_order_and_offset_pages(served: Served, catalog_client: dict[str, Any]) -> None:
    assert ok(catalog_client, "ordered") == served.refs({"kind": ["api"]}, order="NAME_DESC")
    pages = ok(catalog_client, "offset pages")
    assert all(len(page) == 7 for page in pages[:-1]) and 0 < len(pages[-1]) <= 7
    assert [ref for page in pages for ref in page] == served.refs({"kind": ["component"]})


def test_query_entities_walks_every_page_by_cursor(
    served: Served, catalog_client: dict[str, Any]
) -> None:
    pages = ok(catalog_client, "query pages")
    components = served.refs({"kind": ["component"]})
    assert len(pages) == -(-len(components) // 7)
    assert [ref for page in pages for ref in page["refs"]] == components
    assert {page["totalItems"] for page in pages} == {len(components)}
    by_owner = ok(catalog_client, "query by owner, descending")
    assert by_owner == served.refs(None, order="OWNER_DESC")


async def test_query_entities_with_a_full_text_term(
    served: Served, catalog_client: dict[str, Any]
) -> None:
    found = ok(catalog_client, "full text")
    searched = served.refs(None, search="checkout")
    assert sorted(found["refs"]) == sorted(searched) and found["totalItems"] == len(searched)
    # With fields named, Backstage's rule: the term within those fields' values, in any case.
    within = ok(catalog_client, "full text in fields")
    rows = await served.rows(
        "select ref from entities where lower(name) like '%pay%' or lower(title) like '%pay%'"
    )
    expected = sorted(row["ref"] for row in rows)
    assert sorted(within["refs"]) == expected and within["totalItems"] == len(expected) > 0


def test_stream_entities_reads_everything_in_pages(
    served: Served, catalog_client: dict[str, Any]
) -> None:
    pages = ok(catalog_client, "stream")
    assert all(len(page) == 50 for page in pages[:-1])
    assert [ref for page in pages for ref in page] == ok(catalog_client, "all")


async def test_entities_by_ref_and_refs_are_the_stored_entities(
    served: Served, catalog_client: dict[str, Any]
) -> None:
    entity = ok(catalog_client, "by ref")
    assert entity["apiVersion"] == "backstage.io/v1alpha1" and entity["kind"] == "Component"
    metadata = entity["metadata"]
    assert (metadata["namespace"], metadata["name"]) == ("default", "checkout")
    assert metadata["uid"] and metadata["etag"]
    [stored] = await served.rows("select spec, annotations from entities where ref = $1", CHECKOUT)
    assert entity["spec"] == stored["spec"] and metadata["annotations"] == stored["annotations"]
    relations = await served.rows(
        "select distinct type, target_ref from relations where source_ref = $1", CHECKOUT
    )
    assert sorted((r["type"], r["targetRef"]) for r in entity["relations"]) == sorted(
        (r["type"], r["target_ref"]) for r in relations
    )
    assert ok(catalog_client, "by ref, missing") == "undefined"
    checkout, missing, team = ok(catalog_client, "by refs")
    assert checkout == {
        "kind": "Component",
        "metadata": {"name": "checkout", "uid": metadata["uid"]},
    }
    assert missing is None
    assert team["kind"] == "Group" and team["metadata"]["name"] == "checkout-team"


def test_facets_count_as_graphql_does(served: Served, catalog_client: dict[str, Any]) -> None:
    facets = ok(catalog_client, "facets")["facets"]
    counted = served.graphql(
        """{ kinds: facets(field: KIND, filter: {kind: ["component"]}) { value count }
             types: facets(field: TYPE, filter: {kind: ["component"]}) { value count }
             owners: facets(field: OWNER, filter: {kind: ["component"]}, first: 1000) { value count }
             tags: facets(field: TAG, filter: {kind: ["component"]}, first: 1000) { value count }
             all: facets(field: KIND) { value count } }"""
    )
    for key, name in (
        ("kind", "kinds"),
        ("spec.type", "types"),
        ("relations.ownedBy", "owners"),
        ("metadata.tags", "tags"),
    ):
        assert facets[key] == counted[name], key
    assert ok(catalog_client, "all facets")["facets"]["kind"] == counted["all"]


def test_ancestors_lead_to_the_location_that_names_the_file(
    catalog_client: dict[str, Any],
) -> None:
    ancestry = ok(catalog_client, "ancestors")
    assert ancestry["rootEntityRef"] == CHECKOUT
    first, location = ancestry["items"]
    assert first["entity"]["metadata"]["name"] == "checkout"
    assert first["parentEntityRefs"] == ["location:default/juniper-market"]
    assert location["entity"]["kind"] == "Location"
    assert "./components/checkout.yaml" in location["entity"]["spec"]["targets"]
    assert location["parentEntityRefs"] == []


async def test_locations_are_the_files_entities_came_from(
    served: Served, catalog_client: dict[str, Any]
) -> None:
    found = ok(catalog_client, "locations")["items"]
    origins = await served.rows("select distinct origin from entities order by origin")
    assert [(item["type"], item["target"]) for item in found] == [
        ("file", row["origin"]) for row in origins
    ]
    by_ref = ok(catalog_client, "location by ref")
    assert (by_ref["type"], by_ref["target"]) == ("file", str(CHECKOUT_FILE))
    assert ok(catalog_client, "location by entity") == by_ref
    assert ok(catalog_client, "location by id") == by_ref


def test_errors_reach_the_client_in_backstages_shape(catalog_client: dict[str, Any]) -> None:
    refused = catalog_client["bad filter"]
    assert refused["status"] == 400 and refused["body"]["error"]["name"] == "InputError"
    assert "status.items" in refused["body"]["error"]["message"]
    assert refused["body"]["response"] == {"statusCode": 400}
    assert refused["body"]["request"]["method"] == "GET"
    unknown = catalog_client["bad token"]
    assert unknown["status"] == 401 and unknown["body"]["error"]["name"] == "AuthenticationError"


# ------------------------------------------------------------------------ gql, as a script


OWNERSHIP = gql(
    """query Ownership($ref: String!) {
      ownership(ref: $ref) { ownerRef owner { ref } members { ref } chain { ref } }
    }"""
)
OWNED = gql(
    """query Owned($ref: String!, $after: String) {
      entitiesOwnedBy(ref: $ref, first: 20, after: $after) {
        nodes { ref } pageInfo { hasNextPage endCursor }
      }
    }"""
)
BY_ANNOTATION = gql(
    """query ByAnnotation($annotations: JSON) {
      entities(filter: {annotations: $annotations}) { nodes { ref ... on Component { ownerRef } } }
    }"""
)


async def test_a_gql_script_reads_ownership_with_a_token(served: Served) -> None:
    transport = HTTPXAsyncTransport(
        url=f"{served.base}/graphql", headers={"authorization": f"Bearer {served.token}"}
    )
    # As scripts use it: the schema fetched by introspection, each document checked against it.
    async with Client(transport=transport, fetch_schema_from_transport=True) as session:
        OWNERSHIP.variable_values = {"ref": "component:checkout"}
        ownership = (await session.execute(OWNERSHIP))["ownership"]
        owned: list[str] = []
        after = None
        while True:
            OWNED.variable_values = {"ref": "user:amelia.chen", "after": after}
            page = (await session.execute(OWNED))["entitiesOwnedBy"]
            owned += [n["ref"] for n in page["nodes"]]
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
        BY_ANNOTATION.variable_values = {
            "annotations": {"github.com/project-slug": "juniper/checkout"}
        }
        found = (await session.execute(BY_ANNOTATION))["entities"]["nodes"]

    reference = served.graphql(
        "query($ref: String!) { ownership(ref: $ref) {"
        " ownerRef owner { ref } members { ref } chain { ref } } }",
        {"ref": CHECKOUT},
    )["ownership"]
    assert ownership == reference and ownership["members"]
    assert owned == served.owned("user:default/amelia.chen") and owned
    slug = {"github.com/project-slug": "juniper/checkout"}
    rows = await served.rows(
        "select ref, owner_ref from entities where annotations @> $1 order by lower(name), ref",
        slug,
    )
    assert found == [{"ref": r["ref"], "ownerRef": r["owner_ref"]} for r in rows] and found


async def test_gql_hears_a_refused_token(served: Served) -> None:
    transport = HTTPXAsyncTransport(
        url=f"{served.base}/graphql", headers={"authorization": "Bearer atr_nope_nope"}
    )
    async with Client(transport=transport) as session:
        OWNERSHIP.variable_values = {"ref": CHECKOUT}
        # The 401 carries a GraphQL error, which gql raises as such, code and all.
        with pytest.raises(TransportQueryError) as refused:
            await session.execute(OWNERSHIP)
    [error] = refused.value.errors or []
    assert error["extensions"]["code"] == "UNAUTHENTICATED" and "token" in error["message"]


# ---------------------------------------------------------- atrium owner, atrium lookup


def atrium(
    served: Served, *args: str, token: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The command as a script runs it: the API's address and token in the environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATRIUM_")}
    env |= {"ATRIUM_URL": served.base, "ATRIUM_TOKEN": token or served.token}
    return subprocess.run(
        [sys.executable, "-m", "atrium.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )


def test_atrium_owner_says_who_owns_an_entity(served: Served) -> None:
    reference = served.graphql(
        "query($ref: String!) { ownership(ref: $ref) { ownerRef members { ref } chain { ref } } }",
        {"ref": CHECKOUT},
    )["ownership"]
    text = atrium(served, "owner", "component:checkout")
    assert text.returncode == 0, text.stderr
    lines = [line.split("\t") for line in text.stdout.splitlines()]
    assert all(len(line) == 4 for line in lines)
    assert [(role, ref) for role, ref, _, _ in lines] == [
        ("owner", reference["ownerRef"]),
        *(("member", m["ref"]) for m in reference["members"]),
        *(("parent", g["ref"]) for g in reference["chain"]),
    ]
    as_json = atrium(served, "owner", "component:checkout", "--json")
    answer = orjson.loads(as_json.stdout)
    assert answer["ref"] == CHECKOUT and answer["owner"]["ref"] == reference["ownerRef"]
    assert [m["ref"] for m in answer["members"]] == [m["ref"] for m in reference["members"]]
    assert all(m["email"] for m in answer["members"])


def test_atrium_owner_fails_clearly(served: Served) -> None:
    missing = atrium(served, "owner", "component:no-such-thing")
    assert missing.returncode == 1 and "no entity component:no-such-thing" in missing.stderr
    person = atrium(served, "owner", "user:amelia.chen")
    assert person.returncode == 1 and "has no owner" in person.stderr
    refused = atrium(served, "owner", "component:checkout", token="atr_nope_nope")
    assert refused.returncode == 1 and "token" in refused.stderr and not refused.stdout


async def test_atrium_lookup_finds_entities_by_annotation_and_label(served: Served) -> None:
    found = atrium(served, "lookup", "--annotation", "github.com/project-slug=juniper/checkout")
    assert found.returncode == 0, found.stderr
    rows = await served.rows(
        "select ref, owner_ref from entities where annotations @> $1 order by lower(name), ref",
        {"github.com/project-slug": "juniper/checkout"},
    )
    assert found.stdout.splitlines() == [f"{r['ref']}\t{r['owner_ref']}" for r in rows]
    labelled = atrium(served, "lookup", "--label", "tier=1", "--kind", "component", "--json")
    answer = orjson.loads(labelled.stdout)
    assert [e["ref"] for e in answer] == served.refs(
        {"kind": ["component"], "labels": {"tier": "1"}}
    )
    assert all(e["owner"] for e in answer)
    nothing = atrium(served, "lookup", "--annotation", "github.com/project-slug=nobody/nothing")
    assert nothing.returncode == 1 and not nothing.stdout


@pytest.mark.parametrize("command", ["owner", "lookup"])
def test_lookup_commands_have_help(command: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "atrium.cli", command, "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert result.returncode == 0 and result.stdout.startswith(f"usage: atrium {command}")
    assert "ATRIUM_URL" in result.stdout and "ATRIUM_TOKEN" in result.stdout
