"""The image of deploy/Dockerfile, made without Docker: each stage's COPY lines done into a
directory standing for its filesystem, and the scripts its RUN lines run, run with the same
words (the console's build, the wheel, the runtime's virtual environment; the wheel stage is
the session's, tests/artifacts.py, which other modules install too). Then the installed
`atrium`, in the image's environment and nothing of this checkout, migrates an empty
database, imports a catalog and serves: ready, a console page, a persisted query."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import zipfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
import pytest

from atrium.testing.databases import new_database_name
from sources.persisted import document_hash
from tests import artifacts
from tests.artifacts import BUILD_TIMEOUT, outside_this_checkout
from tests.conftest import ROOT, _admin, _with_database
from tests.production import dockerfile
from tests.production.deploy_manifests import the

CATALOG = """\
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: harbour-team}
spec: {type: team, children: []}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: lighthouse, title: Lighthouse Service}
spec: {type: service, lifecycle: production, owner: group:harbour-team}
"""


@dataclass(frozen=True)
class Image:
    stages: dict[str, dockerfile.Stage]
    roots: dict[str, Path]  # each stage's filesystem

    def path(self, stage: str, path: str) -> Path:
        return dockerfile.inside(self.roots[stage], "/", path)

    @property
    def runtime(self) -> dockerfile.Stage:
        return self.stages["runtime"]

    @property
    def env(self) -> dict[str, str]:
        """The runtime's environment: the image's ENV, its paths mapped, over this process's
        own (for what a container has too: HOME, locale)."""
        mapped = {
            key: ":".join(self._mapped(part) for part in value.split(":"))
            for key, value in self.runtime.env().items()
        }
        return outside_this_checkout() | mapped

    def _mapped(self, part: str) -> str:
        if part == "$PATH":
            return os.environ["PATH"]
        return str(self.path("runtime", part)) if part.startswith("/") else part

    @property
    def workdir(self) -> Path:
        return self.path("runtime", self.runtime.workdir())

    @property
    def venv(self) -> Path:
        """Where the runtime's step installs Atrium (install-wheel.sh's first argument)."""
        _, (venv, *_) = dockerfile.build_step(self.runtime)
        return self.path("runtime", venv)

    def wheel(self) -> Path:
        """What the wheel stage's step made (build-wheel.sh's second argument)."""
        _, (_, out) = dockerfile.build_step(self.stages["wheel"])
        [wheel] = self.path("wheel", out).glob("atrium-*.whl")
        return wheel


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Image:
    """The three stages, the console's build running beside the others; the wheel stage
    built once a session for every module that installs Atrium's wheel."""
    base = tmp_path_factory.mktemp("image")
    stages = dockerfile.stages()
    roots = {name: base / name for name in stages}
    # The scripts pick their interpreter from PYTHON: the one these tests run on. npm ci
    # installs what web/package-lock.json pins (each version and its integrity), taking what
    # npm's cache holds without asking the registry again whether its metadata is current.
    env = outside_this_checkout() | {"PYTHON": sys.executable, "npm_config_prefer_offline": "true"}
    running: dict[str, list[subprocess.Popen[str]]] = {name: [] for name in stages}

    def built(name: str) -> None:
        for process in running[name]:
            output, _ = process.communicate(timeout=BUILD_TIMEOUT)
            assert process.returncode == 0, f"the {name} stage failed:\n{output[-4000:]}"

    try:
        for name, stage in stages.items():
            if name == artifacts.WHEEL_STAGE:  # its steps, replayed as below, run once a session
                roots[name] = artifacts.wheel_stage(tmp_path_factory)
                continue
            for cwd, words in dockerfile.replay(stage, roots[name], roots, built):
                running[name].append(
                    subprocess.Popen(
                        words,
                        cwd=cwd,
                        env=env,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        text=True,
                    )
                )
                if name != "console":  # the console builds while the others go on
                    built(name)
        built("console")
    finally:
        for process in (p for processes in running.values() for p in processes):
            if process.poll() is None:  # a stage failed while another was building
                process.kill()
                process.wait()
    return Image(stages, roots)


def test_the_wheel_carries_every_file_of_atriums_packages(image: Image) -> None:
    """Migrations, templates, CRDs: whatever lies in a package is read at run time."""
    source = image.path("wheel", image.stages["wheel"].workdir())
    packages = [p for p in source.iterdir() if (p / "__init__.py").is_file()]
    assert {p.name for p in packages} >= {"graph", "plugins", "ssr", "migrations"}
    expected = {
        f.relative_to(source).as_posix() for p in packages for f in p.rglob("*") if f.is_file()
    }
    with zipfile.ZipFile(image.wheel()) as wheel:
        held = set(wheel.namelist())
    missing = sorted(expected - held)
    assert not missing, f"the wheel lacks (pyproject.toml's package-data): {missing}"
    assert any(name.endswith(".sql") for name in held)
    # The benchmark and the tests run from a checkout; the wheel is the server alone.
    assert not [name for name in held if name.startswith(("bench/", "tests/"))]


