"""deploy/kubernetes read strictly, and the settings Atrium reads, for the deploy tests.

The Kubernetes client's models accept and drop keys they do not know, and coerce "8000" to a
port; a manifest is built into its model here field by field instead: a key that no model
has, a value of the wrong type or a required field left out fails, naming where."""

from __future__ import annotations

import importlib
import pkgutil
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client
from pydantic import BaseModel, SecretStr
from pydantic_settings import BaseSettings

from graph.assembly import installed_plugins
from graph.plugin_settings import ENV_PREFIX, PluginSettings
from graph.settings import Settings
from tests.conftest import ROOT

KUBERNETES = ROOT / "deploy" / "kubernetes"
KUSTOMIZATION = KUBERNETES / "kustomization.yaml"
SECRET_EXAMPLE = KUBERNETES / "secret.example.yaml"

_PRIMITIVES: dict[str, type | tuple[type, ...]] = {
    "str": str,
    "int": int,
    "float": (int, float),
    "bool": bool,
    "datetime": str,
    "date": str,
}


class Invalid(AssertionError):
    """A manifest that the API server would refuse or read otherwise than written."""


def model_class(document: dict[str, Any]) -> type:
    """The model of a document's apiVersion and kind, which that API group and version must
    serve (AppsV1Api creates Deployments, PolicyV1Api PodDisruptionBudgets...)."""
    group, _, version = document["apiVersion"].rpartition("/")
    kind = document["kind"]
    api_name = "".join(p.capitalize() for p in group.removesuffix(".k8s.io").split(".")) or "Core"
    api = getattr(client, f"{api_name}{version.capitalize()}Api", None)
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()
    if api is None or not hasattr(api, f"create_namespaced_{snake}"):
        raise Invalid(f"{document['apiVersion']} serves no {kind}")
    model = getattr(client, f"{version.capitalize()}{kind}", None)
    if model is None:
        raise Invalid(f"no model for {kind} in {version}")
    return model


def build(data: Any, type_name: str, where: str) -> Any:
    """``data`` as the client's type ``type_name`` (a model's name, ``list[...]``,
    ``dict(str, ...)`` or a primitive), checked all the way down."""
    if type_name.startswith("list["):
        if not isinstance(data, list):
            raise Invalid(f"{where}: a list expected, got {data!r}")
        return [build(item, type_name[5:-1], f"{where}[{i}]") for i, item in enumerate(data)]
    if type_name.startswith("dict("):
        value_type = type_name[5:-1].split(", ", 1)[1]
        if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
            raise Invalid(f"{where}: a mapping expected, got {data!r}")
        return {k: build(v, value_type, f"{where}.{k}") for k, v in data.items()}
    if type_name == "object":  # int-or-string (ports, surges) and quantities
        if not isinstance(data, str | int) or isinstance(data, bool):
            raise Invalid(f"{where}: a number or a string expected, got {data!r}")
        return data
    if type_name in _PRIMITIVES:
        if not isinstance(data, _PRIMITIVES[type_name]) or (
            isinstance(data, bool) and type_name != "bool"
        ):
            raise Invalid(f"{where}: {type_name} expected, got {data!r}")
        return data
    model = getattr(client, type_name)
    if not isinstance(data, dict):
        raise Invalid(f"{where}: {type_name} expected, got {data!r}")
    known = set(model.attribute_map.values())
    unknown = sorted(set(data) - known)
    if unknown:
        raise Invalid(f"{where}: {type_name} has no field {', '.join(unknown)}")
    arguments = {
        attribute: build(data[key], model.openapi_types[attribute], f"{where}.{key}")
        for attribute, key in model.attribute_map.items()
        if key in data
    }
    try:
        return model(**arguments)  # the client's own checks: required fields, enums
    except ValueError as exc:
        raise Invalid(f"{where}: {exc}") from exc


def to_model(document: dict[str, Any], where: str) -> Any:
    return build(document, model_class(document).__name__, where)


@dataclass(frozen=True)
class Manifest:
    path: Path
    document: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.document["kind"])

    @property
    def name(self) -> str:
        return str(self.document["metadata"]["name"])

    @property
    def model(self) -> Any:
        return to_model(self.document, f"{self.path.name} {self.kind}/{self.name}")


def manifest_files() -> list[Path]:
    """Every YAML file of deploy/kubernetes but the kustomization itself."""
    return sorted(p for p in KUBERNETES.glob("*.yaml") if p != KUSTOMIZATION)


def manifests() -> list[Manifest]:
    return [
        Manifest(path, document)
        for path in manifest_files()
        for document in yaml.safe_load_all(path.read_text())
        if document is not None
    ]


def the(kind: str) -> Manifest:
    """The one manifest of a kind among those the kustomization applies (or the Secret's
    example)."""
    found = [m for m in manifests() if m.kind == kind]
    assert len(found) == 1, f"{len(found)} manifests of kind {kind}"
    return found[0]


def kustomization() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(KUSTOMIZATION.read_text())
    return loaded


@dataclass(frozen=True)
class Setting:
    """A variable Atrium reads: its class (the core's settings, or a plugin's settings model)
    and field."""

    cls: type[BaseModel]
    field: str

    @property
    def secret(self) -> bool:
        return _holds(self.cls.model_fields[self.field].annotation, SecretStr)


def _holds(annotation: Any, wanted: type) -> bool:
    return annotation is wanted or any(_holds(a, wanted) for a in typing.get_args(annotation))


def atrium_settings() -> dict[str, Setting]:
    """Every ``ATRIUM_`` variable Atrium reads, by name: the core's Settings, and each
    settings model in the bundled plugins (found through their entry points, as `atrium serve`
    finds them; a plugin's model reads ``ATRIUM_<FIELD>``, see ``graph.plugin_settings``).
    A third-party plugin installed beside them documents and deploys its own."""
    packages = [ep.module for ep in installed_plugins(bundled=True)]
    for package in packages:
        module = importlib.import_module(package)
        for info in pkgutil.walk_packages(getattr(module, "__path__", []), f"{package}."):
            importlib.import_module(info.name)

    def in_plugins(cls: type) -> bool:
        return any(cls.__module__ == p or cls.__module__.startswith(f"{p}.") for p in packages)

    classes: list[type[BaseModel]] = [Settings]
    classes += [cls for cls in _subclasses(BaseSettings) if in_plugins(cls)]
    classes += [cls for cls in _subclasses(PluginSettings) if in_plugins(cls)]
    found = {}
    for cls in classes:
        prefix = str(cls.model_config.get("env_prefix", ENV_PREFIX))
        assert prefix == ENV_PREFIX, f"{cls.__name__} reads {prefix}*"
        for name in cls.model_fields:
            found[f"{prefix}{name}".upper()] = Setting(cls, name)
    return found


def _subclasses(cls: type) -> list[type]:
    return [sub for direct in cls.__subclasses__() for sub in (direct, *_subclasses(direct))]


def settings_classes() -> list[type[BaseModel]]:
    return list(dict.fromkeys(s.cls for s in atrium_settings().values()))
