"""The deployments tables: recording deliveries, applying events, reading history.

Every write that changes what a component's pipeline or history shows returns the component's
ref, and the caller announces ``deploys:<ref>`` (``deploys_key``) once its transaction has
committed: cached answers and pages showing it are dropped in every replica, and
subscriptions following the component wake.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import orjson

from graph.plugin import change_key
from plugins.deployments.model import FINISHED, Incoming, may_move

__all__ = [
    "ANY_DEPLOY",
    "CHANGES",
    "Applied",
    "DeployRow",
    "ReleaseRow",
    "apply",
    "changed_keys",
    "decode_cursor",
    "deploys_key",
    "encode_cursor",
    "record_event",
]

# The namespace of the plugin's change keys: a ref inside one never makes it an entity's.
CHANGES: Final = "deploys"
# Announced with every change too: answers over many components (a team's DORA figures).
ANY_DEPLOY: Final = change_key(CHANGES)


def deploys_key(ref: str) -> str:
    """What a component's deploys are tagged with, and their changes announce."""
    return change_key(CHANGES, ref)


def changed_keys(refs: Iterable[str]) -> list[str]:
    """What a change to these components' deploys announces."""
    return [*(deploys_key(ref) for ref in refs), ANY_DEPLOY]


DEPLOY_COLUMNS: Final = (
    "d.id, d.component_ref, d.stage, d.state, d.actor, d.started_at, d.finished_at, d.source,"
    " d.external_id, d.url, d.is_rollback, d.message, d.production, d.rollout, d.deadline,"
    " r.id as release_id, r.version, r.commit_sha, r.commit_time, r.artifact, r.created_by,"
    " r.created_at as release_created_at, r.build_url"
)
RELEASE_COLUMNS: Final = (
    "r.id as release_id, r.component_ref, r.version, r.commit_sha, r.commit_time, r.artifact,"
    " r.created_by, r.created_at as release_created_at, r.build_url"
)


@dataclass(frozen=True, slots=True)
class ReleaseRow:
    id: int
    component_ref: str
    version: str
    commit_sha: str | None
    commit_time: datetime | None
    artifact: str | None
    created_by: str | None
    created_at: datetime
    build_url: str | None

    @classmethod
    def of(cls, row: Any, component_ref: str | None = None) -> ReleaseRow:
        return cls(
            row["release_id"],
            component_ref or row["component_ref"],
            row["version"],
            row["commit_sha"],
            row["commit_time"],
            row["artifact"],
            row["created_by"],
            row["release_created_at"],
            row["build_url"],
        )


@dataclass(frozen=True, slots=True)
class DeployRow:
    id: int
    component_ref: str
    stage: str
    state: str
    actor: str | None
    started_at: datetime
    finished_at: datetime | None
    source: str
    external_id: str
    url: str | None
    is_rollback: bool
    message: str | None
    production: bool
    rollout: dict[str, Any] | None
    deadline: datetime | None
    release: ReleaseRow

    @classmethod
    def of(cls, row: Any) -> DeployRow:
        rollout = row["rollout"]
        return cls(
            row["id"],
            row["component_ref"],
            row["stage"],
            row["state"],
            row["actor"],
            row["started_at"],
            row["finished_at"],
            row["source"],
            row["external_id"],
            row["url"],
            row["is_rollback"],
            row["message"],
            row["production"],
            orjson.loads(rollout) if isinstance(rollout, str) else rollout,
            row["deadline"],
            ReleaseRow.of(row, row["component_ref"]),
        )


@dataclass(frozen=True, slots=True)
class Applied:
    deploy_id: int
    state: str
    changed: bool


async def record_event(
    db: Any, source: str, delivery: str, event: str, body: str, subject: str | None
) -> int | None:
    """Keep a delivery as it arrived; None when this delivery id was recorded before."""
    found = await db.fetchval(
        "insert into deployment_events (source, delivery, event, body, subject)"
        " values ($1, $2, $3, $4, $5) on conflict (source, delivery) do nothing returning id",
        source,
        delivery,
        event,
        body,
        subject,
    )
    return int(found) if found is not None else None


async def mark_event(
    db: Any, event_id: int, component_ref: str | None, deploy_id: int | None, outcome: str
) -> None:
    await db.execute(
        "update deployment_events set component_ref = $2, deploy_id = $3, outcome = $4,"
        " attached_at = case when $2::text is null then null else now() end where id = $1",
        event_id,
        component_ref,
        deploy_id,
        outcome,
    )


