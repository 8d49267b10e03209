"""A silence's id is the one client value that goes into Alertmanager's URLs (``DELETE
/api/v2/silence/{id}``), against a real Alertmanager: an id that is not a UUID is BAD_USER_INPUT
before any request (once one with a control character was an INTERNAL_SERVER_ERROR, httpx
refusing the URL, and ``../alerts`` reached another endpoint), the attempt audited (nobody is
told to sign in first); a UUID
Alertmanager does not know is NOT_FOUND; a real one in capitals is the same silence, for its
owners as for admins."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from plugins.observability.alertmanager import Alertmanager, silence_id
from tests.alertmanager import RunningAlertmanager
from tests.conftest import Client
from tests.plugins.test_observability_alerts import ALERTS, EXPIRE, SILENCE, env

__all__ = ["env"]  # the fixture, shared with the module it comes from

NIL = "00000000-0000-0000-0000-000000000000"
NOT_IDS = [
    "Ä\x18K",
    "../alerts",
    "../../-/reload",
    "a?b=1",
    "a#b",
    "%2e%2e%2falerts",
    "a\r\nX-Injected: 1",
    f"{NIL}/..",
    f"{NIL}?x",
    NIL.replace("-", ""),
    f"{{{NIL}}}",
    f"urn:uuid:{NIL}",
    "",
    "a" * 10_000,
]


def recorded(client: Client) -> list[httpx.Request]:
    """The requests the observability plugin sends from now on."""
    sent: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        sent.append(request)

    alertmanager = client.services.extras["observability"].alertmanager
    alertmanager.http.event_hooks = {"request": [record], "response": []}
    return sent


async def test_an_id_that_is_not_a_uuid_is_refused_before_any_request(
    env: tuple[Client, RunningAlertmanager],
) -> None:
    client, _ = env
    token = await client.admin_token()
    sent = recorded(client)
    for bad in NOT_IDS:
        for who in ({"token": token}, {"user": "bob"}):
            body = await client.gql(EXPIRE, {"id": bad}, expect_errors=True, **who)
            [error] = body["errors"]
            assert error["extensions"]["code"] == "BAD_USER_INPUT", (bad, who, error)
            assert "a silence id is a UUID" in error["message"]
        # Nobody hears that they must sign in before anything about what they sent.
        body = await client.gql(EXPIRE, {"id": bad}, expect_errors=True)
        [error] = body["errors"]
        assert error["extensions"]["code"] == "UNAUTHENTICATED", (bad, error)
    assert sent == []
    rows = await client.services.db.fetch(
        "select outcome from audit_log where action = 'observability.expireSilence' order by id"
    )
    assert [r["outcome"] for r in rows] == ["failed", "failed", "denied"] * len(NOT_IDS)


async def test_an_unknown_silence_is_not_found(env: tuple[Client, RunningAlertmanager]) -> None:
    client, _ = env
    token = await client.admin_token()
    sent = recorded(client)
    other = str(uuid.uuid4())
    for unknown in (NIL, other.upper()):
        body = await client.gql(EXPIRE, {"id": unknown}, token=token, expect_errors=True)
        [error] = body["errors"]
        assert error["extensions"]["code"] == "NOT_FOUND", error
        assert error["message"] == f"alertmanager has no silence {unknown.lower()}"
    assert [(r.method, r.url.path) for r in sent] == [
        ("DELETE", f"/api/v2/silence/{NIL}"),
        ("DELETE", f"/api/v2/silence/{other}"),
    ]


async def test_a_silence_in_capitals_is_the_same_silence(
    env: tuple[Client, RunningAlertmanager],
) -> None:
    client, _ = env
    variables = {"ref": "component:checkout", "name": "HighErrorRate", "why": "a fix is rolling"}
    made = (await client.gql(SILENCE, variables, user="bob"))["data"]["createSilence"]["id"]
    # Its owner may expire it by any spelling of its id: the owners are found all the same.
    assert (await client.gql(EXPIRE, {"id": made.upper()}, user="bob"))["data"] == {
        "expireSilence": True
    }
    for _ in range(50):
        body = await client.gql(ALERTS, {"ref": "component:checkout"})
        states = {a["name"]: a["state"] for a in body["data"]["entity"]["alerts"]}
        if states["HighErrorRate"] == "ACTIVE":
            break
        await asyncio.sleep(0.05)
    assert states["HighErrorRate"] == "ACTIVE"


async def test_the_client_puts_only_uuids_in_its_urls() -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200)

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        alertmanager = Alertmanager("http://alertmanager.test/", http, 1.0)
        for bad in NOT_IDS:
            with pytest.raises(ValueError, match="a silence id is a UUID"):
                await alertmanager.expire_silence(bad)
        assert sent == []
        await alertmanager.expire_silence(NIL.upper())
    assert [str(r.url) for r in sent] == [f"http://alertmanager.test/api/v2/silence/{NIL}"]
    assert silence_id(NIL.upper()) == NIL
