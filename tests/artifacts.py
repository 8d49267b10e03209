"""What several test modules build from this checkout, built once a session and shared:
Atrium's wheel, made as the image's wheel stage makes it (deploy/Dockerfile's COPY lines done
into a directory standing for the stage's filesystem, then deploy/build-wheel.sh). The image's
test (tests/production/test_deploy_image.py) installs it into the runtime's environment, the
example plugin's (tests/console/test_example_plugin_wheel.py) into a plugin author's, and
tests/test_typed_wheel.py type-checks a plugin against it.

A build takes seconds, and ``make test`` may run those modules at the same time on its
processes: the first process to ask builds it, in a directory of the temporary root that
every xdist worker of the session shares, named by a digest of what it is made of (the
stage's instructions, the files its COPY lines take, the interpreter), so that a changed
source is never served an old build. A file lock keeps the others waiting while it builds,
and a mark written once it is complete keeps anyone from taking a half-built one (a build
that failed is started afresh by the next to ask). What these functions return is shared:
read it, copy it before changing anything."""

from __future__ import annotations

import fcntl
import fnmatch
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.production import dockerfile

__all__ = [
    "BUILD_TIMEOUT",
    "EXAMPLE_PLUGIN",
    "WHEEL_STAGE",
    "atrium_wheel",
    "example_plugin_site",
    "outside_this_checkout",
    "shared",
    "wheel_stage",
]

BUILD_TIMEOUT = 600  # seconds, a bound on a stuck build, not a measure
WHEEL_STAGE = "wheel"
EXAMPLE_PLUGIN = ROOT / "tests" / "example_plugin"
_BUILT_IN_PLACE = ("__pycache__", "build", "*.egg-info")  # what a build leaves in its source


def outside_this_checkout() -> dict[str, str]:
    """This process's environment without what would lead a program to this checkout's code
    or settings."""
    dropped = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
    return {k: v for k, v in os.environ.items() if k not in dropped and not k.startswith("ATRIUM_")}


def _session_root(factory: pytest.TempPathFactory) -> Path:
    """The session's temporary root that all its xdist workers share (each worker's own
    temporary directory is in it), or this process's own when it runs alone."""
    base = factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"
    root.mkdir(exist_ok=True)
    return root


def shared(
    factory: pytest.TempPathFactory, name: str, digest: str, build: Callable[[Path], None]
) -> Path:
    """The directory ``build`` fills, built once a session for every process that asks with
    the same ``name`` and ``digest`` (of whatever the build reads)."""
    root = _session_root(factory)
    built = root / f"{name}-{digest[:20]}"
    complete = root / f"{built.name}.complete"
    if complete.exists():
        return built
    with (root / f"{built.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or its process ends
        if not complete.exists():  # nobody built it while this process waited
            shutil.rmtree(built, ignore_errors=True)  # what a failed build left
            built.mkdir()
            build(built)
            complete.touch()
    return built


def _stage_digest(stage: dockerfile.Stage) -> str:
    """Of what a stage that takes nothing from another stage is built from: its
    instructions, every file its COPY lines take from the context, and the interpreter that
    runs its scripts."""
    digest = hashlib.sha256(repr((stage, sys.executable, sys.version)).encode())
    for step in stage.copies():
        assert step.stage is None, f"stage {stage.name} copies from stage {step.stage}"
        for source in step.sources:
            for relative in dockerfile.context_files(source):
                data = (ROOT / relative).read_bytes()
                digest.update(f"{source}\0{relative}\0{len(data)}\0".encode())
                digest.update(data)
    return digest.hexdigest()


def wheel_stage(factory: pytest.TempPathFactory) -> Path:
    """The directory standing for the wheel stage's filesystem once its steps ran: its COPY
    lines done (as .dockerignore filters the context), then its script, run as the image's
    tests run it (``PYTHON`` the interpreter of these tests)."""
    stage = dockerfile.stages()[WHEEL_STAGE]

    def build(root: Path) -> None:
        def from_another(name: str) -> None:
            raise AssertionError(f"the wheel stage takes from stage {name}")

        env = outside_this_checkout() | {"PYTHON": sys.executable}
        for cwd, words in dockerfile.replay(stage, root, {}, from_another):
            done = subprocess.run(
                words,
                cwd=cwd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=BUILD_TIMEOUT,
            )
            assert done.returncode == 0, f"the wheel stage failed:\n{done.stdout[-4000:]}"

    return shared(factory, "wheel-stage", _stage_digest(stage), build)


def atrium_wheel(factory: pytest.TempPathFactory) -> Path:
    """Atrium's wheel, where the wheel stage's script left it (its second argument)."""
    _, (_, out) = dockerfile.build_step(dockerfile.stages()[WHEEL_STAGE])
    [wheel] = dockerfile.inside(wheel_stage(factory), "/", out).glob("atrium-*.whl")
    return wheel


def example_plugin_site(factory: pytest.TempPathFactory) -> Path:
    """The example plugin (tests/example_plugin) pip-installed into a directory of its own, as
    any package is (``--target``, without its dependencies), built from a copy of its sources:
    pip builds in the source tree, and a build in the checkout would leave build/ and egg-info
    there, shared by processes building at once."""
    digest = hashlib.sha256()
    for path in sorted(EXAMPLE_PLUGIN.rglob("*")):
        relative = path.relative_to(EXAMPLE_PLUGIN)
        built = any(fnmatch.fnmatch(part, p) for part in relative.parts for p in _BUILT_IN_PLACE)
        if path.is_file() and not built:
            data = path.read_bytes()
            digest.update(f"{relative}\0{len(data)}\0".encode())
            digest.update(data)

    def build(root: Path) -> None:
        source = root / "source"
        shutil.copytree(EXAMPLE_PLUGIN, source, ignore=shutil.ignore_patterns(*_BUILT_IN_PLACE))
        done = subprocess.run(
            [
                *(sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"),
                *("--no-build-isolation", "--target", str(root / "site"), str(source)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=BUILD_TIMEOUT,
        )
        assert done.returncode == 0, f"the example plugin did not install:\n{done.stdout[-4000:]}"

    return shared(factory, "example-plugin", digest.hexdigest(), build) / "site"
