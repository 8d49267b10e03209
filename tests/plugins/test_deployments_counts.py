"""What the component page counts and how many statements it takes: the per-component deploy
counts the triggers keep (migration 0003) always equal count(*), and the page's SQL does not
grow with its stages or its deploys."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from plugins.deployments import DeploymentsPlugin
from plugins.deployments.plugin import MIGRATIONS
from plugins.deployments.settings import DeploymentSettings
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from sources.migrations import read_migrations
from tests.conftest import AppFactory, Client

COUNTED = """
select component_ref, stage, state, deploys from deployment_deploy_counts where deploys <> 0
order by 1, 2, 3
"""
COUNTED_BY_HAND = """
select component_ref, stage, state, count(*) as deploys from deployment_deploys
group by 1, 2, 3 order by 1, 2, 3
"""
RELEASE = """
insert into deployment_releases (component_ref, version, created_at)
values ($1, $2, $3) returning id
"""
# Deploys of a release: n of them, a minute apart, in the stages and states given in turn.
DEPLOYS = """
insert into deployment_deploys (component_ref, stage, production, release_id, state,
                                started_at, finished_at, source, external_id)
select $1, ($3::text[])[1 + (i - 1) % cardinality($3::text[])],
       ($3::text[])[1 + (i - 1) % cardinality($3::text[])] = 'production', $2,
       ($4::text[])[1 + (i - 1) % cardinality($4::text[])],
       $5::timestamptz + i * interval '1 minute', $5::timestamptz + i * interval '1 minute',
       'atrium', $1 || '-' || $6 || '-' || i
from generate_series(1, $7) i
"""
STAGES = ["canary", "staging", "production"]


@pytest.fixture
async def client(make_client: AppFactory) -> Client:
    settings = DeploymentSettings(deployments_check_interval=3600.0)
    return await make_client(plugins=[DeploymentsPlugin(settings)])  # type: ignore[no-any-return]


async def _deploys(
    db: Any, ref: str, n: int, *, stages: list[str], states: list[str], tag: str, at: datetime
) -> None:
    release = await db.fetchval(RELEASE, ref, f"{tag}.0", at - timedelta(hours=1))
    await db.execute(DEPLOYS, ref, release, stages, states, at, tag, n)


async def _same(db: Any) -> int:
    kept = [tuple(r) for r in await db.fetch(COUNTED)]
    assert kept == [tuple(r) for r in await db.fetch(COUNTED_BY_HAND)]
    return sum(r[3] for r in kept)


async def test_the_counts_follow_inserts_updates_deletes_and_a_purge(client: Client) -> None:
    db = client.services.db
    at = datetime(2026, 11, 1, tzinfo=UTC)
    states = ["succeeded", "failed", "succeeded", "in_progress"]
    for n, ref in enumerate(["component:default/a", "component:default/b", "component:default/c"]):
        await _deploys(db, ref, 40 + n, stages=STAGES, states=states, tag=f"{n}", at=at)
    assert await _same(db) == 40 + 41 + 42
    # A statement writing a single deploy.
    await _deploys(
        db, "component:default/a", 1, stages=["canary"], states=["pending"], tag="x", at=at
    )
    assert await _same(db) == 124

    # A deploy moving on (state), moved to another stage or component, and an update that
    # moves nothing.
    await db.execute(
        "update deployment_deploys set state = 'succeeded' where state = 'in_progress'"
        " and component_ref = 'component:default/a'"
    )
    await db.execute(
        "update deployment_deploys set stage = 'staging', component_ref = 'component:default/d'"
        " where id in (select id from deployment_deploys where component_ref = $1"
        " order by id limit 7)",
        "component:default/b",
    )
    await db.execute("update deployment_deploys set message = 'checked'")
    assert await _same(db) == 124

    # Deletes, then a purge of a component's whole history, then of everything.
    await db.execute(
        "delete from deployment_deploys where component_ref = $1 and state = 'failed'",
        "component:default/c",
    )
    total = await _same(db)
    assert total < 124
    await db.execute("delete from deployment_deploys where component_ref = 'component:default/a'")
    assert await _same(db) == total - 41
    await db.execute("truncate deployment_deploys cascade")
    assert await _same(db) == 0
    await _deploys(db, "component:default/e", 5, stages=STAGES, states=states, tag="e", at=at)
    assert await _same(db) == 5


def _catalog(stages: int) -> str:
    names = ", ".join(f"s{i}" for i in range(stages))
    return f"""
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {{name: team-p}}
spec: {{type: team}}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: few
  annotations: {{atrium.dev/pipeline: "s0, s1"}}
spec: {{type: service, lifecycle: production, owner: team-p}}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: many
  annotations: {{atrium.dev/pipeline: "{names}"}}
spec: {{type: service, lifecycle: production, owner: team-p}}
"""


PAGE = """query($ref: String!, $n: Int!) { entity(ref: $ref) { ... on Component {
  pipeline { stages { name current { id release { version } } latest { id state }
                      waiting { version } rollbackTo { version } } }
  deployments(first: $n) { totalCount edges { node { id state stage
    release { version } } } } } } }"""


async def test_the_component_pages_statements_do_not_grow_with_its_stages_or_deploys(
    client: Client,
) -> None:
    db = client.services.db
    assert not (await apply_batch(db, parse_documents(_catalog(6), "org.yaml"))).errors
    at = datetime.now(UTC) - timedelta(days=2)
    for ref, stages in (("component:default/few", 2), ("component:default/many", 6)):
        names = [f"s{i}" for i in range(stages)]
        for k in range(4):  # releases going through every stage; the last fails in the last
            states = ["succeeded"] * (stages - 1) + ["failed" if k == 3 else "succeeded"]
            at += timedelta(hours=1)
            await _deploys(db, ref, stages, stages=names, states=states, tag=f"{k}", at=at)

    async def statements(ref: str, n: int) -> tuple[int, dict[str, Any]]:
        client.services.caches.clear_local()
        before = db.queries
        answer = await client.gql(PAGE, {"ref": ref, "n": n})
        return int(db.queries - before), answer["data"]["entity"]

    few, small = await statements("component:default/few", 1)
    many, large = await statements("component:default/many", 20)
    assert len(small["pipeline"]["stages"]) == 2 and len(large["pipeline"]["stages"]) == 6
    assert len(small["deployments"]["edges"]) == 1 and len(large["deployments"]["edges"]) == 20
    assert large["deployments"]["totalCount"] == 24
    stages = {s["name"]: s for s in large["pipeline"]["stages"]}
    assert stages["s5"]["latest"]["state"] == "FAILED"
    assert stages["s5"]["current"]["release"]["version"] == "2.0"
    assert stages["s5"]["rollbackTo"]["version"] == "1.0"
    assert stages["s5"]["waiting"] == [{"version": "3.0"}]
    assert few == many, (few, many)


def test_the_index_on_the_deploys_is_built_online() -> None:
    """An index added to the deploys (millions of rows) is built concurrently: writes go on."""
    found = {m.version: m for m in read_migrations("deployments", MIGRATIONS)}
    assert found[4].online
    assert all("concurrently" in s for s in found[4].statements())
    assert not found[3].online  # tables and triggers, in one transaction