_UPSERT_RELEASE: Final = """
insert into deployment_releases
    (component_ref, version, commit_sha, commit_time, artifact, created_by, build_url, created_at)
values ($1, $2, $3, $4, $5, $6, $7, coalesce($8, now()))
on conflict (component_ref, version) do update set
    commit_sha = coalesce(deployment_releases.commit_sha, excluded.commit_sha),
    commit_time = coalesce(deployment_releases.commit_time, excluded.commit_time),
    artifact = coalesce(excluded.artifact, deployment_releases.artifact),
    created_by = coalesce(deployment_releases.created_by, excluded.created_by),
    build_url = coalesce(deployment_releases.build_url, excluded.build_url),
    created_at = least(deployment_releases.created_at, excluded.created_at)
returning id, created_at
"""

# What the stage ran when a deploy began (events may arrive long after, or out of order).
_CURRENT_RELEASE: Final = """
select r.id, r.created_at from deployment_deploys d
join deployment_releases r on r.id = d.release_id
where d.component_ref = $1 and d.stage = $2 and d.state = 'succeeded' and d.finished_at <= $3
order by d.finished_at desc, d.id desc limit 1
"""


async def apply(tx: Any, incoming: Incoming, component_ref: str, production: bool) -> Applied:
    """Apply one event inside the caller's transaction: the release is created or completed,
    the deploy created or moved forward (never back), and a rollback that succeeds marks the
    deploy it replaced ``rolled_back``."""
    release = incoming.release
    release_row = await tx.fetchrow(
        _UPSERT_RELEASE,
        component_ref,
        release.version,
        release.commit_sha,
        release.commit_time,
        release.artifact,
        release.created_by,
        release.build_url,
        incoming.started_at or incoming.at,
    )
    release_id = release_row["id"]
    state = incoming.state or "pending"
    finished = incoming.at if state in FINISHED else None
    existing = await tx.fetchrow(
        "select id, state, is_rollback, stage from deployment_deploys"
        " where source = $1 and external_id = $2 for update",
        incoming.source,
        incoming.external_id,
    )
    if existing is None:
        is_rollback = incoming.is_rollback
        if not is_rollback:
            current = await tx.fetchrow(
                _CURRENT_RELEASE, component_ref, incoming.stage, incoming.started_at or incoming.at
            )
            is_rollback = (
                current is not None
                and current["id"] != release_id
                and current["created_at"] > release_row["created_at"]
            )
        deploy_id = await tx.fetchval(
            "insert into deployment_deploys (component_ref, stage, production, release_id,"
            " state, actor, started_at, finished_at, source, external_id, url, is_rollback,"
            " message) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
            " returning id",
            component_ref,
            incoming.stage,
            production,
            release_id,
            state,
            incoming.actor,
            incoming.started_at or incoming.at,
            finished,
            incoming.source,
            incoming.external_id,
            incoming.url,
            is_rollback,
            incoming.message,
        )
        changed = True
    else:
        deploy_id, is_rollback = existing["id"], existing["is_rollback"]
        changed = may_move(existing["state"], state)
        if changed:
            await tx.execute(
                "update deployment_deploys set state = $2, finished_at = coalesce($3,"
                " finished_at), actor = coalesce(actor, $4), url = coalesce($5, url),"
                " message = coalesce($6, message), updated_at = now() where id = $1",
                deploy_id,
                state,
                finished,
                incoming.actor,
                incoming.url,
                incoming.message,
            )
        else:
            state = existing["state"]
    if changed and state == "succeeded" and is_rollback:
        await mark_rolled_back(tx, component_ref, incoming.stage, deploy_id)
    return Applied(deploy_id, state, changed)


async def mark_rolled_back(tx: Any, component_ref: str, stage: str, rollback_id: int) -> None:
    """The deploy a successful rollback replaced: the stage's newest success that finished
    before the rollback began."""
    await tx.execute(
        "update deployment_deploys set state = 'rolled_back', updated_at = now() where id = ("
        " select d.id from deployment_deploys d, deployment_deploys b"
        " where b.id = $3 and d.component_ref = $1 and d.stage = $2"
        " and d.state = 'succeeded' and d.id <> $3 and d.finished_at <= b.started_at"
        " order by d.finished_at desc, d.id desc limit 1)",
        component_ref,
        stage,
        rollback_id,
    )


def encode_cursor(at: datetime, id: int) -> str:
    return base64.urlsafe_b64encode(f"{at.isoformat()}|{id}".encode()).decode()


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    """Raises ValueError for anything this API did not issue."""
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        at, _, id = text.rpartition("|")
        return datetime.fromisoformat(at), int(id)
    except (binascii.Error, UnicodeError, ValueError) as exc:
        raise ValueError("not a cursor this API issued") from exc
