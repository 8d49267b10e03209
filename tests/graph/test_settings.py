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
