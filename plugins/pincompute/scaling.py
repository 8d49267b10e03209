"""Scaling a PinApp within its limits: what the CRDs allow for replica counts, and what the
owning team's quota leaves for the workload.

A PinApp with a PinScaler is scaled by its bounds (the scaler decides the replicas between
them), one without by its replicas; the quota counts a scaled PinApp at its maximum. ``room``
is both what ``PinApp.maxReplicasAllowed`` shows and what ``scaleWorkload`` checks, so the
console's dialog and the mutation name the same limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from graph.plugin import Context, DataLoader, LoaderServices, UserError, entity_owner
from plugins.pincompute.compute import PINAPP, PINSCALER, Compute
from plugins.pincompute.model import cpu_millis, memory_bytes, requested
from plugins.pincompute.settings import Quota
from plugins.pincompute.store import StoredObject
from plugins.pincompute.validation import replica_limits, usage

__all__ = [
    "OWNED_LOADER",
    "Room",
    "ScalePlan",
    "owned_loader",
    "owned_refs",
    "plan_scale",
    "quota_of",
    "room",
]

OWNED_LOADER: Final = "pincompute.owned"

# Entities owned directly by each owner: the catalog's owner index, one statement a batch.
_OWNED: Final = "select owner_ref, ref from entities where owner_ref = any($1::text[]) order by ref"


def owned_loader(services: LoaderServices) -> DataLoader[str, list[str]]:
    async def load(owners: list[str]) -> list[list[str]]:
        found: dict[str, list[str]] = {owner: [] for owner in owners}
        for row in await services.db.fetch(_OWNED, list(found)):
            found[row["owner_ref"]].append(row["ref"])
        return [found[owner] for owner in owners]

    return DataLoader(load_fn=load)


async def owned_refs(context: Context, owner: str) -> list[str]:
    """Refs of the entities ``owner`` owns directly: whose workloads its quota covers."""
    refs: list[str] = await context.loaders[OWNED_LOADER].load(owner)
    return refs


async def quota_of(
    context: Context, compute: Compute, body: dict[str, Any]
) -> tuple[str, Quota] | None:
    """The owner of what a PinApp or PinScaler belongs to, and its quota; None when no
    catalog entity owns it (no quota applies)."""
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    entity_ref = annotations.get("atrium.dev/entity-ref")
    owner = await entity_owner(context, entity_ref) if isinstance(entity_ref, str) else None
    if owner is None:
        return None
    settings = compute.settings
    return owner, settings.compute_quotas.get(owner, settings.compute_default_quota)


@dataclass(frozen=True, slots=True)
class Room:
    allowed: int  # replicas the workload may ask for at most
    why: str  # the limit, for a person: "group:default/team-a's quota of 10 replicas (...)"


async def room(context: Context, compute: Compute, app: StoredObject) -> Room | None:
    """The most replicas the owner's quota leaves for this PinApp, besides what the owner's
    other workloads ask for (at their PinScalers' maximum when scaled): the tightest of the
    replica, CPU and memory quotas at the PinApp's requests per replica. None when no quota
    limits it."""
    found = await quota_of(context, compute, app.body)
    if found is None:
        return None
    owner, quota = found
    others = usage(compute, await owned_refs(context, owner), {(PINAPP.kind, app.key): None})
    _, cpu, memory = requested(app.body.get("spec") or {}, 1)
    limits: list[Room] = []
    if quota.replicas is not None:
        taken = f"{others.replicas} taken by its other workloads"
        limits.append(
            Room(
                quota.replicas - others.replicas,
                f"{owner}'s quota of {quota.replicas} replicas ({taken})",
            )
        )
    if quota.cpu is not None and cpu > 0:
        left = cpu_millis(quota.cpu) - others.cpu
        limits.append(
            Room(
                left // cpu,
                f"{owner}'s CPU quota of {quota.cpu} at {cpu}m a replica "
                f"({others.cpu}m taken by its other workloads)",
            )
        )
    if quota.memory is not None and memory > 0:
        left = memory_bytes(quota.memory) - others.memory
        limits.append(
            Room(
                left // memory,
                f"{owner}'s memory quota of {quota.memory} at {memory // 2**20}Mi a replica "
                f"({others.memory // 2**20}Mi taken by its other workloads)",
            )
        )
    if not limits:
        return None
    tightest = min(limits, key=lambda r: r.allowed)
    return Room(max(0, tightest.allowed), tightest.why)


@dataclass(frozen=True, slots=True)
class ScalePlan:
    kind: str  # what is patched: PinScaler (its bounds) or PinApp (its replicas)
    target: StoredObject
    patch: dict[str, Any]
    counted: tuple[str, int] | None  # the bound the quota counts, and its value after


def _within_crd(kind: str, field: str, value: int) -> None:
    least, most = replica_limits(kind, field)
    if least is not None and value < least:
        raise UserError(f"{field} {value} is below the {kind} limit of {least}")
    if most is not None and value > most:
        raise UserError(f"{field} {value} is above the {kind} limit of {most}")


def plan_scale(
    app: StoredObject,
    scaler: StoredObject | None,
    replicas: int | None,
    min_replicas: int | None,
    max_replicas: int | None,
) -> ScalePlan:
    """What a scale asks to change, or a refusal (BAD_USER_INPUT) saying what to give: a
    scaled PinApp takes bounds, never replicas (its PinScaler would undo them); bounds are
    within the CRD's limits and in order."""
    if scaler is None:
        if min_replicas is not None or max_replicas is not None:
            raise UserError(
                f"PinApp {app.key} has no PinScaler: give replicas (minReplicas and "
                "maxReplicas bound a PinScaler's replicas)"
            )
        if replicas is None:
            raise UserError(f"replicas is required: PinApp {app.key} has no PinScaler")
        _within_crd(PINAPP.kind, "replicas", replicas)
        return ScalePlan(PINAPP.kind, app, {"spec": {"replicas": replicas}}, ("replicas", replicas))
    if replicas is not None:
        raise UserError(
            f"PinApp {app.key} has a PinScaler, which decides its replicas between its bounds: "
            "give minReplicas and maxReplicas instead of replicas"
        )
    if min_replicas is None and max_replicas is None:
        raise UserError(
            f"PinApp {app.key} has a PinScaler: give minReplicas and maxReplicas (or one of them)"
        )
    changes: dict[str, int] = {}
    for field, value in (("minReplicas", min_replicas), ("maxReplicas", max_replicas)):
        if value is not None:
            _within_crd(PINSCALER.kind, field, value)
            changes[field] = value
    spec = scaler.body.get("spec") or {}
    low = changes.get("minReplicas", spec.get("minReplicas"))
    high = changes.get("maxReplicas", spec.get("maxReplicas"))
    if isinstance(low, int) and isinstance(high, int) and low > high:
        raise UserError(f"minReplicas {low} must not exceed maxReplicas {high}")
    counted = ("maxReplicas", high) if isinstance(high, int) else None
    return ScalePlan(PINSCALER.kind, scaler, {"spec": changes}, counted)
