"""``atrium plugins``, and a plugin's bad setting stopping ``atrium serve``, run as a user runs
them: in a directory with an ``atrium.toml``, a third party's plugin installed beside Atrium."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from graph.assembly import installed_plugins

# A third party's plugin package, installed as pip would leave it (its code and its
# .dist-info naming the entry point).
PAGER = """
from __future__ import annotations

from pydantic import Field, SecretStr

from graph.plugin import PluginBuilder, PluginSettings


class PagerSettings(PluginSettings):
    pager_url: str = "https://pager.example/api"
    pager_token: SecretStr | None = None
    pager_retries: int = Field(default=3, ge=0)


class PagerPlugin:
    id = "pager"

    def setup(self, builder: PluginBuilder) -> None:
        builder.plugin_settings(PagerSettings)


plugin = PagerPlugin()
"""

TOKEN = "pt-do-not-print-0123456789"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    (site / "atrium_pager-1.0.dist-info").mkdir(parents=True)
    (site / "atrium_pager.py").write_text(PAGER, encoding="utf-8")
    info = site / "atrium_pager-1.0.dist-info"
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: atrium-pager\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[atrium.plugins]\npager = atrium_pager:plugin\n")
    return site


def atrium(
    *args: str, cwd: Path, site: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("ATRIUM_")}
    # Other packages' plugins installed in this environment are off: these tests are about
    # Atrium's own and the pager (their ids join any the test disables).
    others = [ep.name for ep in installed_plugins(bundled=False)]
    disabled = ",".join([*others, *(env or {}).get("ATRIUM_DISABLED_PLUGINS", "").split(",")])
    return subprocess.run(
        [sys.executable, "-m", "atrium.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={
            **inherited,
            "PYTHONPATH": str(site),
            **(env or {}),
            "ATRIUM_DISABLED_PLUGINS": disabled.strip(","),
        },
        timeout=120,
    )


def test_plugins_lists_each_plugins_settings_and_where_they_came_from(
    tmp_path: Path, site: Path
) -> None:
    (tmp_path / "atrium.toml").write_text(
        'prometheus_url = "http://prometheus.example:9090"\n'
        "[plugins.pager]\n"
        "pager_retries = 5\n"
        f'pager_token = "{TOKEN}"\n'
        "[plugins.deployments]\n"
        'deployments_cd_url = "https://deployer:hunter2-pw@cd.example/deploy"\n',
        encoding="utf-8",
    )
    env = {"ATRIUM_PAGER_RETRIES": "8", "ATRIUM_DEPLOYMENTS_WEBHOOK_SECRET": TOKEN}
    result = atrium("plugins", cwd=tmp_path, site=site, env=env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert TOKEN not in out and "hunter2-pw" not in out
    rows = {tuple(line.split(None, 2)) for line in out.splitlines() if line.startswith("  ")}
    assert ("pager_url", "https://pager.example/api", "default") in rows
    assert ("pager_retries", "8", "environment: ATRIUM_PAGER_RETRIES") in rows
    assert ("pager_token", "**********", "atrium.toml [plugins.pager] pager_token") in rows
    assert (
        "prometheus_url",
        "http://prometheus.example:9090",
        "atrium.toml prometheus_url",
    ) in rows
    assert (
        "deployments_webhook_secret",
        "**********",
        "environment: ATRIUM_DEPLOYMENTS_WEBHOOK_SECRET",
    ) in rows
    assert (
        "deployments_cd_url",
        "https://deployer:**********@cd.example/deploy",
        "atrium.toml [plugins.deployments] deployments_cd_url",
    ) in rows
    plugins = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert [line for line in plugins if "(disabled" not in line] == [
        "deployments",
        "observability",
        "pager",
        "pincompute",
    ]
    # What each adds, and that compiled plans run.
    lines = out.splitlines()
    assert lines.count("  plans: on") == 4
    assert (
        "  panel: EntityDeployments on the entity page of component, section deployments" in lines
    )
    assert "  operations: EntityDeployments, TeamDora" in lines
    assert "  fields: none" in lines  # the pager's

    as_json = atrium("plugins", "--json", cwd=tmp_path, site=site, env=env)
    assert as_json.returncode == 0, as_json.stderr
    assert TOKEN not in as_json.stdout
    found = {p["id"]: p for p in orjson.loads(as_json.stdout)}
    assert found["pager"]["enabled"] is True
    deployments = found["deployments"]
    assert {"Mutation.promoteRelease", "Component.pipeline", "Group.dora"} <= set(
        deployments["fields"]
    )
    assert {
        "page": "entity",
        "operation": "EntityDeployments",
        "kinds": ["component"],
        "section": "deployments",
    } in deployments["panels"]
    assert deployments["operations"] == ["EntityDeployments", "TeamDora"]
    assert deployments["plans"] == {"run": True, "off_by": None}
    assert deployments["switches_plans_off"] == []
    assert "PinApp.metrics" in found["observability"]["fields"]
    assert found["pager"]["settings"] == [
        {
            "name": "pager_url",
            "value": "https://pager.example/api",
            "source": "default",
            "where": "",
        },
        {
            "name": "pager_token",
            "value": "**********",
            "source": "atrium.toml",
            "where": "atrium.toml [plugins.pager] pager_token",
        },
        {
            "name": "pager_retries",
            "value": 8,
            "source": "environment",
            "where": "ATRIUM_PAGER_RETRIES",
        },
    ]

    disabled = atrium("plugins", cwd=tmp_path, site=site, env={"ATRIUM_DISABLED_PLUGINS": "pager"})
    assert "pager  (disabled by ATRIUM_DISABLED_PLUGINS)" in disabled.stdout.splitlines()


TIMING = """
from __future__ import annotations

