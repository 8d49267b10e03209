"""Plugins' own settings (``builder.plugin_settings``): read from ``ATRIUM_*`` variables and the
plugin's section of ``atrium.toml`` like the core's, validated at start-up."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field, SecretStr

from graph.assembly import assemble, core_plugins
from graph.plugin import (
    Info,
    InvalidPluginSettings,
    PluginBuilder,
    PluginConflict,
    PluginSettings,
    strawberry,
)
from graph.plugin_settings import SECRET_MASK, SettingSource
from graph.settings import Settings
from plugins.deployments.plugin import DeploymentsPlugin
from plugins.observability.plugin import ObservabilityPlugin
from plugins.observability.settings import ObservabilitySettings
from plugins.pincompute.plugin import PinComputePlugin
from tests.conftest import AppFactory

# A third party's plugin, written against graph.plugin alone.


class PagerSettings(PluginSettings):
    pager_url: str  # required: no default
    pager_token: SecretStr | None = Field(default=None, min_length=8)
    pager_retries: int = Field(default=3, ge=0)
    pager_escalations: list[str] = Field(default_factory=list)


@strawberry.type
class PagerQuery:
    @strawberry.field
    def pager(self, info: Info) -> str:
        settings: PagerSettings = info.context.extras["pager"]
        token = settings.pager_token.get_secret_value() if settings.pager_token else "-"
        escalations = ",".join(settings.pager_escalations)
        return f"{settings.pager_url} {token} {settings.pager_retries} {escalations}"


class PagerPlugin:
    id = "pager"

    def setup(self, builder: PluginBuilder) -> None:
        settings = builder.plugin_settings(PagerSettings)
        builder.query(PagerQuery)

        @contextlib.asynccontextmanager
        async def lifespan(services: Any) -> AsyncIterator[PagerSettings]:
            yield settings

        builder.lifespan(lifespan)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory to run in, where atrium.toml is read, with no plugin setting in the
    environment but those a test sets."""
    monkeypatch.chdir(tmp_path)
    for name in (
        "ATRIUM_PROMETHEUS_URL",
        "ATRIUM_ALERTMANAGER_URL",
        "ATRIUM_OBSERVABILITY_TIMEOUT",
        "ATRIUM_MAX_DEPTH",
    ):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _write(directory: Path, text: str) -> None:
    (directory / "atrium.toml").write_text(text, encoding="utf-8")


async def test_atrium_toml_reaches_the_core_and_a_bundled_plugin(
    workdir: Path, make_client: AppFactory
) -> None:
    _write(
        workdir,
        "max_depth = 5\n"
        'prometheus_url = "http://prometheus.example:9090"\n'  # the flat form, as the core's
        "[plugins.observability]\n"
        'alertmanager_url = "http://alertmanager.example:9093"\n'
        "observability_timeout = 1.5\n"
        "[plugins.observability.metrics_templates]\n"
        'cpu = "sum(rate(cpu_seconds_total[5m]))"\n',
    )
    client = await make_client(plugins=[ObservabilityPlugin()])
    assert client.services.settings.max_depth == 5
    running = client.services.extras["observability"]
    assert running.settings.prometheus_url == "http://prometheus.example:9090"
    assert running.settings.alertmanager_url == "http://alertmanager.example:9093"
    assert running.settings.observability_timeout == 1.5
    assert running.settings.templates()["cpu"] == "sum(rate(cpu_seconds_total[5m]))"
    assert running.prometheus is not None and running.alertmanager is not None


