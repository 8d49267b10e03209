"""Dataloaders keep SQL per request independent of the number of entities shown."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from tests.conftest import Client

LIST = """
query($n: Int!) {
  entities(filter: {kind: ["component"]}, first: $n) {
    totalCount
    nodes {
      ref title tags
      ... on Component {
        owner { ref ... on Group { parent { ref } members { ref } } }
        system { ref domain { ref } }
        dependencies { ref }
        dependents { ref }
        providesApis { ref consumers { ref } }
        consumesApis { ref }
      }
    }
  }
}
"""
# The same list, each row saying whether the person asking starred it.
STARRED_LIST = LIST.replace("ref title tags", "ref title tags viewerStarred")


def organisation(components: int) -> str:
    """A synthetic organisation: components spread over teams, systems and APIs."""
    docs = [
        "apiVersion: backstage.io/v1alpha1\nkind: Domain\nmetadata: {name: d}\nspec: {owner: eng}",
        "apiVersion: backstage.io/v1alpha1\nkind: Group\nmetadata: {name: eng}\nspec: {type: org}",
    ]
    for t in range(5):
        docs.append(
            f"apiVersion: backstage.io/v1alpha1\nkind: Group\nmetadata: {{name: team-{t}}}\nspec: {{type: team, parent: eng, members: [u{t}]}}"
        )
        docs.append(
            f"apiVersion: backstage.io/v1alpha1\nkind: User\nmetadata: {{name: u{t}}}\nspec: {{memberOf: [team-{t}]}}"
        )
        docs.append(
            f"apiVersion: backstage.io/v1alpha1\nkind: System\nmetadata: {{name: sys-{t}}}\nspec: {{owner: team-{t}, domain: d}}"
        )
    for i in range(components):
        t = i % 5
        docs.append(
            f"apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata: {{name: c{i:03d}, tags: [t{t}]}}\n"
            f"spec: {{type: service, lifecycle: production, owner: team-{t}, system: sys-{t},"
            f" dependsOn: ['component:c{(i + 1) % components:03d}'], providesApis: [api{i:03d}], consumesApis: [api{(i + 7) % components:03d}]}}"
        )
        docs.append(
            f"apiVersion: backstage.io/v1alpha1\nkind: API\nmetadata: {{name: api{i:03d}}}\n"
            f"spec: {{type: openapi, lifecycle: production, owner: team-{t}, definition: x}}"
        )
    return "\n---\n".join(docs)


@pytest.fixture
async def org_client(client: Client) -> Client:
    result = await apply_batch(client.services.db, parse_documents(organisation(60), "org.yaml"))
    assert not result.errors
    return client


async def queries_for(
    client: Client, n: int, *, cold: bool = True, query: str = LIST, user: str | None = None
) -> int:
    """SQL statements for a list of ``n`` components, on a cold in-process cache unless not
    ``cold``."""
    db = client.services.db
    if cold:
        client.services.caches.clear_local()
    before = db.queries
    body = await client.gql(query, {"n": n}, user=user)
    assert len(body["data"]["entities"]["nodes"]) == n
    return db.queries - before  # type: ignore[no-any-return]


async def test_one_and_fifty_entities_cost_the_same_queries(org_client: Client) -> None:
    one = await queries_for(org_client, 1)
    fifty = await queries_for(org_client, 50)
    assert one == fifty
    # list + count, then one relations and one entities query per level of nesting.
    assert fifty <= 12
    # Warm, every entity and relation comes from the in-process cache: the list and its
    # count are all that reach SQL.
    assert await queries_for(org_client, 50, cold=False) == 2


async def test_whether_the_viewer_starred_each_row_is_one_statement(org_client: Client) -> None:
    starred = ["component:c000", "component:c007", "component:c042"]
    for ref in starred:
        body = await org_client.gql(
            "mutation($r: String!) { starEntity(ref: $r) { ref } }", {"r": ref}, user="u1"
        )
        assert "errors" not in body
    plain = await queries_for(org_client, 50, user="u1")
    one = await queries_for(org_client, 1, query=STARRED_LIST, user="u1")
    fifty = await queries_for(org_client, 50, query=STARRED_LIST, user="u1")
    assert one == fifty == plain + 1
    body = await org_client.gql(STARRED_LIST, {"n": 50}, user="u1")
    shown = {n["ref"] for n in body["data"]["entities"]["nodes"] if n["viewerStarred"]}
    assert shown == {ref.replace(":", ":default/") for ref in starred}
    # Nobody has stars: nothing to ask.
    assert await queries_for(org_client, 50, query=STARRED_LIST) == plain


async def test_a_partly_warm_cache_costs_what_the_rows_do_not_hold(org_client: Client) -> None:
    """Keys the in-process cache holds are answered at once, so their rows run ahead of the
    others and a level may take a second batch: a few statements more than a cold cache (7
    against 6 here), as many whatever the number of rows."""
    cold = await queries_for(org_client, 50)
    org_client.services.caches.clear_local()
    await queries_for(org_client, 1, cold=False)  # warms one row's entities and relations
    partly = await queries_for(org_client, 50, cold=False)
    assert 2 < partly <= 2 * cold
    org_client.services.caches.clear_local()
    await queries_for(org_client, 1, cold=False)
    assert await queries_for(org_client, 10, cold=False) == partly


async def test_the_entity_page_is_a_handful_of_queries(org_client: Client) -> None:
    db = org_client.services.db
    before = db.queries
    await org_client.gql(
        '{ entity(ref: "component:c001") { ... on Component { owner { ref } system { ref } dependencies { ref } providesApis { ref } consumesApis { ref } } } }'
    )
    # entity, its relations (one batch), the related entities (one batch)
    assert db.queries - before == 3


def test_the_fixture_is_what_it_claims(tmp_path: Path) -> None:
    batch = parse_documents(organisation(3), "x.yaml")
    assert not batch.errors and len(batch.entities) == 2 + 15 + 6


async def test_background_jobs_statements_are_not_a_requests(make_client: Any) -> None:
    """Jobs run while requests do (change deliveries every second by default): what they send
    is counted apart, so the counts above are the requests' own."""
    client = await make_client(change_hooks_interval=0.05)
    db = client.services.db
    before = db.queries
    for _ in range(200):  # until the job has run a few rounds
        if db.job_queries >= 4:
            break
        await asyncio.sleep(0.05)
    assert db.job_queries >= 4
    assert db.queries == before
    # /metrics counts both.
    both = db.queries + db.job_queries
    metrics = (await client.get("/metrics")).text
    sent = next(line for line in metrics.splitlines() if line.startswith("atrium_sql_queries "))
    assert float(sent.split()[1]) >= both
