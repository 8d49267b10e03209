"""Promoting and rolling back: deploying a release to a stage, by rolling the stage's PinApp
through PinCompute's ``workloads`` service or by asking the CD system.

``blocker`` says why a stage cannot be deployed at all; the console reads it
(``PipelineStage.deployable``) and ``deploy`` refuses with it, so the two never disagree.
Likewise ``rollbackTo`` and ``rollbackStage`` both ask ``queries.rollback_release``.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import orjson

from graph.plugin import Context, ServiceMissing, UserError, announce_changes, service
from plugins.deployments.pipelines import Pipeline, Stage
from plugins.deployments.queries import rollback_release
from plugins.deployments.service import Deployments, sign
from plugins.deployments.store import DeployRow, changed_keys

__all__ = ["NO_PIPELINE", "blocker", "deploy", "rollback_target"]

NO_PIPELINE = (
    "its pipeline is not declared (only the stages its deploys went to are known): declare "
    "spec.pipeline in its catalog-info.yaml or set one"
)


def blocker(
    deployments: Deployments, context: Context, ref: str, pipeline: Pipeline, stage: Stage
) -> str | None:
    """Why Atrium cannot deploy to this stage at all, in words for a person; None when it can.
    Reads settings and the informers' stores only: cheap enough for every stage shown."""
    if pipeline.declared_in == "events":
        return NO_PIPELINE
    if stage.pin_app is not None:
        where = "/".join(stage.pin_app)
        try:
            workloads = service(context, "workloads")
        except ServiceMissing:
            return f"bound to workload {where}, and PinCompute is not installed"
        current = workloads.get(*stage.pin_app)
        if current is None:
            return f"bound to workload {where}, which no cluster reports"
        if current.entity_ref is not None and current.entity_ref != ref:
            return f"bound to workload {where}, which belongs to {current.entity_ref}"
        return None
    settings = deployments.settings
    if not settings.deployments_cd_url:
        return "not bound to a workload and no CD system is configured"
    if settings.deployments_cd_secret is None:
        return "not bound to a workload, and the CD system's signing secret is not configured"
    return None


async def rollback_target(context: Context, ref: str, stage: str, to_release: str | None) -> str:
    """The version a rollback deploys: the one asked for, else the stage's last good release
    before what runs there now (``PipelineStage.rollbackTo`` shows the same)."""
    if to_release is not None:
        return to_release
    found = await rollback_release(context.db, ref, stage)
    if found is None:
        raise UserError(
            f"stage {stage} of {ref} has no earlier good release to roll back to",
            "FAILED_PRECONDITION",
        )
    return found.version


async def deploy(
    deployments: Deployments,
    context: Context,
    ref: str,
    stage_name: str,
    version: str | None,
    *,
    rollback: bool = False,
) -> DeployRow:
    """Deploy a release to a stage: roll its PinApp, or ask the CD system. A rollback without
    a version deploys the stage's last good release before what runs now."""
    pipeline = await deployments.pipeline(context, ref)
    if pipeline is None:
        raise UserError(
            f"{ref} has no pipeline: declare spec.pipeline in its catalog-info.yaml or "
            "set one with setPipeline",
            "FAILED_PRECONDITION",
        )
    stage = pipeline.stage(stage_name)
    if stage is None:
        names = ", ".join(s.name for s in pipeline.stages)
        raise UserError(f"{ref} has no stage {stage_name} (its stages: {names})", "NOT_FOUND")
    why = blocker(deployments, context, ref, pipeline, stage)
    if why is not None:
        raise UserError(
            f"stage {stage.name} of {ref} cannot be deployed: {why}", "FAILED_PRECONDITION"
        )
    if version is None:
        version = await rollback_target(context, ref, stage.name, None)
    release = await deployments.release(context, ref, version)
    busy = await context.db.fetchval(
        "select id from deployment_deploys where component_ref = $1 and stage = $2"
        " and state in ('pending', 'in_progress') limit 1",
        ref,
        stage.name,
    )
    if busy is not None:
        raise UserError(
            f"stage {stage.name} of {ref} is busy with deploy {busy}: wait for it or let it "
            "fail first",
            "CONFLICT",
        )
    if stage.pin_app is not None:
        return await _roll(deployments, context, ref, release, stage, rollback)
    return await _ask_cd(deployments, context, ref, release, stage, rollback)


