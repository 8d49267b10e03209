"""The ``workloads`` service PinCompute provides to other plugins.

Another plugin finds it with ``service(context, "workloads")``.

Small on purpose: read a PinApp (or an entity's), roll it to another image on a viewer's
behalf, and follow that rollout from the informers. A caller never patches a cluster itself,
so every image change goes through the same checks as ``setWorkloadImage``:

* the PinApp must exist (``NOT_FOUND``) and the viewer must be allowed to change it (its
  entity's owners and admins, ``FORBIDDEN``);
* the new spec must pass the CRD's schema (``BAD_USER_INPUT``);
* ``expect_image``: the image the caller believes is running. When the PinApp runs another
  one (someone changed it meanwhile), the change is refused with ``CONFLICT`` instead of
  overwriting theirs; the patch also carries the object's ``resourceVersion``, so the API
  server refuses it (409, ``CONFLICT`` too) when the object changed between our read and write.

A rollout is described by a plain dict (``Rollout.to_json``) the caller may store and hand back
later, from any replica: ``rollout_state`` answers from the informer's copy, never the API.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import plugins.pincompute.kube as kube
from graph.plugin import Context, UserError, entity_owner, viewer_may_change
from plugins.pincompute.compute import PINAPP, Compute, ComputeError
from plugins.pincompute.store import Key, StoredObject
from plugins.pincompute.validation import ManifestError, validate_body

__all__ = ["RolloutState", "WorkloadView", "Workloads"]

RolloutState = Literal["progressing", "complete", "failed", "gone"]


@dataclass(frozen=True, slots=True)
class WorkloadView:
    cluster: str
    namespace: str
    name: str
    image: str | None
    entity_ref: str | None
    resource_version: str | None
    # spec.resources: {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {...}}
    resources: dict[str, Any]

    @classmethod
    def of(cls, stored: StoredObject) -> WorkloadView:
        return cls(
            stored.key.cluster,
            stored.key.namespace,
            stored.key.name,
            (stored.body.get("spec") or {}).get("image"),
            stored.entity_ref,
            stored.resource_version,
            dict((stored.body.get("spec") or {}).get("resources") or {}),
        )


class Workloads:
    def __init__(self, compute: Compute) -> None:
        self._compute = compute

    def get(self, cluster: str, namespace: str, name: str) -> WorkloadView | None:
        stored = self._compute.pinapps.get(Key(cluster, namespace, name))
        return WorkloadView.of(stored) if stored is not None else None

    def of_entity(self, ref: str) -> list[WorkloadView]:
        """The PinApps of a catalog entity (by their ``atrium.dev/entity-ref``), by key."""
        found = self._compute.pinapps.of_entities([ref])
        return [WorkloadView.of(s) for s in sorted(found, key=lambda s: s.key)]

    async def set_image(
        self,
        context: Context,
        cluster: str,
        namespace: str,
        name: str,
        image: str,
        *,
        expect_image: str | None = None,
    ) -> dict[str, Any]:
        """Roll the PinApp to ``image``; returns the rollout to follow (``rollout_state``)."""
        key = Key(cluster, namespace, name)
        stored = self._compute.pinapps.get(key)
        if stored is None:
            raise UserError(f"no PinApp {namespace}/{name} in cluster {cluster}", "NOT_FOUND")
        owner = await entity_owner(context, stored.entity_ref) if stored.entity_ref else None
        if not await viewer_may_change(context, owner):
            raise UserError(
                f"{context.viewer.ref or 'this caller'} may not change PinApp {key}: it belongs "
                f"to {stored.entity_ref or 'no entity'}, owned by {owner or 'nobody'}",
                "FORBIDDEN",
            )
        running = (stored.body.get("spec") or {}).get("image")
        if expect_image is not None and running != expect_image:
            raise UserError(
                f"PinApp {key} runs {running}, not {expect_image}: it was changed meanwhile",
                "CONFLICT",
            )
        patch: dict[str, Any] = {"spec": {"image": image}}
        planned = {**stored.body, "spec": {**(stored.body.get("spec") or {}), "image": image}}
        try:
            validate_body(PINAPP.kind, planned)
        except ManifestError as exc:
            raise UserError(f"invalid image for PinApp {key}: {exc}") from exc
        if stored.resource_version is not None:
            patch["metadata"] = {"resourceVersion": stored.resource_version}
        try:
            body = await self._compute.merge_patch(PINAPP.kind, key, patch)
        except ComputeError as exc:
            cause = exc.__cause__
            if isinstance(cause, kube.ApiException) and cause.status == 409:
                raise UserError(f"PinApp {key} changed meanwhile: {exc}", "CONFLICT") from exc
            raise UserError(str(exc), "UNAVAILABLE") from exc
        metadata = body.get("metadata") or {}
        return {
            "cluster": cluster,
            "namespace": namespace,
            "name": name,
            "image": image,
            "generation": metadata.get("generation"),
            "status": body.get("status") or {},
        }

    def rollout_state(self, rollout: dict[str, Any]) -> RolloutState:
        """Where a rollout begun by ``set_image`` stands, from the informer's copy.

        Complete once the controller reports every desired replica updated and ready for
        the new spec: ``status.observedGeneration`` reaching the patched generation, or, where
        the API server keeps no generation, a status written after the patch. ``failed``
        when the controller says its progress deadline passed, or the image was replaced.
        """
        stored = self._compute.pinapps.get(
            Key(rollout["cluster"], rollout["namespace"], rollout["name"])
        )
        if stored is None:
            return "gone"
        spec = stored.body.get("spec") or {}
        status = stored.body.get("status") or {}
        if spec.get("image") != rollout["image"]:
            return "failed"
        for condition in status.get("conditions") or []:
            if (
                isinstance(condition, dict)
                and condition.get("reason") == "ProgressDeadlineExceeded"
            ):
                return "failed"
        generation = rollout.get("generation")
        if generation is not None:
            observed = status.get("observedGeneration")
            if not isinstance(observed, int) or observed < generation:
                return "progressing"
        elif status == rollout.get("status"):
            return "progressing"  # nothing reported since the patch
        desired = int(status.get("replicas") or spec.get("replicas") or 0)
        updated = int(status.get("updatedReplicas") or 0)
        ready = int(status.get("readyReplicas") or 0)
        return "complete" if updated >= desired and ready >= desired else "progressing"

    def on_change(self, callback: Callable[[str, str, str], None]) -> Callable[[], None]:
        """Call ``callback(cluster, namespace, name)`` whenever a PinApp changes (from the
        informers); returns the function that stops it."""

        def listener(event: str, stored: StoredObject) -> None:
            callback(stored.key.cluster, stored.key.namespace, stored.key.name)

        self._compute.pinapps.listeners.append(listener)
        return lambda: self._compute.pinapps.listeners.remove(listener)
