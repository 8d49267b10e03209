"""Imports at the same time, as several tools or replicas send them, never deadlock: every
transaction takes the rows it shares with the others (facet counts, an owner's relations) in
the same order, and two that replace the same location take turns."""

from __future__ import annotations

import asyncio

from tests.conftest import AppFactory

APPLY = """mutation($y: String!, $at: String!) {
  applyEntities(yaml: $y, location: $at) { created errors { message } } }"""


def _components(batch: int, owners: list[str]) -> str:
    documents = [
        "apiVersion: backstage.io/v1alpha1\nkind: Component\n"
        f"metadata: {{name: svc-{batch}-{i}, tags: [t{i % 3}, t{(i + batch) % 5}]}}\n"
        f"spec: {{type: service, lifecycle: production, owner: {owners[(i + batch) % 3]}, "
        f"system: sys-{i % 2}, dependsOn: ['component:svc-{(batch + 1) % 8}-{i}']}}\n"
        for i in range(12)
    ]
    return "---\n".join(reversed(documents) if batch % 2 else documents)


async def test_concurrent_imports_sharing_owners_and_tags_all_commit(
    make_client: AppFactory,
) -> None:
    client = await make_client(database_pool_max=10)
    token = await client.admin_token()
    owners = ["team-a", "team-b", "team-c"]
    for _ in range(2):  # created, then all updated at once (owners move)
        bodies = await asyncio.gather(
            *(
                client.gql(
                    APPLY, {"y": _components(batch, owners), "at": f"tool-{batch}"}, token=token
                )
                for batch in range(8)
            )
        )
        for body in bodies:
            assert body["data"]["applyEntities"]["errors"] == []
        owners = owners[1:] + owners[:1]
    counts = await client.services.db.fetch(
        "select value, count from facet_counts where field = 'owner' and kind = 'Component'"
        " order by value"
    )
    assert [(r["value"], r["count"]) for r in counts] == [
        (f"group:default/team-{x}", 32) for x in "abc"
    ]


async def test_concurrent_applies_of_one_location_take_turns(make_client: AppFactory) -> None:
    """Each replaces the location's entities: the last to commit is what the location holds."""
    client = await make_client(database_pool_max=10)
    token = await client.admin_token()
    bodies = await asyncio.gather(
        *(
            client.gql(APPLY, {"y": _components(batch, ["team-a"] * 3), "at": "one"}, token=token)
            for batch in range(6)
        )
    )
    assert all(body["data"]["applyEntities"]["errors"] == [] for body in bodies)
    held = await client.services.db.fetch("select ref from entities where origin = 'one'")
    prefixes = {row["ref"].rsplit("-", 1)[0] for row in held}
    assert len(held) == 12 and len(prefixes) == 1, prefixes
