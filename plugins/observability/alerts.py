"""Alerts and silences: a component's and a team's active alerts from Alertmanager, and
silences its owners create (limited to its own alerts) and expire, audited. A silence is named
by Alertmanager's id, a UUID: anything else is the client's mistake (BAD_USER_INPUT), said
before any request, and an id Alertmanager does not know is NOT_FOUND."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any, Final

from graph.plugin import (
    JSON,
    Authorize,
    CacheControl,
    CacheScope,
    EntityOwner,
    EntityParent,
    Info,
    Parent,
    Target,
    UserError,
    entities_owned_by,
    entity,
    entity_owner,
    strawberry,
    viewer_may_change,
)
from plugins.observability.alertmanager import Matcher, SilenceNotFound, matchers_of, silence_id
from plugins.observability.fields import PinAppParent, observability_of
from plugins.observability.metrics import pods_pattern
from plugins.observability.prometheus import Unavailable

__all__ = ["AlertFields", "GroupAlerts", "SilenceMutation", "WorkloadAlerts"]

MAX_SILENCE: Final = 14 * 86_400


class AlertState(Enum):
    ACTIVE = "active"
    SUPPRESSED = "suppressed"


strawberry.enum(AlertState, name="AlertState")


@strawberry.type(description="An alert firing in Alertmanager.")
class Alert:
    name: str
    severity: str | None
    state: AlertState
    starts_at: datetime
    summary: str | None
    runbook_url: str | None
    labels: JSON
    silenced_by: list[str] = strawberry.field(description="Ids of the silences suppressing it.")


@strawberry.type(description="A silence in Alertmanager.")
class Silence:
    id: str
    matchers: JSON
    starts_at: datetime
    ends_at: datetime
    comment: str
    created_by: str


def _alert(raw: dict[str, Any]) -> Alert:
    labels = raw.get("labels") or {}
    annotations = raw.get("annotations") or {}
    status = raw.get("status") or {}
    started = str(raw.get("startsAt") or "1970-01-01T00:00:00Z")
    return Alert(
        name=str(labels.get("alertname") or ""),
        severity=labels.get("severity"),
        state=AlertState.SUPPRESSED if status.get("state") == "suppressed" else AlertState.ACTIVE,
        starts_at=datetime.fromisoformat(started.replace("Z", "+00:00")),
        summary=annotations.get("summary"),
        runbook_url=annotations.get("runbook_url") or annotations.get("runbook"),
        labels=JSON(labels),
        silenced_by=list(status.get("silencedBy") or []),
    )


def _matchers(found: Any) -> list[Matcher]:
    try:
        return matchers_of(found.name, dict(found.annotations or {}))
    except ValueError as exc:
        raise UserError(f"{found.ref}: its alert selector is not usable: {exc}") from None


def _sorted(alerts: list[Alert]) -> list[Alert]:
    return sorted(alerts, key=lambda a: (a.state != AlertState.ACTIVE, a.starts_at), reverse=False)


@strawberry.type
class AlertFields:
    """Joins Component: its active alerts (its `service` label, or its selector annotation)."""

    @strawberry.field(
        description="Its alerts firing now, active or suppressed by a silence. Null, with an "
        "UNAVAILABLE error naming Alertmanager, when it cannot answer."
    )
    async def alerts(self, parent: Parent[EntityParent], info: Info) -> list[Alert] | None:
        backend = observability_of(info)
        try:
            raw = await backend.alerts_backend().alerts(_matchers(parent))
        except Unavailable as exc:
            raise UserError(str(exc), "UNAVAILABLE") from None
        return _sorted([_alert(a) for a in raw])

    @strawberry.field(
        description="Whether the viewer may silence its alerts (its owners and admins): for "
        "showing buttons; the mutations check again.",
        directives=[CacheControl(max_age=60, scope=CacheScope.PRIVATE)],
    )
    async def viewer_can_silence(self, parent: Parent[EntityParent], info: Info) -> bool:
        owner = await entity_owner(info.context, parent.ref)
        return await viewer_may_change(info.context, owner)


@strawberry.type
class GroupAlerts:
    @strawberry.field(
        description="Alerts firing now on every component the group owns, through any subgroup."
    )
    async def alerts(self, parent: Parent[EntityParent], info: Info) -> list[Alert] | None:
        try:
            # Unconfigured says so even for a team owning nothing yet.
            alertmanager = observability_of(info).alerts_backend()
        except Unavailable as exc:
            raise UserError(str(exc), "UNAVAILABLE") from None
        owned = await entities_owned_by(info.context, parent.ref)
        refs = [r for r in owned if r.startswith("component:")]
        selectors = []
        for ref in refs:
            found = await entity(info, ref)
            if found is not None:
                try:
                    annotations: dict[str, Any] = dict(found.annotations or {})  # type: ignore[arg-type]
                    selectors.append(matchers_of(found.name, annotations))
                except ValueError:
                    continue  # said on the component's own page
        if not selectors:
            return []
        try:
            raw = await alertmanager.alerts()
        except Unavailable as exc:
            raise UserError(str(exc), "UNAVAILABLE") from None
        mine = [
            a
            for a in raw
            if any(all(m.matches(a.get("labels") or {}) for m in s) for s in selectors)
        ]
        return _sorted([_alert(a) for a in mine])


@strawberry.type
class WorkloadAlerts:
    """Joins PinCompute's PinApp (when installed): alerts about its pods or about it."""

    @strawberry.field(
        description="Alerts firing now in its namespace about one of its pods (`pod` label "
        "<name>-<hash>-<id>) or about it (`pinapp` or `deployment` label), and of its cluster "
        "when they carry a `cluster` label."
    )
    async def alerts(self, parent: Parent[PinAppParent], info: Info) -> list[Alert] | None:
        backend = observability_of(info)
        cluster, namespace, name = parent.cluster, parent.namespace, parent.name
        try:
            raw = await backend.alerts_backend().alerts([Matcher("namespace", namespace)])
        except Unavailable as exc:
            raise UserError(str(exc), "UNAVAILABLE") from None
        pods = re.compile(pods_pattern(name))

        def mine(labels: dict[str, str]) -> bool:
            if labels.get("cluster", cluster) != cluster:
                return False
            return (
                pods.fullmatch(labels.get("pod", "")) is not None
                or labels.get("pinapp") == name
                or labels.get("deployment") == name
            )

        return _sorted([_alert(a) for a in raw if mine(a.get("labels") or {})])


