from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from graph.settings import Mode, Settings


def test_environment_beats_atrium_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "atrium.toml").write_text(
        'mode = "production"\nmax_depth = 5\nlog_level = "DEBUG"\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATRIUM_MAX_DEPTH", "7")
    settings = Settings()
    assert settings.mode is Mode.PRODUCTION and settings.production
    assert settings.max_depth == 7
    assert settings.log_level == "DEBUG"


def test_disabled_plugins_read_as_a_comma_separated_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATRIUM_DISABLED_PLUGINS", " hello, compute ,")
    assert Settings().disabled_plugins == ["hello", "compute"]


def test_nonsense_is_refused_with_the_setting_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATRIUM_MAX_PAGE_SIZE", "0")
    with pytest.raises(ValidationError, match="max_page_size"):
        Settings()
    monkeypatch.delenv("ATRIUM_MAX_PAGE_SIZE")
    monkeypatch.setenv("ATRIUM_MODE", "staging")
    with pytest.raises(ValidationError, match="mode"):
        Settings()


def test_catalog_imports_read_urls_from_the_hosts_named_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nothing = Settings().catalog_fetch
    assert nothing.hosts == frozenset() and not nothing.allows("github.com")
    assert (nothing.timeout, nothing.max_bytes) == (10.0, 2 * 2**20)
    monkeypatch.setenv("ATRIUM_CATALOG_FETCH_HOSTS", " github.com, *.git.example.com ,")
    monkeypatch.setenv("ATRIUM_CATALOG_FETCH_TIMEOUT", "2.5")
    monkeypatch.setenv("ATRIUM_CATALOG_FETCH_MAX_BYTES", "65536")
    policy = Settings().catalog_fetch
    assert policy.hosts == frozenset({"github.com", "*.git.example.com"})
    assert policy.allows("github.com") and policy.allows("a.git.example.com")
    assert not policy.allows("gitlab.com")
    assert (policy.timeout, policy.max_bytes) == (2.5, 65536)
    monkeypatch.setenv("ATRIUM_CATALOG_FETCH_TIMEOUT", "0")
    with pytest.raises(ValidationError, match="catalog_fetch_timeout"):
        Settings()
