"""The example plugin (examples/plugins/oncall) as its authors get it: Atrium built as a wheel
(the session's, tests/artifacts.py, built as the image builds it) and installed with the
plugin into a fresh virtual environment, no checkout on the path; the plugin's own tests pass
there on Atrium's installed test kit, and `atrium serve --demo` from that environment shows
its panel, server-rendered then hydrated in place, with the console's build (web/dist) used
as it is and left untouched."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser

from tests import artifacts
from tests.conftest import ROOT
from tests.console.browser import console_page
from tests.console.server import WEB_DIST, Served, build_digest, empty_database

EXAMPLE = ROOT / "examples" / "plugins" / "oncall"
PAGE = "/catalog/default/component/checkout"
READY_WITHIN = 90.0
# The server's panel node, kept before any module runs; React's first render comes later.
KEEP = """
document.addEventListener('readystatechange', () => {
  if (document.readyState === 'interactive') window.__served = document.getElementById('oncall');
});
"""


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, (
        f"{' '.join(command)}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    return done.stdout


def _clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without any Python path or Atrium setting: what a person's
    shell would have, pip's own configuration included."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ATRIUM_", "PYTHON", "VIRTUAL_ENV", "PYTEST"))
    }
    return env | extra


def _copy(source: Path, target: Path) -> None:
    shutil.copytree(
        source, target, ignore=shutil.ignore_patterns("__pycache__", "node_modules", "build")
    )


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh virtual environment with Atrium's wheel (and its test extra) and the example
    plugin installed by pip, as a plugin's author installs them; both built from copies, so
    the checkout gains no build folders."""
    work = tmp_path_factory.mktemp("wheel")
    wheel = artifacts.atrium_wheel(tmp_path_factory)
    python = sys.executable
    # Nothing in it but what pip installs below: the pip these tests run with installs into
    # it (--python), not the interpreter's bundled one `python -m venv` would put there, which
    # may be years older and takes twice as long to resolve Atrium's dependencies.
    _run([python, "-m", "venv", "--without-pip", str(work / "venv")], work)
    # --no-compile: what the tests import is compiled when first imported, as it would be
    # anyway; the rest (most of it: kubernetes-asyncio's models alone are a thousand
    # modules) was half of the install's time.
    pip = [
        *(python, "-m", "pip", "--python", str(work / "venv" / "bin" / "python")),
        *("install", "--no-compile"),
    ]
    _run([*pip, "-q", f"{wheel}[test]"], work, _clean_env())
    plugin = work / "oncall"
    _copy(EXAMPLE, plugin)
    _run([*pip, "-q", "--no-build-isolation", str(plugin)], work, _clean_env())
    yield work
    shutil.rmtree(work, ignore_errors=True)


def test_no_checkout_is_on_the_environments_path(venv: Path, tmp_path: Path) -> None:
    python = str(venv / "venv" / "bin" / "python")
    where = _run(
        [
            python,
            "-c",
            "import atrium, graph.plugin, atrium_oncall; "
            "print(atrium.__file__); print(atrium_oncall.__file__)",
        ],
        tmp_path,
        _clean_env(),
    )
    for line in where.split():
        assert line.startswith(str(venv / "venv")), where
    found = subprocess.run(
        [python, "-c", "import tests"],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
    )
    assert found.returncode == 1
    assert "No module named 'tests'" in found.stderr


def test_the_examples_own_tests_pass_on_the_installed_test_kit(venv: Path) -> None:
    plugin = venv / "oncall"
    output = _run(
        [
            str(venv / "venv" / "bin" / "python"),
            "-m",
            "pytest",
            "tests",
            "-q",
            "-p",
            "no:cacheprovider",
            # Its own temporary root: a session that starts makes pytest's shared one private
            # again, under the feet of embedded databases other tests run.
            "--basetemp",
            str(venv / "pytest"),
        ],
        plugin,
        _clean_env(),
    )
    summary = output.strip().splitlines()[-1]
    passed = re.match(r"(\d+) passed in ", summary)
    # Every module: the answers, the override, the rotations, the schema and the kit's checks.
    assert passed and int(passed[1]) >= 21, output


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
async def served(venv: Path, pg_admin_url: str, template_db: str) -> AsyncIterator[Served]:
    """`atrium serve --demo` of the environment on an empty database, which it fills with the
    demo organisation the wheel ships, with the checkout's console build (ATRIUM_WEB_DIR) byte
    for byte the same afterwards."""
    assert (WEB_DIST / ".vite" / "manifest.json").is_file(), "the console is not built: make web"
    before = build_digest()
    log = venv / "server.log"
    async with empty_database(pg_admin_url, template_db) as url:
        port = _free_port()
        with log.open("wb") as out:
            process = await asyncio.create_subprocess_exec(
                str(venv / "venv" / "bin" / "atrium"),
                *("serve", "--demo", "--host", "127.0.0.1", "--port", str(port)),
                cwd=venv,
                env=_clean_env(
                    ATRIUM_DATABASE_URL=url,
                    ATRIUM_WEB_DIR=str(WEB_DIST),
                    ATRIUM_TRUSTED_PROXIES="127.0.0.1",
                    ATRIUM_SSR_PANEL_BUDGET="5",
                    ATRIUM_SHUTDOWN_GRACE="0",
                ),
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
            )
        server = Served(f"http://127.0.0.1:{port}", log, "development")
        try:
            await _ready(process, server)
            yield server
        finally:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 30)
            except TimeoutError:
                process.kill()
                await process.wait()
    assert build_digest() == before, "web/dist changed"


async def _ready(process: asyncio.subprocess.Process, server: Served) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + READY_WITHIN
    async with httpx.AsyncClient(timeout=5) as client:
        while True:
            assert process.returncode is None, f"atrium serve exited:\n{server.log_text()}"
            try:
                if (await client.get(server.url("/readyz"))).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert loop.time() < deadline, f"atrium serve not ready:\n{server.log_text()}"
            await asyncio.sleep(0.2)


async def test_the_examples_panel_is_served_then_hydrated_in_place(
    browser: Browser, served: Served
) -> None:
    async with console_page(browser, served) as page:
        await page.page.add_init_script(KEEP)
        response = await page.page.goto(served.url(PAGE), wait_until="load")
        assert response is not None and response.status == 200
        await page.react_rendered()
        state = await page.page.evaluate(
            """() => {
              const now = document.getElementById('oncall');
              return {
                served: !!window.__served,
                same: now !== null && now === window.__served,
                hydrated: !!now && Object.keys(now).some((k) => k.startsWith('__reactFiber')),
                framed: !!now && now.parentElement.matches('.atrium-plugin-panel'),
                text: now ? now.innerText : null,
              };
            }"""
        )
        assert state["served"], (
            f"the panel is not in the server's HTML:\n{served.log_text()[-3000:]}"
        )
        assert state["same"], "React replaced the panel"
        assert state["hydrated"] and state["framed"]
        # The demo's rotations (the plugin's demo hook): Checkout's rotation, a real person.
        text = state["text"]
        assert "On call" in text and "Escalation policy" in text, text
        assert "Rotation: Checkout" in text and "UTC" in text, text
        assert page.recorded.errors == []
        modules = [r.url for r in page.recorded.requests if "/plugins/oncall/console/" in r.url]
        assert len(modules) == 1 and modules[0].endswith("/panels.js")
