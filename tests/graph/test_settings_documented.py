"""Every setting an operator can give, the core's and the bundled plugins', is in the README's
tables: a knob nobody can find is a knob nobody can use."""

from __future__ import annotations

import re

from pydantic_settings import BaseSettings

from graph.settings import Settings
from plugins.deployments.settings import DeploymentSettings
from plugins.observability.settings import ObservabilitySettings
from plugins.pincompute.settings import ComputeSettings
from tests.conftest import ROOT

_NAME = re.compile(r"`(ATRIUM_[A-Z0-9_]+)`")
_SHORT = re.compile(r"`(_[A-Z0-9_]+)`")


def _documented() -> set[str]:
    """Names in the README's table rows, with shorthands expanded: in a row
    "`ATRIUM_CACHE_MAX_ENTRIES` / `_MAX_BYTES` / `_TTL`" the short names replace the end of the
    full one (ATRIUM_CACHE_MAX_BYTES, ATRIUM_CACHE_TTL)."""
    names: set[str] = set()
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
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


def _settings(cls: type[BaseSettings]) -> set[str]:
    prefix = str(cls.model_config.get("env_prefix", ""))
    return {(prefix + field).upper() for field in cls.model_fields}


def test_every_setting_is_in_the_readme_tables() -> None:
    documented = _documented()
    classes = (Settings, DeploymentSettings, ObservabilitySettings, ComputeSettings)
    missing = sorted(name for cls in classes for name in _settings(cls) - documented)
    assert not missing, f"settings missing from the README's tables: {missing}"


def test_the_readme_names_no_setting_that_does_not_exist() -> None:
    classes = (Settings, DeploymentSettings, ObservabilitySettings, ComputeSettings)
    known = set().union(*(_settings(cls) for cls in classes))
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    # ATRIUM_TEST_* and ATRIUM_BENCH_* name the servers tests and the benchmark use, not settings.
    named = {n for n in _NAME.findall(text) if not n.startswith(("ATRIUM_TEST_", "ATRIUM_BENCH_"))}
    unknown = sorted(named - known)
    assert not unknown, f"the README names settings Atrium does not have: {unknown}"
