"""Mutations of PinCompute: what owners change, authorized, audited, validated, within quota."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from graph.plugin import Authorize, Info, UserError, strawberry
from plugins.pincompute.authz import ManifestOwner, WorkloadOwner
from plugins.pincompute.compute import PINAPP, PINSCALER, Compute, ComputeError
from plugins.pincompute.scaling import owned_refs, plan_scale, quota_of, room
from plugins.pincompute.store import Key, StoredObject
from plugins.pincompute.types import PinApp, PinScaler, compute_of
from plugins.pincompute.validation import (
    ManifestError,
    check_quota,
    parse_manifest,
    usage,
    validate_body,
)

__all__ = ["ApplyResult", "ComputeMutation"]

RESTART_ANNOTATION = "atrium.dev/restartedAt"


def _app(compute: Compute, cluster: str, namespace: str, name: str) -> StoredObject:
    found = compute.pinapps.get(Key(cluster, namespace, name))
    if found is None:
        raise UserError(f"no PinApp {namespace}/{name} in cluster {cluster}", "NOT_FOUND")
    return found


async def _within_quota(
    info: Info,
    compute: Compute,
    stored_or_body: dict[str, Any],
    changed: dict[tuple[str, Key], dict[str, Any] | None],
) -> None:
    """Refuse a change that would take the owning team past its quota."""
    found = await quota_of(info.context, compute, stored_or_body)
    if found is None:
        return
    owner, quota = found
    refs = await owned_refs(info.context, owner)
    try:
        check_quota(owner, quota, usage(compute, refs, changed))
    except ManifestError as exc:
        raise UserError(f"over quota: {exc}", "QUOTA_EXCEEDED") from exc


async def _patch(compute: Compute, kind: str, key: Key, patch: dict[str, Any]) -> dict[str, Any]:
    try:
        return await compute.merge_patch(kind, key, patch)
    except ComputeError as exc:
        raise UserError(str(exc), "UNAVAILABLE") from exc


def _merged(body: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """What a merge patch makes of a body (RFC 7386), to validate before sending."""
    result = dict(body)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _merged(result[key], value)
        else:
            result[key] = value
    return result


@strawberry.type
class ComputeMutation:
    @strawberry.mutation(
        description="Scale a PinApp: its PinScaler's bounds (minReplicas, maxReplicas; either "
        "or both) when it has one, else its replicas. Refused (BAD_USER_INPUT) with the reason: "
        "replicas for a PinApp with a PinScaler, bounds for one without, minReplicas above "
        "maxReplicas, a value outside the CRD's limits, more replicas than the owner's quota "
        "leaves (PinApp.maxReplicasAllowed).",
        extensions=[Authorize(WorkloadOwner(), "pincompute.scale")],
    )
    async def scale_workload(
        self,
        info: Info,
        cluster: str,
        namespace: str,
        name: str,
        replicas: int | None = None,
        min_replicas: int | None = None,
        max_replicas: int | None = None,
    ) -> PinApp:
        compute = compute_of(info)
        app = _app(compute, cluster, namespace, name)
        plan = plan_scale(app, compute.scaler_for(app.key), replicas, min_replicas, max_replicas)
        left = await room(info.context, compute, app)
        if left is not None and plan.counted is not None and plan.counted[1] > left.allowed:
            bound, value = plan.counted
            raise UserError(
                f"{bound} {value} is more than PinApp {app.key} may have: at most "
                f"{left.allowed}, within {left.why}"
            )
        planned = _merged(plan.target.body, plan.patch)
        _validate(plan.kind, planned)
        # The quota's other measures (CPU, memory) and a concurrent change are checked again.
        await _within_quota(info, compute, app.body, {(plan.kind, plan.target.key): planned})
        await _patch(compute, plan.kind, plan.target.key, plan.patch)
        return PinApp.of(_app(compute, cluster, namespace, name))

    @strawberry.mutation(
        description="Restart a PinApp's pods (a new pod-template annotation rolls them).",
        extensions=[Authorize(WorkloadOwner(), "pincompute.restart")],
    )
    async def restart_workload(self, info: Info, cluster: str, namespace: str, name: str) -> PinApp:
        compute = compute_of(info)
        app = _app(compute, cluster, namespace, name)
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        await _patch(
            compute,
            PINAPP.kind,
            app.key,
            {"spec": {"template": {"annotations": {RESTART_ANNOTATION: stamp}}}},
        )
        return PinApp.of(_app(compute, cluster, namespace, name))

    @strawberry.mutation(
        description="Roll a PinApp out to another image.",
        extensions=[Authorize(WorkloadOwner(), "pincompute.setImage")],
    )
    async def set_workload_image(
        self, info: Info, cluster: str, namespace: str, name: str, image: str
    ) -> PinApp:
        compute = compute_of(info)
        app = _app(compute, cluster, namespace, name)
        patch = {"spec": {"image": image}}
        _validate(PINAPP.kind, _merged(app.body, patch))
        await _patch(compute, PINAPP.kind, app.key, patch)
        return PinApp.of(_app(compute, cluster, namespace, name))

    @strawberry.mutation(
        description="Create or update a PinApp or PinScaler from a manifest: validated against "
        "its CRD schema, checked against the owning team's quota, then created or merge-patched.",
        extensions=[Authorize(ManifestOwner(), "pincompute.apply")],
    )
    async def apply_workload_manifest(self, info: Info, cluster: str, manifest: str) -> ApplyResult:
        compute = compute_of(info)
        if cluster not in compute.clusters:
            raise UserError(f"no cluster named {cluster}", "NOT_FOUND")
        try:
            body = parse_manifest(manifest)
        except ManifestError as exc:
            raise UserError(f"invalid manifest: {exc}") from exc
        kind = body["kind"]
        key = Key(cluster, body["metadata"]["namespace"], body["metadata"]["name"])
        await _within_quota(info, compute, body, {(kind, key): body})
        existing = compute.store(kind).get(key)
        try:
            if existing is None:
                stored = await compute.create(kind, cluster, body)
            else:
                patch = {
                    "metadata": {
                        k: body["metadata"][k]
                        for k in ("labels", "annotations")
                        if k in body["metadata"]
                    },
                    "spec": body["spec"],
                }
                stored = await compute.merge_patch(kind, key, patch)
        except ComputeError as exc:
            raise UserError(str(exc), "UNAVAILABLE") from exc
        found = compute.store(kind).get(key)
        assert found is not None and stored is not None
        return ApplyResult(
            created=existing is None,
            pin_app=PinApp.of(found) if kind == PINAPP.kind else None,
            pin_scaler=PinScaler.of(found) if kind == PINSCALER.kind else None,
        )


@strawberry.type
class ApplyResult:
    created: bool
    pin_app: PinApp | None
    pin_scaler: PinScaler | None


def _validate(kind: str, body: dict[str, Any]) -> None:
    try:
        validate_body(kind, body)
    except ManifestError as exc:
        raise UserError(f"invalid change: {exc}") from exc
