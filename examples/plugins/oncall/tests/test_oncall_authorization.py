"""Who may override, as Atrium's authorization matrix asks it (``atrium.testing.authz``): every
mutation this plugin adds, called by the kit's ten callers (nobody, tokens of each scope, a
person of another team, a member of the group above the owning team, the owner, an admin),
each refusal audited and changing no override, each admission allowed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from atrium.testing.authz import (
    ADMIN,
    ADMIN_TOKEN,
    OWNERS,
    Case,
    authz_callers,
    check_authorization,
)

# A department above ``small``, and someone in it (not in ``small``).
ABOVE = """\
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: platform}
spec: {type: department, children: [small]}
---
apiVersion: backstage.io/v1alpha1
kind: User
metadata: {name: pat}
spec: {memberOf: [platform]}
"""


async def test_every_caller_meets_what_the_override_declares(oncall: Any) -> None:
    await oncall.load_catalog(ABOVE, location="above.yaml")  # beside the fixture's catalog
    above = await oncall.services.db.fetchval(
        "select target_ref from relations where source_ref = $1 and type = 'childOf'",
        "group:default/small",
    )
    assert above == "group:default/platform"
    callers = await authz_callers(
        oncall, owner="small-ann", non_owner="large-ann", parent_member="pat"
    )
    until = (datetime.now(UTC) + timedelta(hours=2)).replace(microsecond=0).isoformat()
    small = {"component": "component:default/small-svc-01", "primary": "small-bob", "until": until}
    # The admins override a component of another team.
    large = {"component": "component:default/large-svc-01", "primary": "large-bob", "until": until}
    matrix = await check_authorization(
        oncall,
        callers,
        {"overrideOnCall": Case(OWNERS, small, admitted_as={ADMIN: large, ADMIN_TOKEN: large})},
        plugin_id="oncall",
        state=lambda: oncall.services.db.fetch(
            "select component_ref, primary_ref, until from oncall_overrides order by 1"
        ),
    )
    assert (matrix.fields, matrix.calls) == (1, 10)
    rows = await oncall.services.db.fetch(
        "select component_ref, primary_ref from oncall_overrides order by 1"
    )
    assert [tuple(r) for r in rows] == [
        ("component:default/large-svc-01", "user:default/large-bob"),
        ("component:default/small-svc-01", "user:default/small-bob"),
    ]
