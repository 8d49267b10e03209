"""Plugins' settings: a pydantic model per plugin, read as the core's settings are.

A field ``name`` of a plugin's model is set, strongest first, by the environment variable
``ATRIUM_<NAME>`` (lists, dicts and models as JSON), by ``name`` in the plugin's section of
``atrium.toml`` (``[plugins.<id>]``), or by ``name`` at the top of ``atrium.toml`` (the flat
form the core's settings use); otherwise by its default. What is read is validated at
start-up: a bad value raises ``InvalidPluginSettings`` naming the plugin, the setting and where
it came from, and so does a key in the plugin's section that is no setting of it (a typo).
"""

from __future__ import annotations

import json
import os
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, SecretBytes, SecretStr, ValidationError

from sources.errors import AtriumError

__all__ = [
    "ENV_PREFIX",
    "SECRET_MASK",
    "InvalidPluginSettings",
    "PluginSettings",
    "ReadSettings",
    "Setting",
    "SettingSource",
    "read_plugin_settings",
]

ENV_PREFIX = "ATRIUM_"
SECRET_MASK = "**********"
# Field names taken for secrets though not declared SecretStr: shown masked all the same.
_SECRET_WORDS = ("secret", "password", "token", "private_key", "api_key")

M = TypeVar("M", bound=BaseModel)


class PluginSettings(BaseModel):
    """The base of a plugin's settings model: a pydantic model whose fields are its settings.
    Unknown names are refused, so a misspelt keyword in a test fails instead of being lost."""

    model_config = ConfigDict(extra="forbid")


class InvalidPluginSettings(AtriumError):
    """A plugin's setting has a value its model refuses (or a section names no setting)."""


class SettingSource(StrEnum):
    DEFAULT = "default"
    ENVIRONMENT = "environment"
    FILE = "atrium.toml"


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting as read: its value for people (secrets masked) and where it came from."""

    name: str
    value: Any  # JSON-able; secrets are SECRET_MASK, passwords in URLs too
    source: SettingSource
    where: str  # the variable, or the file and key; "" for a default


@dataclass(frozen=True, slots=True)
class ReadSettings:
    """A plugin's validated settings and, for each field, where its value came from."""

    plugin_id: str
    values: BaseModel
    settings: tuple[Setting, ...]


def read_plugin_settings(
    plugin_id: str,
    model: type[M],
    *,
    file: Path,
    environ: Mapping[str, str] | None = None,
) -> tuple[M, ReadSettings]:
    """Read ``model`` for ``plugin_id`` from the environment and ``file`` (``atrium.toml``,
    read if it exists); raises ``InvalidPluginSettings`` saying every bad value."""
    environ = os.environ if environ is None else environ
    by_upper = {key.upper(): key for key in environ}
    document = _toml(file)
    section = _section(document, plugin_id, file)
    data: dict[str, Any] = {}
    origin: dict[str, tuple[SettingSource, str]] = {}
    problems: list[str] = []
    undecoded: set[str] = set()  # told already: not JSON
    for name in section.keys() - model.model_fields.keys():
        problems.append(f"{file} [plugins.{plugin_id}] {name}: no such setting")
    for name, info in model.model_fields.items():
        variable = f"{ENV_PREFIX}{name}".upper()
        if variable in by_upper:
            raw = environ[by_upper[variable]]
            origin[name] = (SettingSource.ENVIRONMENT, variable)
            if _is_complex(info.annotation):
                try:
                    data[name] = json.loads(raw)
                except ValueError:
                    problems.append(f"{name} from {variable}: not JSON ({_shown(name, info, raw)})")
                    undecoded.add(name)
                    continue
            else:
                data[name] = raw
        elif name in section:
            data[name] = section[name]
            origin[name] = (SettingSource.FILE, f"{file} [plugins.{plugin_id}] {name}")
        elif name in document and name != "plugins":
            data[name] = document[name]
            origin[name] = (SettingSource.FILE, f"{file} {name}")
    try:
        values = model.model_validate(data)
    except ValidationError as exc:
        errors = [e for e in exc.errors() if not e["loc"] or e["loc"][0] not in undecoded]
        problems += [_problem(model, error, data, origin) for error in errors]
    if problems:
        lines = "\n  ".join(problems)
        raise InvalidPluginSettings(f"plugin {plugin_id}: invalid settings:\n  {lines}")
    shown = tuple(_setting(model, values, name, origin) for name in model.model_fields)
    return values, ReadSettings(plugin_id, values, shown)


def _toml(file: Path) -> dict[str, Any]:
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidPluginSettings(f"{file} is not valid TOML: {exc}") from None


def _section(document: dict[str, Any], plugin_id: str, file: Path) -> dict[str, Any]:
    plugins = document.get("plugins", {})
    section = plugins.get(plugin_id, {}) if isinstance(plugins, dict) else {}
    if not isinstance(section, dict):
        raise InvalidPluginSettings(
            f"plugin {plugin_id}: [plugins.{plugin_id}] in {file} must be a table of settings"
        )
    return section


def _problem(
    model: type[BaseModel],
    error: Any,
    data: dict[str, Any],
    origin: dict[str, tuple[SettingSource, str]],
) -> str:
    loc = tuple(error["loc"])
    if not loc:  # a model validator: about several settings at once
        return str(error["msg"])
    name = str(loc[0])
    path = name + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc[1:])
    where = origin.get(name, (SettingSource.DEFAULT, ""))[1]
    came = f" from {where}" if where else " (no value given)"
    info = model.model_fields.get(name)
    value = f" ({_shown(name, info, data[name])})" if name in data and info is not None else ""
    return f"{path}{came}{value}: {error['msg']}"


def _shown(name: str, info: Any, raw: Any) -> str:
    """A value as given, for an error message: never a secret's."""
    if _is_secret(name, info.annotation):
        return "the value is not shown: a secret"
    text = raw if isinstance(raw, str) else json.dumps(raw, default=str)
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _setting(
    model: type[BaseModel],
    values: BaseModel,
    name: str,
    origin: dict[str, tuple[SettingSource, str]],
) -> Setting:
    source, where = origin.get(name, (SettingSource.DEFAULT, ""))
    value = values.model_dump(mode="json", include={name}).get(name)
    if value is not None and _is_secret(name, model.model_fields[name].annotation):
        value = SECRET_MASK
    elif isinstance(value, str) and "://" in value:
        value = _without_password(value)
    return Setting(name, value, source, where)


def _without_password(url: str) -> str:
    """A URL with the password of its user part masked (https://user:****@host/)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.password is None:
        return url
    netloc = f"{parts.username}:{SECRET_MASK}@{parts.hostname or ''}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def _members(annotation: Any) -> list[Any]:
    """The types an annotation allows: the members of a union, without Annotated's extras."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _members(arg)]
    return [annotation]


def _is_secret(name: str, annotation: Any) -> bool:
    kinds = _members(annotation)
    declared = any(isinstance(k, type) and issubclass(k, SecretStr | SecretBytes) for k in kinds)
    return declared or any(word in name.lower() for word in _SECRET_WORDS)


def _is_complex(annotation: Any) -> bool:
    """Whether an environment variable gives this field as JSON (as pydantic-settings reads
    the core's): lists, dicts, sets, tuples and models."""
    for kind in _members(annotation):
        origin = typing.get_origin(kind) or kind
        if isinstance(origin, type) and issubclass(
            origin, list | dict | set | frozenset | tuple | BaseModel
        ):
            return True
    return False
