"""A component's pipeline: declared in its ``catalog-info.yaml``, or set through the API.

Declared in the entity's spec (the declaration wins, and the API refuses to replace it)::

    spec:
      pipeline:
        - name: canary
          pinApp: {cluster: prod-east, namespace: shipping, name: shipping-canary}
        - name: staging
        - name: production
          production: true          # counted by DORA figures; default: the last stage
          pinApp: {cluster: prod-east, namespace: shipping, name: shipping-service}

or, stage names only, as an annotation: ``atrium.dev/pipeline: canary, staging, production``.
A stage bound to a PinApp is deployed by rolling that PinApp to the release's artifact; any
other stage by asking the CD system (``ATRIUM_DEPLOYMENTS_CD_URL``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

import orjson

__all__ = ["PIPELINE_ANNOTATION", "Pipeline", "PipelineError", "Stage", "declared", "parse_stages"]

PIPELINE_ANNOTATION: Final = "atrium.dev/pipeline"
MAX_STAGES: Final = 20
_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


class PipelineError(ValueError):
    """A pipeline that cannot be used; the message says which stage and why."""


@dataclass(frozen=True, slots=True)
class Stage:
    name: str
    production: bool = False
    # The PinApp the stage deploys to: (cluster, namespace, name).
    pin_app: tuple[str, str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"name": self.name}
        if self.production:
            found["production"] = True
        if self.pin_app is not None:
            cluster, namespace, name = self.pin_app
            found["pinApp"] = {"cluster": cluster, "namespace": namespace, "name": name}
        return found


@dataclass(frozen=True, slots=True)
class Pipeline:
    stages: tuple[Stage, ...]
    declared_in: str  # "catalog" (the entity's YAML), "api", or "events" (stages seen only)

    def stage(self, name: str) -> Stage | None:
        return next((s for s in self.stages if s.name == name), None)

    def before(self, name: str) -> Stage | None:
        names = [s.name for s in self.stages]
        index = names.index(name) if name in names else -1
        return self.stages[index - 1] if index > 0 else None


def parse_stages(raw: Any) -> tuple[Stage, ...]:
    """Stages from JSON-like values (a spec section, a mutation's input, a stored row)."""
    if not isinstance(raw, list) or not raw:
        raise PipelineError("a pipeline is a non-empty list of stages")
    if len(raw) > MAX_STAGES:
        raise PipelineError(f"a pipeline has at most {MAX_STAGES} stages")
    stages: list[Stage] = []
    for index, item in enumerate(raw):
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict):
            raise PipelineError(f"stage {index + 1} is not a mapping")
        name = item.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise PipelineError(
                f"stage {index + 1}: name must be letters, digits, '.', '_' or '-' "
                "(at most 63), starting with a letter or digit"
            )
        if any(s.name == name for s in stages):
            raise PipelineError(f"stage {name} appears twice")
        pin_app = item.get("pinApp")
        bound: tuple[str, str, str] | None = None
        if pin_app is not None:
            if not isinstance(pin_app, dict) or not all(
                isinstance(pin_app.get(k), str) and pin_app.get(k)
                for k in ("cluster", "namespace", "name")
            ):
                raise PipelineError(f"stage {name}: pinApp needs cluster, namespace and name")
            bound = (pin_app["cluster"], pin_app["namespace"], pin_app["name"])
        stages.append(Stage(name, bool(item.get("production")), bound))
    if not any(s.production for s in stages):
        last = stages[-1]
        stages[-1] = Stage(last.name, True, last.pin_app)
    return tuple(stages)


def declared(spec: Any, annotations: Any) -> Pipeline | None:
    """The pipeline an entity's YAML declares, if any; raises PipelineError when it is wrong."""
    if isinstance(spec, dict) and spec.get("pipeline") is not None:
        return Pipeline(parse_stages(spec["pipeline"]), "catalog")
    if isinstance(annotations, dict) and isinstance(annotations.get(PIPELINE_ANNOTATION), str):
        names = [n.strip() for n in annotations[PIPELINE_ANNOTATION].split(",") if n.strip()]
        return Pipeline(parse_stages(names), "catalog")
    return None


def stored(stages: Any) -> Pipeline:
    raw = orjson.loads(stages) if isinstance(stages, str) else stages
    return Pipeline(parse_stages(raw), "api")
