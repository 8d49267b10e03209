"""Manifests checked before they reach a cluster: the CRD's schema, then the team's quota."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import yaml

from graph.plugin import InvalidYaml, load_yaml
from plugins.pincompute.compute import PINAPP, PINSCALER, Compute
from plugins.pincompute.informer import GROUP, VERSION
from plugins.pincompute.model import cpu_millis, memory_bytes, requested
from plugins.pincompute.names import is_label, is_subdomain
from plugins.pincompute.settings import Quota
from plugins.pincompute.store import ENTITY_ANNOTATION, Key

if TYPE_CHECKING:
    import jsonschema

__all__ = [
    "ManifestError",
    "Usage",
    "check_quota",
    "parse_manifest",
    "replica_limits",
    "usage",
    "validate_body",
]

CRDS: Final = Path(__file__).parent / "crds"


class ManifestError(Exception):
    """Why a manifest was refused; ``problems`` name each field."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@cache
def _schema(kind: str) -> dict[str, Any]:
    plural = PINAPP.plural if kind == PINAPP.kind else PINSCALER.plural
    crd = yaml.safe_load((CRDS / f"{plural[:-1]}.yaml").read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


@cache
def _validator(kind: str) -> jsonschema.protocols.Validator:
    import jsonschema  # the first manifest checked pays for it, not every process's start

    schema = _schema(kind)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    return cls(schema)


def replica_limits(kind: str, field: str) -> tuple[int | None, int | None]:
    """The least and greatest value the CRD allows for ``spec.<field>`` (``replicas``,
    ``minReplicas``, ``maxReplicas``), as the API server would enforce them."""
    found = _schema(kind)["properties"]["spec"]["properties"][field]
    return found.get("minimum"), found.get("maximum")


def validate_body(kind: str, body: dict[str, Any]) -> None:
    """A whole object against its CRD's schema, as the API server would check it."""
    problems = [
        f"{'.'.join(str(p) for p in error.absolute_path) or '(document)'}: {error.message}"
        for error in sorted(_validator(kind).iter_errors(body), key=lambda e: list(e.absolute_path))
    ]
    if problems:
        raise ManifestError(problems)


def parse_manifest(text: str) -> dict[str, Any]:
    """One PinApp or PinScaler document, valid against its CRD, with its catalog entity."""
    try:
        documents = [d for d in load_yaml(text) if d is not None]
    except InvalidYaml as exc:
        raise ManifestError([str(exc)]) from None
    if len(documents) != 1:
        raise ManifestError([f"expected one manifest, found {len(documents)}"])
    body = documents[0]
    if not isinstance(body, dict):
        raise ManifestError(["(document): expected a mapping"])
    problems = []
    if body.get("apiVersion") != f"{GROUP}/{VERSION}":
        problems.append(f"apiVersion: must be {GROUP}/{VERSION}")
    kind = body.get("kind")
    if kind not in (PINAPP.kind, PINSCALER.kind):
        problems.append("kind: must be PinApp or PinScaler")
    metadata = body.get("metadata")
    if not isinstance(metadata, dict):
        problems.append("metadata: is required")
        metadata = {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    # Both go into the cluster's URLs (``plugins.pincompute.names``).
    if not isinstance(name, str) or not is_subdomain(name):
        problems.append("metadata.name: must be a lowercase DNS name")
    if not isinstance(namespace, str) or not is_label(namespace):
        problems.append("metadata.namespace: must be a lowercase DNS label")
    # Kubernetes keeps labels and annotations as strings; it would refuse anything else, and
    # the refusal would read as the cluster failing.
    for field in ("labels", "annotations"):
        values = metadata.get(field)
        if values is not None and not isinstance(values, dict):
            problems.append(f"metadata.{field}: must be a mapping of strings")
        elif values:
            problems += [
                f"metadata.{field}.{key}: must be a string"
                for key, value in values.items()
                if not isinstance(value, str)
            ]
    annotations = metadata.get("annotations") or {}
    if not isinstance(annotations, dict) or not isinstance(annotations.get(ENTITY_ANNOTATION), str):
        problems.append(
            f"metadata.annotations.{ENTITY_ANNOTATION}: is required, naming the owning entity"
        )
    if kind in (PINAPP.kind, PINSCALER.kind):
        for error in sorted(
            _validator(kind).iter_errors(body), key=lambda e: list(e.absolute_path)
        ):
            where = ".".join(str(p) for p in error.absolute_path) or "(document)"
            problems.append(f"{where}: {error.message}")
    if kind == PINSCALER.kind and not problems:
        spec = body["spec"]
        if spec["minReplicas"] > spec["maxReplicas"]:
            problems.append("spec.minReplicas: must not exceed spec.maxReplicas")
    if problems:
        raise ManifestError(problems)
    return body


class Usage:
    """Replicas, CPU and memory a set of workloads asks for at most."""

    def __init__(self) -> None:
        self.replicas = 0
        self.cpu = 0
        self.memory = 0

    def add(self, figures: tuple[int, int, int]) -> None:
        self.replicas += figures[0]
        self.cpu += figures[1]
        self.memory += figures[2]


def usage(
    compute: Compute, entity_refs: list[str], changed: dict[tuple[str, Key], dict[str, Any] | None]
) -> Usage:
    """What the workloads of these entities would ask for once ``changed`` is applied (a body
    replaces an object, None removes it). A PinApp counts at its scaler's maximum if scaled."""
    apps = {s.key: s.body for s in compute.pinapps.of_entities(entity_refs)}
    for (kind, key), body in changed.items():
        if kind == PINAPP.kind:
            if body is None:
                apps.pop(key, None)
            else:
                apps[key] = body
    total = Usage()
    for key, body in apps.items():
        spec = body.get("spec") or {}
        scaler = changed.get((PINSCALER.kind, _scaler_key(compute, key, changed)))
        if scaler is None:
            stored = compute.scaler_for(key)
            scaler = stored.body if stored is not None else None
        replicas = int(
            (scaler or {}).get("spec", {}).get("maxReplicas") or spec.get("replicas") or 1
        )
        total.add(requested(spec, replicas))
    return total


def _scaler_key(compute: Compute, app: Key, changed: dict[tuple[str, Key], Any]) -> Key:
    for (kind, key), body in changed.items():
        target = ((body or {}).get("spec") or {}).get("targetRef", {}).get("name")
        same_place = key.cluster == app.cluster and key.namespace == app.namespace
        if kind == PINSCALER.kind and same_place and target == app.name:
            return key
    return Key("", "", "")


def check_quota(owner: str, quota: Quota, planned: Usage) -> None:
    problems = []
    if quota.replicas is not None and planned.replicas > quota.replicas:
        problems.append(
            f"replicas: {planned.replicas} would exceed {owner}'s quota of {quota.replicas}"
        )
    if quota.cpu is not None and planned.cpu > cpu_millis(quota.cpu):
        problems.append(
            f"cpu: {planned.cpu}m requested would exceed {owner}'s quota of {quota.cpu}"
        )
    if quota.memory is not None and planned.memory > memory_bytes(quota.memory):
        asked = f"{planned.memory // 2**20}Mi"
        problems.append(f"memory: {asked} requested would exceed {owner}'s quota of {quota.memory}")
    if problems:
        raise ManifestError(problems)
