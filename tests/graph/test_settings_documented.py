"""Every setting an operator can give, the core's and the bundled plugins', is in the README's
tables: a knob nobody can find is a knob nobody can use. The README's ``atrium.toml`` examples
name only settings that exist, each in the section of the plugin that has it."""

from __future__ import annotations

import ast
import re
import tomllib
from functools import cache
from typing import Any

from pydantic import BaseModel

from graph.assembly import assemble, core_plugins
from graph.plugin import Plugin
from graph.plugin_settings import ENV_PREFIX
from graph.settings import Settings
from plugins.deployments.plugin import DeploymentsPlugin
from plugins.observability.plugin import ObservabilityPlugin
from plugins.pincompute.plugin import PinComputePlugin
from tests.conftest import ROOT

_NAME = re.compile(r"`(ATRIUM_[A-Z0-9_]+)`")
_SHORT = re.compile(r"`(_[A-Z0-9_]+)`")
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def _documented() -> set[str]:
    """Names in the README's table rows, with shorthands expanded: in a row
    "`ATRIUM_CACHE_MAX_ENTRIES` / `_MAX_BYTES` / `_TTL`" the short names replace the end of the
    full one (ATRIUM_CACHE_MAX_BYTES, ATRIUM_CACHE_TTL)."""
    names: set[str] = set()
    for line in _readme().splitlines():
        if not line.startswith("|"):
            continue
        first_cell = line.split("|")[1]
        full = _NAME.findall(first_cell)
        names.update(full)
        for short in _SHORT.findall(first_cell):
            for name in full:
                parts = name.split("_")
                names.update("_".join(parts[:k]) + short for k in range(2, len(parts)))
    return names


@cache
def _bundled() -> dict[str, type[BaseModel]]:
    """Each bundled plugin's settings model, by plugin id, as the plugin reads it."""
    plugins: list[Plugin] = [DeploymentsPlugin(), ObservabilityPlugin(), PinComputePlugin()]
    read = assemble(Settings(), [*core_plugins(), *plugins]).plugin_settings
    assert sorted(read) == ["deployments", "observability", "pincompute"]
    return {plugin_id: type(found.values) for plugin_id, found in read.items()}


def _example_fields() -> dict[str, set[str]]:
    """Fields of the settings models the README's Python examples declare (``class
    X(PluginSettings)``), by the example plugin's id (``id = "..."`` in the same block)."""
    found: dict[str, set[str]] = {}
    for language, code in _BLOCK.findall(_readme()):
        if language != "python" or "PluginSettings)" not in code:
            continue
        tree = ast.parse(code)
        ids = [
            node.value.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "id" for t in node.targets)
            and isinstance(node.value, ast.Constant)
        ]
        fields = {
            stmt.target.id
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef)
            and any(isinstance(b, ast.Name) and b.id == "PluginSettings" for b in node.bases)
            for stmt in node.body
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
        }
        assert len(ids) == 1, f"a settings example names one plugin id: {ids}"
        found[str(ids[0])] = fields
    return found


def _env_names(fields: set[str], prefix: str = ENV_PREFIX) -> set[str]:
    return {(prefix + field).upper() for field in fields}


def _core() -> set[str]:
    return _env_names(set(Settings.model_fields), str(Settings.model_config.get("env_prefix")))


def _plugins() -> set[str]:
    return {n for model in _bundled().values() for n in _env_names(set(model.model_fields))}


def test_every_setting_is_in_the_readme_tables() -> None:
    missing = sorted((_core() | _plugins()) - _documented())
    assert not missing, f"settings missing from the README's tables: {missing}"


def test_the_readme_names_no_setting_that_does_not_exist() -> None:
    examples = {n for fields in _example_fields().values() for n in _env_names(fields)}
    known = _core() | _plugins() | examples
    # ATRIUM_TEST_* and ATRIUM_BENCH_* name the servers tests and the benchmark use, not settings.
    named = {
        n for n in _NAME.findall(_readme()) if not n.startswith(("ATRIUM_TEST_", "ATRIUM_BENCH_"))
    }
    unknown = sorted(named - known)
    assert not unknown, f"the README names settings Atrium does not have: {unknown}"


def test_the_readme_s_atrium_toml_examples_put_each_setting_where_it_is_read() -> None:
    sections = {pid: set(model.model_fields) for pid, model in _bundled().items()}
    sections |= _example_fields()
    anywhere = set(Settings.model_fields) | {f for fields in sections.values() for f in fields}
    documents: list[dict[str, Any]] = [
        tomllib.loads(code) for language, code in _BLOCK.findall(_readme()) if language == "toml"
    ]
    assert any("plugins" in document for document in documents), "no [plugins.<id>] example"
    wrong: list[str] = []
    for document in documents:
        wrong += [f"{key} (top)" for key in document.keys() - anywhere - {"plugins"}]
        for plugin_id, section in document.get("plugins", {}).items():
            if plugin_id not in sections:
                wrong.append(f"[plugins.{plugin_id}]: no such plugin")
                continue
            wrong += [
                f"[plugins.{plugin_id}] {key}" for key in section.keys() - sections[plugin_id]
            ]
    assert not wrong, f"the README's atrium.toml examples name settings that are not there: {wrong}"
