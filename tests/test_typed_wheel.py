"""Atrium's wheel (the session's, tests/artifacts.py, built as the image builds it) carries
PEP 561 markers: a plugin in its own package, with Atrium installed from the wheel alone (no
checkout on the path), passes ``mypy --strict``, its fields joining the catalog's types read
typed parents."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import artifacts

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "tests" / "example_plugin"
PACKAGES = ("atrium", "graph", "resolvers", "loaders", "sources", "plugins", "ssr")


def test_a_plugin_passes_mypy_strict_against_the_installed_wheel(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    wheel = artifacts.atrium_wheel(tmp_path_factory)
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"{package}/py.typed" for package in PACKAGES} <= names
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--target", str(site), str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    plugin = tmp_path / "plugin"
    shutil.copytree(EXAMPLE, plugin, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(site)}
    # Its cache starts empty: the first check reads everything, the two after it only what
    # changed (a module added, a marker gone), each still reported as below.
    mypy = [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy"), "atrium_hello"]
    checked = subprocess.run(mypy, cwd=plugin, env=env, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Success: no issues found" in checked.stdout
    # It checked against the wheel's types: a wrong use of a parent is reported.
    (plugin / "atrium_hello" / "wrong.py").write_text(
        "from graph.plugin import EntityParent, Parent, change_key\n\n\n"
        "def size(parent: Parent[EntityParent]) -> int:\n"
        "    return parent.ref\n\n\n"
        "KEY: int = change_key('hello', 'x')\n"
    )
    wrong = subprocess.run(mypy, cwd=plugin, env=env, capture_output=True, text=True)
    assert wrong.returncode == 1
    assert 'wrong.py:5: error: Incompatible return value type (got "str"' in wrong.stdout
    assert "wrong.py:8: error: Incompatible types in assignment" in wrong.stdout
    # The marker is what lets mypy read the installed package.
    (plugin / "atrium_hello" / "wrong.py").unlink()
    (site / "graph" / "py.typed").unlink()
    unmarked = subprocess.run(mypy, cwd=plugin, env=env, capture_output=True, text=True)
    assert unmarked.returncode == 1
    assert "missing library stubs or py.typed marker" in unmarked.stdout
