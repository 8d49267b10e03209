"""The deployments plugin's part of Viewer.attention and Group.attention: failed stages
(critical in production), deploys stuck in flight, releases waiting for production, over
pipelines declared in YAML, set through the API and seen only in deploys; in one statement
however many components a team owns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from plugins.deployments import DeploymentsPlugin
from plugins.deployments.settings import DeploymentSettings
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from tests.conftest import AppFactory, Client

ORG = """
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-a}
spec: {type: team, members: [alice], children: [team-a-sre]}
---
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-a-sre}
spec: {type: team, members: [bob]}
---
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-b}
spec: {type: team, members: [mallory]}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: checkout}
spec:
  type: service
  lifecycle: production
  owner: team-a
  pipeline: [canary, staging, production]
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: ledger}
spec: {type: service, lifecycle: production, owner: team-a}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: search}
spec: {type: service, lifecycle: production, owner: team-a-sre}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: quiet}
spec: {type: service, lifecycle: production, owner: team-a}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: other}
spec: {type: service, lifecycle: production, owner: team-b}
"""
QUERY = """query($n: Int!) { viewer { attention(first: $n) {
  entity { ref } level title detail since href source } } }"""
NOW = datetime.now(UTC)


@pytest.fixture(autouse=True)
def clock() -> None:
    """Times are minutes before the test starts (a stuck deploy's age is read against now)."""
    global NOW
    NOW = datetime.now(UTC).replace(microsecond=0)


def ago(minutes: float) -> datetime:
    return NOW - timedelta(minutes=minutes)


class History:
    """Releases and deploys written straight into the plugin's tables."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.releases: dict[tuple[str, str], int] = {}
        self.deploys = 0

    async def deploy(
        self,
        name: str,
        version: str,
        stage: str,
        state: str,
        started: datetime,
        *,
        production: bool = False,
        message: str | None = None,
    ) -> None:
        ref = f"component:default/{name}"
        if (ref, version) not in self.releases:
            self.releases[ref, version] = await self.db.fetchval(
                "insert into deployment_releases (component_ref, version, created_at)"
                " values ($1, $2, $3) returning id",
                ref,
                version,
                started - timedelta(minutes=1),
            )
        self.deploys += 1
        finished = None if state in ("pending", "in_progress") else started + timedelta(minutes=2)
        await self.db.execute(
            "insert into deployment_deploys (component_ref, stage, production, release_id, state,"
            " started_at, finished_at, source, external_id, message)"
            " values ($1, $2, $3, $4, $5, $6, $7, 'webhook', $8, $9)",
            ref,
            stage,
            production,
            self.releases[ref, version],
            state,
            started,
            finished,
            f"d-{self.deploys}",
            message,
        )


async def start(make_client: AppFactory) -> Client:
    # No background checks of rollouts: every statement counted is the query's.
    settings = DeploymentSettings(
        deployments_progress_deadline=600, deployments_check_interval=3600
    )
    client: Client = await make_client(plugins=[DeploymentsPlugin(settings)])
    assert not (await apply_batch(client.services.db, parse_documents(ORG, "org.yaml"))).errors
    return client


async def attention(client: Client, user: str, n: int = 50) -> list[dict[str, Any]]:
    body = await client.gql(QUERY, {"n": n}, user=user)
    return body["data"]["viewer"]["attention"]  # type: ignore[no-any-return]


async def test_failed_stuck_and_waiting_deploys_of_a_team(make_client: AppFactory) -> None:
    client = await start(make_client)
    db = client.services.db
    history = History(db)
    # checkout (pipeline in its YAML: canary, staging, production): production runs 1.9.0,
    # 1.9.1 passed staging since, and 2.0.0 failed in staging.
    for version, at in (("1.9.0", 300), ("1.9.1", 200)):
        await history.deploy("checkout", version, "canary", "succeeded", ago(at))
        await history.deploy("checkout", version, "staging", "succeeded", ago(at - 10))
    await history.deploy("checkout", "1.9.0", "production", "succeeded", ago(280), production=True)
    await history.deploy("checkout", "2.0.0", "canary", "succeeded", ago(100))
    await history.deploy(
        "checkout", "2.0.0", "staging", "failed", ago(90), message="integration tests failed"
    )
    # ledger (pipeline set through the API: staging, prod-eu): 3.1.0 failed in prod-eu, so it
    # does not also wait; 3.2.0 has been rolling out to staging for ten minutes.
    await db.execute(
        "insert into deployment_pipelines (component_ref, stages) values ($1, $2::jsonb)",
        "component:default/ledger",
        [{"name": "staging"}, {"name": "prod-eu", "production": True}],
    )
    await history.deploy("ledger", "3.0.0", "staging", "succeeded", ago(500))
    await history.deploy("ledger", "3.0.0", "prod-eu", "succeeded", ago(490), production=True)
    await history.deploy("ledger", "3.1.0", "staging", "succeeded", ago(60))
    await history.deploy(
        "ledger", "3.1.0", "prod-eu", "failed", ago(50), production=True, message="probe failed"
    )
    await history.deploy("ledger", "3.2.0", "staging", "in_progress", ago(10))
    # search (no pipeline: the stages its deploys went to): 5.0.0 passed staging and waits;
    # a deploy pending for a minute is not stuck yet.
    await history.deploy("search", "4.9.0", "staging", "succeeded", ago(400))
    await history.deploy("search", "4.9.0", "production", "succeeded", ago(390), production=True)
    await history.deploy("search", "5.0.0", "staging", "succeeded", ago(30))
    await history.deploy("search", "5.0.1", "staging", "pending", ago(1))
    # quiet: a failure long fixed; other (team-b's) failed, but is not the viewer's.
    await history.deploy("quiet", "0.1.0", "production", "failed", ago(900), production=True)
    await history.deploy("quiet", "0.1.1", "production", "succeeded", ago(800), production=True)
    await history.deploy("other", "9.0.0", "production", "failed", ago(5), production=True)

    found = await attention(client, "bob")
    shown = [(a["entity"]["ref"].split("/")[1], a["level"], a["title"]) for a in found]
    assert shown == [
        ("ledger", "CRITICAL", "Deploy of 3.1.0 to prod-eu failed"),
        ("ledger", "WARNING", "Deploy of 3.2.0 to staging is stuck"),
        ("checkout", "WARNING", "Deploy of 2.0.0 to staging failed"),
        ("search", "NOTICE", "5.0.0 waits for production"),
        ("checkout", "NOTICE", "1.9.1 waits for production"),
    ]
    by_title = {a["title"]: a for a in found}
    failed = by_title["Deploy of 2.0.0 to staging failed"]
    assert failed["detail"] == "integration tests failed" and failed["source"] == "deployments"
    assert failed["href"] == "/catalog/default/component/checkout#deployments"
    assert datetime.fromisoformat(failed["since"]) == ago(88)  # when it finished
    stuck = by_title["Deploy of 3.2.0 to staging is stuck"]
    assert stuck["detail"] == "In progress for 10 minutes"
    assert datetime.fromisoformat(stuck["since"]) == ago(10)
    waits = by_title["1.9.1 waits for production"]
    assert waits["detail"] == "It passed staging; production runs 1.9.0."
    assert datetime.fromisoformat(waits["since"]) == ago(188)  # when it passed staging
    assert by_title["Deploy of 3.1.0 to prod-eu failed"]["detail"] == "probe failed"

    # alice is in team-a: not team-a-sre's search. mallory sees team-b's failure.
    assert "search" not in {
        a["entity"]["ref"].split("/")[1] for a in await attention(client, "alice")
    }
    [other] = await attention(client, "mallory")
    assert (other["level"], other["title"]) == ("CRITICAL", "Deploy of 9.0.0 to production failed")

    # Promoted: 1.9.1 no longer waits; several waiting are said as one.
    await history.deploy("checkout", "1.9.1", "production", "succeeded", ago(5), production=True)
    await history.deploy("search", "5.0.2", "staging", "succeeded", ago(3))
    titles = [a["title"] for a in await attention(client, "bob")]
    assert "1.9.1 waits for production" not in titles
    [search] = [a for a in await attention(client, "bob") if "waits" in a["title"]]
    assert search["title"] == "5.0.2 waits for production"
    assert search["detail"] == "2 releases passed staging and wait; production runs 4.9.0."
    assert datetime.fromisoformat(search["since"]) == ago(28)  # the first one's


async def test_one_statement_for_a_team_of_one_component_or_forty(
    make_client: AppFactory,
) -> None:
    client = await start(make_client)
    db = client.services.db
    many = "".join(
        "\n---\napiVersion: backstage.io/v1alpha1\nkind: Component\n"
        f"metadata: {{name: svc-{i:02d}}}\n"
        "spec: {type: service, lifecycle: production, owner: team-b,"
        " pipeline: [staging, production]}"
        for i in range(40)
    )
    assert not (await apply_batch(db, parse_documents(many.strip("\n-"), "many.yaml"))).errors
    history = History(db)
    for i in range(40):
        await history.deploy(f"svc-{i:02d}", "1.0.0", "staging", "failed", ago(i + 1))
    await history.deploy("quiet", "1.0.0", "staging", "failed", ago(1))

    async def statements(user: str) -> tuple[int, int]:
        client.services.caches.clear_local()
        before = db.queries
        found = await attention(client, user, 100)
        return len(found), int(db.queries - before)

    # alice owns quiet and two more through team-a; mallory forty and other through team-b.
    (few, one), (forty, many_statements) = await statements("alice"), await statements("mallory")
    assert (few, forty) == (1, 40)
    assert one == many_statements, (one, many_statements)
    # Her groups, what they own, their entities, and the deploys: one statement for these.
    assert many_statements == 4, many_statements
