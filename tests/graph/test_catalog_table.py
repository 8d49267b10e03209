"""The catalog as a table: every order paged with cursors under filters and a search, cursors
kept to their order, and the refs filter."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from tests.conftest import Client

# (order, the column it sorts on, as plain SQL over entities) — written here independently of
# the code under test, which reads pages as ranges of indexes kind by kind.
ORDERS = {
    "NAME": "lower(name)",
    "TITLE": "lower(coalesce(title, name))",
    "KIND": "kind",
    "OWNER": "owner_ref",
    "SYSTEM": "system_ref",
    "LIFECYCLE": "lifecycle",
    "TYPE": "spec_type",
}
FILTERS: list[dict[str, Any]] = [
    {"kind": ["component", "Resource", "user", "group", "Component"]},  # several kinds
    {"kind": ["component"]},  # one kind
    {"namespace": ["default"]},  # every kind
]
SEARCH = "payments"
PAGE = """
query Page($filter: EntityFilter, $search: String, $order: EntityOrder, $after: String) {
  entities(filter: $filter, search: $search, orderBy: $order, first: 3, after: $after) {
    totalCount
    edges { cursor node { ref } }
    pageInfo { hasNextPage endCursor }
  }
}
"""
ALL = """
query All($filter: EntityFilter, $search: String) {
  entities(filter: $filter, search: $search, orderBy: NAME_ASC, first: 100) {
    totalCount nodes { ref }
  }
}
"""


def organisation() -> str:
    """Entities whose sort keys tie, differ in case, and are missing: users and groups have
    no owner, system or lifecycle, users no type, resources no lifecycle, some components no
    system and some no title."""
    docs = [
        "kind: Group\nmetadata: {name: team-a}\nspec: {type: team}",
        "kind: Group\nmetadata: {name: team-b, title: Bravo Team}\nspec: {type: team}",
        "kind: System\nmetadata: {name: sys-x}\nspec: {owner: team-a, type: product}",
        "kind: System\nmetadata: {name: sys-y, description: payments platform}\n"
        "spec: {owner: team-b}",
    ]
    for i in range(3):
        desc = ", description: payments engineer" if i == 1 else ""
        docs.append(f"kind: User\nmetadata: {{name: u{i}{desc}}}\nspec: {{memberOf: [team-a]}}")
    titles = ["Zebra", None, "alpha", "Alpha", "Mid point", None, "beta", "zebra"]
    owners = ["team-a", "team-b", "user:u1", "team-a"]
    systems = ["sys-x", "sys-y", None]
    lifecycles = ["production", "experimental", "deprecated"]
    types = ["service", "website", "library", "service", "website"]
    for i in range(14):
        title = f", title: {titles[i % 8]}" if titles[i % 8] else ""
        desc = ", description: payments service" if i % 2 == 0 else ""
        system = f", system: {systems[i % 3]}" if systems[i % 3] else ""
        docs.append(
            f"kind: Component\nmetadata: {{name: c{i:02d}{title}{desc}}}\n"
            f"spec: {{type: {types[i % 5]}, lifecycle: {lifecycles[i % 3]}, "
            f"owner: {owners[i % 4]}{system}}}"
        )
    for i in range(4):
        desc = ", description: payments ledger" if i % 2 == 0 else ""
        system = ", system: sys-x" if i < 2 else ""
        docs.append(
            f"kind: Resource\nmetadata: {{name: r{i}{desc}}}\n"
            f"spec: {{type: {['database', 'bucket'][i % 2]}, owner: team-b{system}}}"
        )
    return "\n---\n".join(f"apiVersion: backstage.io/v1alpha1\n{doc}" for doc in docs)


@pytest.fixture
async def table(client: Client) -> Client:
    result = await apply_batch(client.services.db, parse_documents(organisation(), "org.yaml"))
    assert not result.errors and len(result.created) == 25
    return client


async def walk(
    client: Client, order: str, filter: dict[str, Any], search: str | None
) -> tuple[list[str], int]:
    """Every ref, page by page, following endCursor; and the total the pages said."""
    seen: list[str] = []
    after = None
    totals = set()
    for _ in range(50):
        page = (
            await client.gql(
                PAGE, {"filter": filter, "search": search, "order": order, "after": after}
            )
        )["data"]["entities"]
        totals.add(page["totalCount"])
        seen += [edge["node"]["ref"] for edge in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            assert len(totals) == 1
            return seen, totals.pop()
        after = page["pageInfo"]["endCursor"]
        assert after == page["edges"][-1]["cursor"]
    raise AssertionError("more pages than entities")


async def expected(
    client: Client, column: str, descending: bool, filter: dict[str, Any], search: str | None
) -> list[str]:
    """The matching refs sorted whole by PostgreSQL: the key, those without one last in
    either direction, then the ref."""
    matching = (await client.gql(ALL, {"filter": filter, "search": search}))["data"]["entities"]
    refs = [node["ref"] for node in matching["nodes"]]
    assert len(refs) == matching["totalCount"] > 3
    direction = "desc" if descending else "asc"
    rows = await client.services.db.fetch(
        f"select ref from entities where ref = any($1::text[])"
        f" order by {column} {direction} nulls last, ref {direction}",
        refs,
    )
    return [row["ref"] for row in rows]


@pytest.mark.parametrize("order", [f"{o}_{d}" for o in ORDERS for d in ("ASC", "DESC")])
async def test_every_order_pages_through_every_entity_once_in_order(
    table: Client, order: str
) -> None:
    name, _, direction = order.rpartition("_")
    for filter in FILTERS:
        for search in (None, SEARCH):
            want = await expected(table, ORDERS[name], direction == "DESC", filter, search)
            seen, total = await walk(table, order, filter, search)
            assert seen == want, (filter, search)
            assert total == len(want)


async def test_keys_missing_sort_last_and_titles_fall_back_to_names(table: Client) -> None:
    query = """query($o: EntityOrder) { entities(orderBy: $o, first: 100) { nodes {
        ref kind name title ... on Component { ownerRef type lifecycle } } } }"""

    async def refs(order: str) -> list[dict[str, Any]]:
        body = await table.gql(query, {"o": order})
        return body["data"]["entities"]["nodes"]  # type: ignore[no-any-return]

    for direction in ("ASC", "DESC"):
        by_owner = await refs(f"OWNER_{direction}")
        # Users and groups own nothing and have no owner: after everything that has one.
        assert {n["kind"] for n in by_owner[-5:]} == {"User", "Group"}
        assert "User" not in {n["kind"] for n in by_owner[:-5]}
        by_lifecycle = [n for n in await refs(f"LIFECYCLE_{direction}") if n["kind"] == "Component"]
        lifecycles = [n["lifecycle"] for n in by_lifecycle]
        assert lifecycles == sorted(lifecycles, reverse=direction == "DESC")
    by_title = await refs("TITLE_ASC")
    shown = [(n["title"] or n["name"]).lower() for n in by_title]
    assert shown == sorted(shown)
    # "alpha" and "Alpha" tie: the ref decides.
    assert [n["name"] for n in by_title[:4]] == ["c02", "c03", "c10", "c11"]
    assert by_title[0]["title"] == "alpha" and by_title[1]["title"] == "Alpha"
    assert [n["kind"] for n in (await refs("KIND_DESC"))[:3]] == ["User"] * 3


def _cursor(value: Any) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(value)).decode()


async def test_a_cursor_is_refused_by_another_order(table: Client) -> None:
    page = (await table.gql(PAGE, {"order": "TITLE_ASC"}))["data"]["entities"]
    cursor = page["pageInfo"]["endCursor"]
    searched = await table.gql(PAGE, {"search": SEARCH})
    offset = searched["data"]["entities"]["pageInfo"]["endCursor"]
    refused = [
        ("OWNER_ASC", cursor, None),
        ("TITLE_DESC", cursor, None),  # the direction is part of the order
        ("NAME_ASC", cursor, None),
        ("NAME_ASC", offset, None),  # a relevance offset
        ("RELEVANCE", cursor, SEARCH),
        ("TITLE_ASC", _cursor(["title", None, "component:default/c00"]), None),  # no key
        ("OWNER_ASC", _cursor(["owner", "group:default/team-a"]), None),
        ("OWNER_ASC", _cursor(["owner", "a\x00", "component:default/c00"]), None),
    ]
    for order, after, search in refused:
        body = await table.gql(
            PAGE, {"order": order, "after": after, "search": search}, expect_errors=True
        )
        [error] = body["errors"]
        assert error["extensions"]["code"] == "BAD_USER_INPUT", (order, after)
        assert error["message"].startswith("after:"), error
    # The cursor goes on in its own order.
    again = await table.gql(PAGE, {"order": "TITLE_ASC", "after": cursor})
    assert again["data"]["entities"]["edges"]


async def test_name_cursors_from_before_orders_named_themselves_still_page(table: Client) -> None:
    # As this API wrote them: [lower(name), ref]; pages open in browsers still hold them.
    legacy = _cursor(["c03", "component:default/c03"])
    body = await table.gql(PAGE, {"after": legacy, "filter": {"kind": ["component"]}})
    refs = [edge["node"]["ref"] for edge in body["data"]["entities"]["edges"]]
    assert refs == ["component:default/c04", "component:default/c05", "component:default/c06"]
    cursor = body["data"]["entities"]["pageInfo"]["endCursor"]
    assert orjson.loads(base64.urlsafe_b64decode(cursor)) == [
        "name",
        "c06",
        "component:default/c06",
    ]


REFS = """query($refs: [String!], $kind: [String!]) {
  entities(filter: {refs: $refs, kind: $kind}, first: 100) { totalCount nodes { ref } }
  facets(field: KIND, filter: {refs: $refs, kind: $kind}) { value count }
}"""


async def test_the_refs_filter_takes_only_those_entities(table: Client) -> None:
    refs = ["Component:C01", "component:default/c02", "resource:r0", "group:nobody", "user:u2"]
    body = (await table.gql(REFS, {"refs": refs}))["data"]
    found = [node["ref"] for node in body["entities"]["nodes"]]
    assert found == [
        "component:default/c01",
        "component:default/c02",
        "resource:default/r0",
        "user:default/u2",
    ]
    assert body["entities"]["totalCount"] == 4
    assert {f["value"]: f["count"] for f in body["facets"]} == {
        "Component": 2,
        "Resource": 1,
        "User": 1,
    }
    # With the other filters, as any filter combines: AND.
    both = (await table.gql(REFS, {"refs": refs, "kind": ["component"]}))["data"]
    assert both["entities"]["totalCount"] == 2
    assert both["facets"] == [{"value": "Component", "count": 2}]
    # An empty list matches nothing.
    none = (await table.gql(REFS, {"refs": []}))["data"]
    assert none["entities"] == {"totalCount": 0, "nodes": []} and none["facets"] == []


async def test_refs_must_be_whole_and_few(table: Client) -> None:
    limit = table.services.settings.max_page_size
    cases = [
        (["c01"], "needs a kind"),
        (["component:default/c01", "nope:x"], "unknown kind"),
        ([f"component:c{i}" for i in range(limit + 1)], f"at most {limit}"),
    ]
    for refs, message in cases:
        body = await table.gql(REFS, {"refs": refs}, expect_errors=True)
        assert body["errors"], refs
        for error in body["errors"]:
            assert message in error["message"], (refs, error)
            assert error["extensions"]["code"] == "BAD_USER_INPUT"
    exactly = [f"component:c{i:02d}" for i in range(limit)]
    assert (await table.gql(REFS, {"refs": exactly}))["data"]["entities"]["totalCount"] == 14
