"""The deployments plugin's mutations: promote, roll back, set a pipeline."""

from __future__ import annotations

from typing import Any

from graph.plugin import Authorize, EntityOwner, Info, Target, UserError, strawberry
from plugins.deployments.fields import component_ref, deployments_of, pipeline_of
from plugins.deployments.pipelines import PipelineError, parse_stages
from plugins.deployments.promote import deploy
from plugins.deployments.store import changed_keys
from plugins.deployments.types import Deploy, Pipeline

__all__ = ["DeploymentMutation", "StageInput"]


async def _pipeline_record(
    info: Info, target: Target, arguments: dict[str, Any]
) -> dict[str, Any] | None:
    """What setPipeline changes, for the audit log: the component's declared pipeline."""
    if target.ref is None:
        return None
    found = await deployments_of(info).pipeline(info.context, target.ref)
    if found is None:
        return None
    return {"declared_in": found.declared_in, "stages": [s.to_json() for s in found.stages]}


@strawberry.input
class StageInput:
    name: str
    production: bool = False
    pin_app_cluster: str | None = None
    pin_app_namespace: str | None = None
    pin_app_name: str | None = None


@strawberry.type
class DeploymentMutation:
    @strawberry.mutation(
        description="Deploy a release of a component to a stage: its PinApp is rolled to the "
        "release's artifact (through PinCompute), or the CD system is asked. A stage that is "
        "not deployable (PipelineStage.notDeployableReason) is refused (FAILED_PRECONDITION), "
        "as is a busy one (CONFLICT). For owners and admins; audited.",
        extensions=[Authorize(EntityOwner("component"), "deployments.promote")],
    )
    async def promote_release(self, info: Info, component: str, release: str, stage: str) -> Deploy:
        deployments = deployments_of(info)
        ref = await component_ref(info, component)
        return Deploy(row=await deploy(deployments, info.context, ref, stage, release))

    @strawberry.mutation(
        description="Deploy an earlier release to a stage: the one named, else the last good "
        "one before what runs there now (PipelineStage.rollbackTo). The deploy it replaces "
        "becomes ROLLED_BACK once it succeeds. Refused like promoteRelease for a stage that "
        "is not deployable. For owners and admins; audited.",
        extensions=[Authorize(EntityOwner("component"), "deployments.rollback")],
    )
    async def rollback_stage(
        self, info: Info, component: str, stage: str, to_release: str | None = None
    ) -> Deploy:
        deployments = deployments_of(info)
        ref = await component_ref(info, component)
        row = await deploy(deployments, info.context, ref, stage, to_release, rollback=True)
        return Deploy(row=row)

    @strawberry.mutation(
        description="Set a component's pipeline (refused when its catalog-info.yaml declares "
        "one: change it there). For owners and admins; audited.",
        extensions=[
            Authorize(
                EntityOwner("component"), "deployments.setPipeline", snapshot=_pipeline_record
            )
        ],
    )
    async def set_pipeline(self, info: Info, component: str, stages: list[StageInput]) -> Pipeline:
        deployments = deployments_of(info)
        ref = await component_ref(info, component)
        existing = await deployments.pipeline(info.context, ref)
        if existing is not None and existing.declared_in == "catalog":
            raise UserError(
                f"{ref} declares its pipeline in its catalog-info.yaml: change it there",
                "FAILED_PRECONDITION",
            )
        raw: list[dict[str, Any]] = []
        for stage in stages:
            item: dict[str, Any] = {"name": stage.name, "production": stage.production}
            bound = (stage.pin_app_cluster, stage.pin_app_namespace, stage.pin_app_name)
            if any(bound):
                item["pinApp"] = dict(zip(("cluster", "namespace", "name"), bound, strict=True))
            raw.append(item)
        try:
            parsed = parse_stages(raw)
        except PipelineError as exc:
            raise UserError(str(exc)) from None
        await info.context.db.execute(
            "insert into deployment_pipelines (component_ref, stages, updated_by)"
            " values ($1, $2::jsonb, $3) on conflict (component_ref) do update"
            " set stages = excluded.stages, updated_by = excluded.updated_by, updated_at = now()",
            ref,
            [s.to_json() for s in parsed],
            info.context.viewer.actor,
        )
        await info.context.invalidate(changed_keys([ref]))
        return await pipeline_of(info, ref)
