"""overrideOnCall: owners only, audited with what it changed, stored in the plugin's table, and
dropping cached answers at once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

OVERRIDE = """
mutation ($component: String!, $primary: String!, $until: DateTime!, $reason: String) {
  overrideOnCall(component: $component, primary: $primary, until: $until, reason: $reason) {
    primaryRef until override { by reason until }
  }
}
"""

PRIMARY = """
query OnCallPrimary($ref: String!) {
  entity(ref: $ref) { ... on Component { onCall { primaryRef override { reason } } } }
}
"""

AUDIT = """
query ($target: String!) {
  auditLog(target: $target, action: "oncall.override") { actor outcome before after }
}
"""

REF = "component:default/small-svc-01"


def _until(hours: float = 2) -> str:
    return (datetime.now(UTC) + timedelta(hours=hours)).replace(microsecond=0).isoformat()


async def test_an_owner_overrides_and_the_audit_log_shows_the_override(oncall: Any) -> None:
    lead = oncall.as_user("lead", groups=["small"])
    until = _until()
    changes = (
        {"primary": "small-ann", "until": until, "reason": "bob is on a plane"},
        {"primary": "user:default/small-cat", "until": until, "reason": None},
    )
    for change in changes:
        answer = await lead.gql(OVERRIDE, {"component": REF, **change})
        override = answer["data"]["overrideOnCall"]
        assert override["until"] == until
        assert override["override"] == {
            "by": "user:default/lead",
            "reason": change["reason"],
            "until": until,
        }
    assert override["primaryRef"] == "user:default/small-cat"
    rows = await oncall.services.db.fetch("select component_ref, primary_ref from oncall_overrides")
    assert [tuple(r) for r in rows] == [(REF, "user:default/small-cat")]
    admin = oncall.as_user("root", groups=["admins"])
    entries = (await admin.gql(AUDIT, {"target": REF}))["data"]["auditLog"]
    # Newest first; the plugin's snapshot pictures the override, not the component's row.
    assert [e["outcome"] for e in entries] == ["allowed", "allowed"]
    second, first = entries
    assert first["actor"] == "user:default/lead"
    assert first["before"] is None
    assert first["after"]["primary"] == "user:default/small-ann"
    assert first["after"]["reason"] == "bob is on a plane"
    assert second["before"] == first["after"]
    assert second["after"]["primary"] == "user:default/small-cat"


async def test_others_are_refused_and_audited_and_nothing_changes(oncall: Any) -> None:
    stranger = oncall.as_user("mallory", groups=["large"])
    answer = await stranger.gql(
        OVERRIDE,
        {"component": REF, "primary": "small-ann", "until": _until()},
        expect_errors=True,
    )
    assert answer["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert await oncall.services.db.fetchval("select count(*) from oncall_overrides") == 0
    admin = oncall.as_user("root", groups=["admins"])
    entries = (await admin.gql(AUDIT, {"target": REF}))["data"]["auditLog"]
    assert [(e["actor"], e["outcome"]) for e in entries] == [("user:default/mallory", "denied")]


async def test_bad_overrides_are_the_clients_errors(oncall: Any) -> None:
    lead = oncall.as_user("lead", groups=["small"])
    cases = [
        ({"primary": "nobody-here", "until": _until()}, "NOT_FOUND"),
        ({"primary": "small-ann", "until": _until(-1)}, "BAD_USER_INPUT"),
        ({"primary": "small-ann", "until": _until(24 * 60)}, "BAD_USER_INPUT"),
        ({"primary": "small-ann", "until": "2030-01-01T00:00:00"}, "BAD_USER_INPUT"),
        ({"primary": "group:small", "until": _until()}, "NOT_FOUND"),
        ({"primary": "small-ann", "until": _until(), "reason": "x" * 501}, "BAD_USER_INPUT"),
    ]
    for variables, code in cases:
        answer = await lead.gql(OVERRIDE, {"component": REF, **variables}, expect_errors=True)
        assert answer["errors"][0]["extensions"]["code"] == code, (variables, answer)
    quiet = oncall.as_user("hush", groups=["quiet"])
    answer = await quiet.gql(
        OVERRIDE,
        {"component": "component:quiet-svc-00", "primary": "quiet-ann", "until": _until()},
        expect_errors=True,
    )
    assert answer["errors"][0]["extensions"]["code"] == "FAILED_PRECONDITION"
    assert await oncall.services.db.fetchval("select count(*) from oncall_overrides") == 0


async def test_an_override_drops_the_cached_answer(oncall: Any) -> None:
    lead = oncall.as_user("lead", groups=["small"])
    variables = {"ref": REF}
    for _ in range(2):  # the second answer comes from the cache
        before = await lead.persisted_get(PRIMARY, variables)
        assert before.status_code == 200
        assert before.json()["data"]["entity"]["onCall"]["primaryRef"] == "user:default/small-bob"
    await lead.gql(
        OVERRIDE, {"component": REF, "primary": "small-ann", "until": _until(), "reason": "swap"}
    )
    after = await lead.persisted_get(PRIMARY, variables)
    assert after.json()["data"]["entity"]["onCall"] == {
        "primaryRef": "user:default/small-ann",
        "override": {"reason": "swap"},
    }