def test_the_environment_beats_the_plugins_section_which_beats_the_top_of_the_file(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(
        workdir,
        'prometheus_url = "http://top.example"\n'
        'alertmanager_url = "http://top.example"\n'
        "[plugins.observability]\n"
        'prometheus_url = "http://section.example"\n'
        'alertmanager_url = "http://section.example"\n',
    )
    monkeypatch.setenv("ATRIUM_ALERTMANAGER_URL", "http://environment.example")
    read = assemble(Settings(), [*core_plugins(), ObservabilityPlugin()]).plugin_settings
    shown = {s.name: s for s in read["observability"].settings}
    assert shown["prometheus_url"].value == "http://section.example"
    assert shown["prometheus_url"].source is SettingSource.FILE
    assert shown["prometheus_url"].where == "atrium.toml [plugins.observability] prometheus_url"
    assert shown["alertmanager_url"].value == "http://environment.example"
    assert shown["alertmanager_url"].source is SettingSource.ENVIRONMENT
    assert shown["alertmanager_url"].where == "ATRIUM_ALERTMANAGER_URL"
    assert shown["observability_timeout"].source is SettingSource.DEFAULT


def test_settings_given_to_a_bundled_plugin_beat_the_environment_and_the_file(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(workdir, '[plugins.observability]\nprometheus_url = "http://file.example"\n')
    monkeypatch.setenv("ATRIUM_PROMETHEUS_URL", "http://environment.example")
    given = ObservabilitySettings(prometheus_url="http://given.example")
    assembly = assemble(Settings(), [*core_plugins(), ObservabilityPlugin(given)])
    assert "observability" not in assembly.plugin_settings  # nothing read: it was given


async def test_a_third_party_plugin_gets_its_settings_from_both_sources(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, make_client: AppFactory
) -> None:
    _write(
        workdir,
        "[plugins.pager]\n"
        'pager_url = "https://pager.example/api"\n'
        "pager_retries = 5\n"
        'pager_escalations = ["team", "manager"]\n',
    )
    monkeypatch.setenv("ATRIUM_PAGER_TOKEN", "pt-0123456789")
    monkeypatch.setenv("ATRIUM_PAGER_RETRIES", "7")  # beats the file
    client = await make_client(plugins=[PagerPlugin()])
    body = await client.gql("{ pager }")
    assert body["data"]["pager"] == "https://pager.example/api pt-0123456789 7 team,manager"
    read = assemble(Settings(), [*core_plugins(), PagerPlugin()]).plugin_settings["pager"]
    shown = {s.name: (s.value, s.source) for s in read.settings}
    assert shown == {
        "pager_url": ("https://pager.example/api", SettingSource.FILE),
        "pager_token": (SECRET_MASK, SettingSource.ENVIRONMENT),
        "pager_retries": (7, SettingSource.ENVIRONMENT),
        "pager_escalations": (["team", "manager"], SettingSource.FILE),
    }
    # A list from the environment is JSON, as for the core's and the bundled plugins'.
    monkeypatch.setenv("ATRIUM_PAGER_ESCALATIONS", '["director"]')
    read = assemble(Settings(), [*core_plugins(), PagerPlugin()]).plugin_settings["pager"]
    assert read.values == PagerSettings(
        pager_url="https://pager.example/api",
        pager_token=SecretStr("pt-0123456789"),
        pager_retries=7,
        pager_escalations=["director"],
    )


def test_a_bad_value_names_the_plugin_the_setting_and_its_source(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(workdir, '[plugins.observability]\nobservability_timeout = "soon"\n')
    with pytest.raises(InvalidPluginSettings) as raised:
        assemble(Settings(), [*core_plugins(), ObservabilityPlugin()])
    assert str(raised.value).startswith("plugin observability: invalid settings:")
    assert (
        "observability_timeout from atrium.toml [plugins.observability] observability_timeout "
        "('soon'): Input should be a valid number"
    ) in str(raised.value)

    monkeypatch.setenv("ATRIUM_OBSERVABILITY_TIMEOUT", "-1")
    with pytest.raises(InvalidPluginSettings, match=r"from ATRIUM_OBSERVABILITY_TIMEOUT \('-1'\)"):
        assemble(Settings(), [*core_plugins(), ObservabilityPlugin()])


def test_every_plugins_bad_values_are_told_at_once_and_secrets_are_not_echoed(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(workdir, "[plugins.pager]\npager_retries = -2\npager_retry = 4\n")
    monkeypatch.setenv("ATRIUM_PAGER_TOKEN", "tiny-pw")
    monkeypatch.setenv("ATRIUM_COMPUTE_QUOTAS", "{not json")
    monkeypatch.setenv("ATRIUM_DEPLOYMENTS_MAX_BODY", "12")
    plugins = [*core_plugins(), DeploymentsPlugin(), PagerPlugin(), PinComputePlugin()]
    with pytest.raises(InvalidPluginSettings) as raised:
        assemble(Settings(), plugins)
    said = str(raised.value)
    assert "plugin deployments: invalid settings" in said
    assert "deployments_max_body from ATRIUM_DEPLOYMENTS_MAX_BODY ('12')" in said
    assert "plugin pager: invalid settings" in said
    assert "atrium.toml [plugins.pager] pager_retry: no such setting" in said  # a typo
    assert "pager_url (no value given): Field required" in said
    assert "pager_retries from atrium.toml [plugins.pager] pager_retries (" in said
    assert "plugin pincompute: invalid settings" in said
    assert "compute_quotas from ATRIUM_COMPUTE_QUOTAS: not JSON ('{not json')" in said
    assert "pager_token from ATRIUM_PAGER_TOKEN (the value is not shown: a secret)" in said
    assert "tiny-pw" not in said


def test_one_model_per_plugin(workdir: Path) -> None:
    class Twice:
        id = "twice"

        def setup(self, builder: PluginBuilder) -> None:
            first = builder.plugin_settings(ObservabilitySettings)
            assert builder.plugin_settings(ObservabilitySettings) is first
            builder.plugin_settings(PagerSettings)

    with pytest.raises(PluginConflict, match="twice reads its settings as PagerSettings"):
        assemble(Settings(), [*core_plugins(), Twice()])