from graph.plugin import Info, PluginBuilder, SchemaExtension, strawberry


class Timing(SchemaExtension):
    pass


@strawberry.type
class TimingQuery:
    @strawberry.field
    def slowest_operation(self, info: Info) -> str:
        return ""


class TimingPlugin:
    id = "timing"

    def setup(self, builder: PluginBuilder) -> None:
        builder.query(TimingQuery)
        builder.extension(Timing)
        builder.panel("team", "TeamTiming")


plugin = TimingPlugin()
"""


def test_plugins_names_what_switches_compiled_plans_off(tmp_path: Path, site: Path) -> None:
    (site / "atrium_timing.py").write_text(TIMING, encoding="utf-8")
    info = site / "atrium_timing-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: atrium-timing\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[atrium.plugins]\ntiming = atrium_timing:plugin\n")
    result = atrium("plugins", cwd=tmp_path, site=site)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    off = "  plans: off, by schema extensions, which must see every execution: Timing of plugin timing"
    assert lines.count(off) == 5, lines
    timing = lines[lines.index("timing") :]
    assert timing[1:6] == [
        off,
        "  switches compiled plans off with its schema extension(s): Timing",
        "  fields: Query.slowestOperation",
        "  panel: TeamTiming on the team page",
        "  operations: TeamTiming",
    ]
    as_json = atrium("plugins", "--json", cwd=tmp_path, site=site)
    found = {p["id"]: p for p in orjson.loads(as_json.stdout)}
    assert found["timing"]["switches_plans_off"] == ["Timing"]
    assert found["pager"]["plans"]["run"] is False
    # Turned off by the setting, it says so.
    unset = atrium(
        "plugins",
        cwd=tmp_path,
        site=site,
        env={"ATRIUM_DISABLED_PLUGINS": "timing", "ATRIUM_COMPILED_PLANS": "false"},
    )
    assert unset.stdout.splitlines().count("  plans: off, by ATRIUM_COMPILED_PLANS is off") == 4


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_bad_plugin_setting_stops_serve_before_it_binds(tmp_path: Path, site: Path) -> None:
    (tmp_path / "atrium.toml").write_text("[plugins.pager]\npager_retries = -1\n", encoding="utf-8")
    port = _free_port()
    data = tmp_path / "data"
    env = {"ATRIUM_DATA_DIR": str(data), "ATRIUM_OBSERVABILITY_TIMEOUT": "soon"}
    result = atrium("serve", "--port", str(port), cwd=tmp_path, site=site, env=env)
    assert result.returncode == 1
    # What it says, after the log's lines (other packages' plugins are disabled here: said so).
    said = "".join(line for line in result.stderr.splitlines(True) if not line.startswith("{"))
    assert said.startswith("atrium: plugin observability: invalid settings:\n"), result.stderr
    assert (
        "  observability_timeout from ATRIUM_OBSERVABILITY_TIMEOUT ('soon'): "
        "Input should be a valid number"
    ) in result.stderr
    assert (
        "plugin pager: invalid settings:\n"
        "  pager_retries from atrium.toml [plugins.pager] pager_retries ('-1'): "
        "Input should be greater than or equal to 0"
    ) in result.stderr
    assert "Traceback" not in result.stderr and "serving" not in result.stdout
    assert not data.exists()  # no embedded database was started
    with socket.socket() as again:  # and nothing holds the port
        again.bind(("127.0.0.1", port))

    listing = atrium("plugins", cwd=tmp_path, site=site, env=env)
    assert listing.returncode == 1
    assert "pager_retries from atrium.toml [plugins.pager] pager_retries" in listing.stderr
