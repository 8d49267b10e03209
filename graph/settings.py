"""Settings, read from ``ATRIUM_*`` environment variables and an optional ``atrium.toml``."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

from pydantic import Field, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

__all__ = ["Mode", "Settings"]


class Mode(StrEnum):
    DEVELOPMENT = "development"
    PRODUCTION = "production"


class Settings(BaseSettings):
    """Every knob of Atrium. Names are flat so operators can read them: ``ATRIUM_<FIELD>``."""

    model_config = SettingsConfigDict(
        env_prefix="ATRIUM_", toml_file="atrium.toml", extra="ignore", frozen=True
    )

    mode: Mode = Mode.DEVELOPMENT
    # Unset: an embedded PostgreSQL (pgserver) under ``data_dir``.
    database_url: str | None = None
    database_pool_min: int = Field(default=2, ge=1)
    database_pool_max: int = Field(default=10, ge=1)
    data_dir: Path = Path(".atrium")
    # Plugin ids (entry-point names) that must not be loaded.
    disabled_plugins: Annotated[list[str], NoDecode] = Field(default_factory=list)

    # Query limits: a rejected query costs a scan of its tokens, not an execution.
    max_depth: int = Field(default=12, ge=1)
    max_aliases: int = Field(default=30, ge=1)
    max_tokens: int = Field(default=2_000, ge=10)
    max_body_bytes: int = Field(default=256 * 1024, ge=1024)
    max_batch: int = Field(default=10, ge=1)
    max_page_size: int = Field(default=100, ge=1, le=1000)

    log_level: str = "INFO"

    @field_validator("disabled_plugins", mode="before")
    @classmethod
    def _split_csv(cls, value: object) -> object:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @property
    def production(self) -> bool:
        return self.mode is Mode.PRODUCTION

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Explicit arguments beat the environment, which beats atrium.toml.
        return init_settings, env_settings, TomlConfigSettingsSource(settings_cls)