class SilenceOwner:
    """Targets the silence named by ``id``: the owners of the entity it was made for; a
    silence Atrium did not make is for admins only."""

    admin_only = False

    async def target(self, info: Info, arguments: dict[str, Any]) -> Target:
        # An id that is not one names no target: the client's mistake, said (and audited)
        # before anything else.
        silence = _silence_id(str(arguments["id"]))
        ref = await info.context.db.fetchval(
            "select entity_ref from observability_silences where id = $1", silence
        )
        owner = await entity_owner(info.context, ref) if ref else None
        return Target(f"silence:{silence}", owner, state={"entity": ref})

    async def snapshot(self, info: Info, target: Target) -> dict[str, Any] | None:
        return None


@strawberry.type
class SilenceMutation:
    @strawberry.mutation(
        description="Silence an entity's alerts (those its selector matches, one alert by name "
        "when given) for a while. For its owners and admins; audited.",
        extensions=[Authorize(EntityOwner("ref"), "observability.createSilence")],
    )
    async def create_silence(
        self,
        info: Info,
        ref: str,
        duration_seconds: int,
        comment: str,
        alert_name: str | None = None,
    ) -> Silence:
        backend = observability_of(info)
        if not 60 <= duration_seconds <= MAX_SILENCE:
            raise UserError(f"durationSeconds must be between 60 and {MAX_SILENCE}")
        if not comment.strip():
            raise UserError("comment must say why")
        found = await entity(info, ref)
        if found is None:
            raise UserError(f"no entity {ref}", "NOT_FOUND")
        matchers = _matchers(found)
        if alert_name is not None:
            matchers.append(Matcher("alertname", alert_name))
        starts = datetime.now(UTC)
        ends = starts + timedelta(seconds=duration_seconds)
        by = info.context.viewer.actor
        try:
            silence_id = await backend.alerts_backend().create_silence(
                matchers, starts, ends, by, comment[:1000]
            )
        except Unavailable as exc:
            raise UserError(str(exc), "UNAVAILABLE") from None
        await info.context.db.execute(
            "insert into observability_silences (id, entity_ref, created_by) values ($1, $2, $3)"
            " on conflict (id) do nothing",
            silence_id,
            found.ref,
            by,
        )
        return Silence(
            id=silence_id,
            matchers=JSON([m.to_json() for m in matchers]),
            starts_at=starts,
            ends_at=ends,
            comment=comment[:1000],
            created_by=by,
        )

    @strawberry.mutation(
        description="Expire a silence now. For the owners of the entity it was made for, and "
        "admins; audited.",
        extensions=[Authorize(SilenceOwner(), "observability.expireSilence")],
    )
    async def expire_silence(self, info: Info, id: str) -> bool:
        backend = observability_of(info)
        silence = _silence_id(id)
        try:
            await backend.alerts_backend().expire_silence(silence)
        except SilenceNotFound:
            raise UserError(f"alertmanager has no silence {silence}", "NOT_FOUND") from None
        except Unavailable as exc:
            raise UserError(str(exc), "UNAVAILABLE") from None
        return True


def _silence_id(text: str) -> str:
    try:
        return silence_id(text)
    except ValueError as exc:
        raise UserError(f"id: {exc}") from None
