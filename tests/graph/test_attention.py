"""Viewer.attention and Group.attention over probe plugins' providers: what the refs are
(transitive ownership, subgroups for a group), the order (level, then newest) and `first`,
providers that raise or hang left out while the others answer, nobody's empty list, answers
never kept, and SQL independent of how many components a team owns."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from graph.plugin import (
    AttentionItem,
    AttentionLevel,
    Context,
    PluginBuilder,
    entity,
    entity_href,
)
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
spec: {type: service, lifecycle: production, owner: team-a-sre}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: ledger}
spec: {type: service, lifecycle: production, owner: team-a}
---
apiVersion: backstage.io/v1alpha1
kind: API
metadata: {name: ledger-api}
spec: {type: openapi, lifecycle: production, owner: team-a, definition: x}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: search}
spec: {type: service, lifecycle: production, owner: team-b}
"""
CHECKOUT, LEDGER, SEARCH = (f"component:default/{n}" for n in ("checkout", "ledger", "search"))
VIEWER = """query($n: Int!) { viewer { attention(first: $n) {
  entity { ref } level title detail since href source } } }"""
GROUP = """query($ref: String!, $n: Int!) { entity(ref: $ref) { ... on Group {
  attention(first: $n) { entity { ref } level title source } } } }"""

Provider = Callable[[Context, Sequence[str]], Awaitable[list[AttentionItem]]]
NOW = datetime.now(UTC).replace(microsecond=0)


class Probe:
    """A plugin whose provider is the test's; it records the refs it was asked about."""

    def __init__(self, id: str, answer: Callable[[Sequence[str]], Awaitable[Any]]) -> None:
        self.id = id
        self.answer = answer
        self.asked: list[list[str]] = []

    def setup(self, builder: PluginBuilder) -> None:
        async def provider(context: Context, refs: Sequence[str]) -> Any:
            self.asked.append(list(refs))
            return await self.answer(refs)

        builder.attention(provider)


def items(*found: AttentionItem) -> Callable[[Sequence[str]], Awaitable[list[AttentionItem]]]:
    async def answer(refs: Sequence[str]) -> list[AttentionItem]:
        return [i for i in found if i.ref in refs]

    return answer


def ago(minutes: int) -> datetime:
    return NOW - timedelta(minutes=minutes)


async def start(make_client: AppFactory, *plugins: Any, **settings: Any) -> Client:
    client: Client = await make_client(plugins=list(plugins), **settings)
    assert not (await apply_batch(client.services.db, parse_documents(ORG, "org.yaml"))).errors
    return client


async def viewer(client: Client, user: str | None, n: int = 20) -> list[dict[str, Any]]:
    body = await client.gql(VIEWER, {"n": n}, user=user)
    return body["data"]["viewer"]["attention"]  # type: ignore[no-any-return]


async def test_most_severe_first_then_newest_and_first_bounds_the_list(
    make_client: AppFactory,
) -> None:
    deploys = Probe(
        "deploys",
        items(
            AttentionItem(
                CHECKOUT, AttentionLevel.NOTICE, "1.4.0 waits for production", since=ago(1)
            ),
            AttentionItem(CHECKOUT, AttentionLevel.CRITICAL, "old outage", since=ago(90)),
            AttentionItem(LEDGER, AttentionLevel.WARNING, "no date"),
            AttentionItem(LEDGER, AttentionLevel.WARNING, "recent", since=ago(5)),
            # Not the viewer's: never shown, whatever a provider answers.
            AttentionItem(SEARCH, AttentionLevel.CRITICAL, "someone else's"),
        ),
    )
    alerts = Probe(
        "alerts",
        items(
            AttentionItem(
                CHECKOUT,
                AttentionLevel.CRITICAL,
                "HighErrorRate: 5% of checkouts fail",
                detail="since the 14:02 deploy",
                since=ago(3),
                href=entity_href(CHECKOUT, "alerts"),
            )
        ),
    )
    client = await start(make_client, deploys, alerts)
    found = await viewer(client, "bob")
    assert [(a["level"], a["title"], a["source"]) for a in found] == [
        ("CRITICAL", "HighErrorRate: 5% of checkouts fail", "alerts"),
        ("CRITICAL", "old outage", "deploys"),
        ("WARNING", "recent", "deploys"),
        ("WARNING", "no date", "deploys"),
        ("NOTICE", "1.4.0 waits for production", "deploys"),
    ]
    first = found[0]
    assert first["entity"] == {"ref": CHECKOUT}
    assert first["detail"] == "since the 14:02 deploy"
    assert first["href"] == "/catalog/default/component/checkout#alerts"
    assert datetime.fromisoformat(first["since"]) == ago(3)
    assert found[3]["since"] is None and found[3]["detail"] is None
    # bob is in team-a-sre, below team-a: both teams' entities, and not team-b's, every kind,
    # components first.
    assert deploys.asked[-1] == [CHECKOUT, LEDGER, "api:default/ledger-api"]

    assert [a["title"] for a in await viewer(client, "bob", 2)] == [
        "HighErrorRate: 5% of checkouts fail",
        "old outage",
    ]
    assert await viewer(client, "bob", 0) == []
    for n in (-1, 101):
        body = await client.gql(VIEWER, {"n": n}, user="bob", expect_errors=True)
        assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", body
        assert "first must be between 0 and 100" in body["errors"][0]["message"]