def test_the_installed_atrium_is_the_wheels_alone(image: Image) -> None:
    """Nothing of this checkout: run from the image's WORKDIR, the packages and the command
    come from the runtime's virtual environment."""
    probe = "import graph, ssr, plugins, migrations; print(graph.__file__, ssr.__file__)"
    shown = subprocess.run(
        ["python", "-c", probe],
        cwd=image.workdir,
        env=image.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    site = image.venv / "lib"
    assert all(Path(p).is_relative_to(site) for p in shown), shown
    assert not any(Path(p).is_relative_to(ROOT) for p in shown), shown
    [command] = image.runtime.exec_form("ENTRYPOINT")
    assert shutil.which(command, path=image.env["PATH"]) == str(image.venv / "bin" / command)
    console = Path(image.env["ATRIUM_WEB_DIR"])
    assert (console / ".vite" / "manifest.json").is_file()
    assert (console / "persisted-query-manifest.json").is_file()


@pytest.fixture
async def empty_database(pg_admin_url: str) -> AsyncIterator[str]:
    name = new_database_name()
    async with _admin(pg_admin_url) as conn:
        await conn.execute(f'create database "{name}"')
    yield _with_database(pg_admin_url, name)
    async with _admin(pg_admin_url) as conn:
        await conn.execute(f'drop database if exists "{name}" with (force)')


async def _atrium(image: Image, env: dict[str, str], *args: str) -> str:
    process = await asyncio.create_subprocess_exec(
        *image.runtime.exec_form("ENTRYPOINT"),
        *args,
        cwd=image.workdir,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await asyncio.wait_for(process.communicate(), BUILD_TIMEOUT)
    assert process.returncode == 0, output.decode()
    return output.decode()


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_the_image_migrates_then_serves_in_production(
    image: Image, empty_database: str, redis_url: str, cache_prefix: str, tmp_path: Path
) -> None:
    env = image.env | {
        "ATRIUM_DATABASE_URL": empty_database,
        "ATRIUM_REDIS_URL": redis_url,
        "ATRIUM_CACHE_PREFIX": cache_prefix,
        "ATRIUM_SHUTDOWN_GRACE": "0",  # stopped at the end: no balancer to wait for
    }
    # The migrations Job's command, then a catalog to serve.
    [job] = the("Job").model.spec.template.spec.containers
    assert "database is up to date" in await _atrium(image, env, *job.args)
    (tmp_path / "catalog-info.yaml").write_text(CATALOG)
    imported = await _atrium(image, env, "catalog", "import", str(tmp_path / "catalog-info.yaml"))
    assert "created 2" in imported

    before = _files(image.workdir)
    log = tmp_path / "server.log"
    async with _serving(image, env, log) as http:
        assert (await http.get("/healthz")).status_code == 200
        ready = await http.get("/readyz")
        assert ready.status_code == 200, ready.text
        await _console_and_persisted_query(http, Path(env["ATRIUM_WEB_DIR"]))
    # What a read-only root filesystem needs: Atrium wrote nothing where it ran.
    assert _files(image.workdir) == before


@asynccontextmanager
async def _serving(
    image: Image, env: dict[str, str], log: Path
) -> AsyncIterator[httpx.AsyncClient]:
    """The image's command on a free local port instead of 0.0.0.0:8000, until it is ready;
    stopped as Kubernetes stops it (SIGTERM), which it must answer by exiting 0."""
    port = _free_port()
    command = image.runtime.exec_form("CMD")
    command[command.index("--host") + 1] = "127.0.0.1"
    command[command.index("--port") + 1] = str(port)
    with log.open("wb") as output:
        server = await asyncio.create_subprocess_exec(
            *image.runtime.exec_form("ENTRYPOINT"),
            *command,
            cwd=image.workdir,
            env=env,
            stdout=output,
            stderr=output,
        )
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
                await _until_ready(http, server, log.read_text)
                yield http
        finally:
            server.terminate()
            code = await asyncio.wait_for(server.wait(), 60)
    assert code == 0, await asyncio.to_thread(log.read_text)


async def _until_ready(
    http: httpx.AsyncClient, server: asyncio.subprocess.Process, log: Callable[[], str]
) -> None:
    for _ in range(600):  # a bound on a server that never starts (about a minute)
        assert server.returncode is None, log()
        try:
            if (await http.get("/readyz")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"not ready:\n{log()}")


async def _console_and_persisted_query(http: httpx.AsyncClient, console: Path) -> None:
    """A page server-rendered from the console's build, its entry script served, and one of
    the console's persisted queries by hash (production runs nothing else)."""
    page = await http.get("/catalog/default/component/lighthouse")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "Lighthouse Service" in page.text
    entry = page.text.split('<script type="module" src="', 1)[1].split('"', 1)[0]
    assert entry.startswith("/assets/")
    assert (await http.get(entry)).status_code == 200

    manifest = orjson.loads((console / "persisted-query-manifest.json").read_bytes())
    [body] = [op["body"] for op in manifest["operations"] if op["name"] == "EntityPage"]
    extensions = {"persistedQuery": {"version": 1, "sha256Hash": document_hash(body)}}
    params = {
        "extensions": orjson.dumps(extensions).decode(),
        "variables": orjson.dumps({"ref": "component:default/lighthouse"}).decode(),
    }
    answer = await http.get("/graphql", params=params, headers={"content-type": "application/json"})
    assert answer.status_code == 200, answer.text
    entity = answer.json()["data"]["entity"]
    assert entity["title"] == "Lighthouse Service"
    # A document the console does not have is refused: the image runs in production mode.
    refused = await http.post("/graphql", json={"query": '{ entity(ref: "x") { ref } }'})
    assert refused.status_code == 400, refused.text
    [error] = refused.json()["errors"]
    assert error["extensions"]["code"] == "OPERATION_NOT_TRUSTED"