async def _roll(
    deployments: Deployments,
    context: Context,
    ref: str,
    release: dict[str, Any],
    stage: Stage,
    rollback: bool,
) -> DeployRow:
    assert stage.pin_app is not None
    if not release["artifact"]:
        raise UserError(
            f"release {release['version']} of {ref} names no artifact (image) to roll out",
            "FAILED_PRECONDITION",
        )
    workloads = service(context, "workloads")  # there: ``blocker`` checked
    cluster, namespace, name = stage.pin_app
    current = workloads.get(cluster, namespace, name)
    if current is None:  # gone since ``blocker`` looked
        raise UserError(
            f"stage {stage.name} deploys to PinApp {cluster}/{namespace}/{name}, which no "
            "cluster reports",
            "NOT_FOUND",
        )
    if current.entity_ref is not None and current.entity_ref != ref:
        raise UserError(
            f"PinApp {cluster}/{namespace}/{name} belongs to {current.entity_ref}, not {ref}",
            "FORBIDDEN",
        )
    rollout = await workloads.set_image(
        context, cluster, namespace, name, release["artifact"], expect_image=current.image
    )
    now = datetime.now(UTC)
    deadline = now + timedelta(seconds=deployments.settings.deployments_progress_deadline)
    deploy_id = await _insert(
        context,
        ref,
        release["id"],
        stage,
        "in_progress",
        source="atrium",
        rollback=rollback,
        rollout=rollout,
        deadline=deadline,
    )
    deployments.follow((cluster, namespace, name), deploy_id)
    await announce_changes(context, changed_keys([ref]))
    return await deployments.one(context.db, deploy_id)


async def _ask_cd(
    deployments: Deployments,
    context: Context,
    ref: str,
    release: dict[str, Any],
    stage: Stage,
    rollback: bool,
) -> DeployRow:
    url = deployments.settings.deployments_cd_url
    secret = deployments.settings.deployments_cd_secret
    assert url and secret is not None  # ``blocker`` checked
    external = f"atrium-{uuid.uuid4().hex[:16]}"
    deploy_id = await _insert(
        context,
        ref,
        release["id"],
        stage,
        "pending",
        source="webhook",
        rollback=rollback,
        external_id=external,
    )
    body = orjson.dumps(
        {
            "deploy": {"id": external, "rollback": rollback, "actor": context.viewer.actor},
            "component": ref,
            "stage": stage.name,
            "release": {
                "version": release["version"],
                "commitSha": release["commit_sha"],
                "artifact": release["artifact"],
            },
        }
    )
    headers = {
        "Content-Type": "application/json",
        "X-Atrium-Delivery": external,
        "X-Atrium-Event": "deploy",
        "X-Atrium-Signature-256": sign(secret.get_secret_value(), body),
    }
    try:
        answer = await deployments.http.post(
            url, content=body, headers=headers, timeout=deployments.settings.deployments_cd_timeout
        )
        answer.raise_for_status()
    except httpx.HTTPError as exc:
        why = f"the CD system did not take the deploy: {exc}"[:1000]
        await context.db.execute(
            "update deployment_deploys set state = 'failed', finished_at = now(),"
            " message = $2, updated_at = now() where id = $1",
            deploy_id,
            why,
        )
        await announce_changes(context, changed_keys([ref]))
        raise UserError(why, "UNAVAILABLE") from exc
    await announce_changes(context, changed_keys([ref]))
    return await deployments.one(context.db, deploy_id)


async def _insert(
    context: Context,
    ref: str,
    release_id: int,
    stage: Stage,
    state: str,
    *,
    source: str,
    rollback: bool,
    rollout: dict[str, Any] | None = None,
    deadline: datetime | None = None,
    external_id: str | None = None,
) -> int:
    return int(
        await context.db.fetchval(
            "insert into deployment_deploys (component_ref, stage, production, release_id,"
            " state, actor, started_at, source, external_id, is_rollback, rollout, deadline)"
            " values ($1, $2, $3, $4, $5, $6, now(), $7, $8, $9, $10::jsonb, $11)"
            " returning id",
            ref,
            stage.name,
            stage.production,
            release_id,
            state,
            context.viewer.actor,
            source,
            external_id or f"atrium-{uuid.uuid4().hex[:16]}",
            rollback,
            rollout,
            deadline,
        )
    )