async def test_a_failing_or_hanging_provider_is_left_out_and_logged_once(
    make_client: AppFactory, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(refs: Sequence[str]) -> list[AttentionItem]:
        raise RuntimeError("backend exploded")

    async def hanging(refs: Sequence[str]) -> list[AttentionItem]:
        await asyncio.sleep(3600)
        return []

    async def not_items(refs: Sequence[str]) -> list[Any]:
        return ["a string", AttentionItem(LEDGER, AttentionLevel.NOTICE, "kept")]

    good = Probe("good", items(AttentionItem(LEDGER, AttentionLevel.WARNING, "still here")))
    client = await start(
        make_client,
        Probe("broken", broken),
        Probe("hanging", hanging),
        Probe("sloppy", not_items),
        good,
        attention_timeout=0.5,
    )
    started = asyncio.get_running_loop().time()
    with caplog.at_level(logging.WARNING, logger="atrium.attention"):
        found = await viewer(client, "alice")
    assert asyncio.get_running_loop().time() - started < 3
    assert [(a["title"], a["source"]) for a in found] == [
        ("still here", "good"),
        ("kept", "sloppy"),
    ]
    said = [(r.levelname, r.getMessage(), getattr(r, "source", None)) for r in caplog.records]
    assert said.count(("ERROR", "an attention provider failed; left out", "broken")) == 1, said
    assert (
        said.count(("WARNING", "an attention provider did not answer in time; left out", "hanging"))
        == 1
    ), said
    assert any(s[2] == "sloppy" for s in said), said


async def test_nobody_gets_an_empty_list_and_no_provider_is_asked(make_client: AppFactory) -> None:
    probe = Probe("probe", items(AttentionItem(LEDGER, AttentionLevel.CRITICAL, "down")))
    client = await start(make_client, probe)
    assert await viewer(client, None) == []
    assert probe.asked == []
    # Someone owning nothing: no provider is asked either.
    assert await viewer(client, "nobody-at-all") == []
    assert probe.asked == []
    assert [a["title"] for a in await viewer(client, "alice")] == ["down"]


async def test_a_group_sees_what_its_subgroups_own(make_client: AppFactory) -> None:
    probe = Probe(
        "probe",
        items(
            AttentionItem(CHECKOUT, AttentionLevel.WARNING, "checkout is slow"),
            AttentionItem(SEARCH, AttentionLevel.WARNING, "search is slow"),
        ),
    )
    client = await start(make_client, probe)

    async def group(ref: str) -> list[str]:
        body = await client.gql(GROUP, {"ref": ref, "n": 20})
        return [a["entity"]["ref"] for a in body["data"]["entity"]["attention"]]

    assert await group("group:team-a") == [CHECKOUT]  # owned by team-a-sre, below it
    assert await group("group:team-a-sre") == [CHECKOUT]
    assert await group("group:team-b") == [SEARCH]
    # A member of team-a sees team-a's own (ledger), not its subgroup's.
    assert await viewer(client, "alice") == []
    assert probe.asked[-1] == [LEDGER, "api:default/ledger-api"]


async def test_answers_are_never_kept(make_client: AppFactory) -> None:
    probe = Probe("probe", items(AttentionItem(LEDGER, AttentionLevel.WARNING, "w")))
    client = await start(make_client, probe)
    headers = {"X-Forwarded-User": "alice"}
    for _ in range(2):
        asked = len(probe.asked)
        response = await client.persisted_get(VIEWER, {"n": 5}, headers)
        assert response.status_code == 200, response.text
        assert response.json()["data"]["viewer"]["attention"][0]["title"] == "w"
        assert response.headers["cache-control"] == "no-store"
        assert len(probe.asked) > asked  # asked again: nothing was kept
    group = await client.persisted_get(GROUP, {"ref": "group:team-a", "n": 5})
    assert group.headers["cache-control"] == "no-store"


ORG_OF = """
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {{name: big-team}}
spec: {{type: team, members: [carol]}}
---
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {{name: small-team}}
spec: {{type: team, members: [dave]}}
{components}"""
COMPONENT = """---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {{name: {name}}}
spec: {{type: service, lifecycle: production, owner: {owner}}}
"""


async def test_sql_does_not_grow_with_the_components_a_team_owns(
    make_client: AppFactory,
) -> None:
    async def each_one(context: Context, refs: Sequence[str]) -> list[AttentionItem]:
        # A provider reading every entity, as the bundled ones do (one batch, or none).
        found = await asyncio.gather(*(entity(context, ref) for ref in refs))
        return [
            AttentionItem(e.ref, AttentionLevel.WARNING, f"{e.name} is slow") for e in found if e
        ]

    class Reader:
        id = "reader"

        def setup(self, builder: PluginBuilder) -> None:
            builder.attention(each_one)

    client: Client = await make_client(plugins=[Reader()])
    components = "".join(COMPONENT.format(name=f"big-{i:02d}", owner="big-team") for i in range(40))
    components += COMPONENT.format(name="small-00", owner="small-team")
    documents = parse_documents(ORG_OF.format(components=components), "org.yaml")
    assert not (await apply_batch(client.services.db, documents)).errors
    db = client.services.db

    async def statements(user: str, expected: int) -> int:
        client.services.caches.clear_local()
        before = db.queries
        assert len(await viewer(client, user, 100)) == expected
        return int(db.queries - before)

    one, forty = await statements("dave", 1), await statements("carol", 40)
    assert one == forty, (one, forty)
    # The person's groups, what they own, and the entities: nothing per component.
    assert forty <= 3, forty
