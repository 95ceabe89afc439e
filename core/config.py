"""Settings: environment (``EVIDENCE_DESK_*``) over a TOML file over defaults.

Validation happens once, at start-up, so a bad value stops the program with the setting's name
instead of failing halfway through a run.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from core.errors import ConfigurationError

APP_NAME = "evidence-desk"


def user_config_file() -> Path:
    override = os.environ.get("EVIDENCE_DESK_CONFIG_FILE")
    if override:
        return Path(override)
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def default_db_url() -> str:
    data_dir = Path(platformdirs.user_data_dir(APP_NAME))
    return f"sqlite+aiosqlite:///{data_dir / 'workspace.sqlite3'}"


class ValidationMode(StrEnum):
    ALWAYS = "always"
    KEYWORDS = "keywords"
    OFF = "off"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="EVIDENCE_DESK_", extra="forbid", validate_default=True)

    db_url: str = Field(default_factory=default_db_url)
    agent_model: str = "scripted/agent"
    validator_model: str = "scripted/validator"
    validator_fallback_model: str | None = None
    planner_model: str = "scripted/planner"
    script: Path | None = None
    corpus: Path | None = None
    rules: Path | None = None
    reviewer: str | None = None

    max_tool_iterations: int = Field(default=8, ge=0, le=200)
    max_validation_attempts: int = Field(default=2, ge=1, le=20)
    max_parallel_team_nodes: int = Field(default=3, ge=1, le=64)
    max_schema_retries: int = Field(default=2, ge=0, le=10)
    llm_timeout_s: float = Field(default=120.0, gt=0)
    llm_num_retries: int = Field(default=2, ge=0, le=10)
    validator_timeout_s: float = Field(default=180.0, gt=0)
    validator_context_tokens: int | None = Field(default=None, ge=256)
    validation_mode: ValidationMode = ValidationMode.ALWAYS
    trigger_keywords: list[str] = Field(default_factory=list)
    require_verified_citations: bool = False
    fetch_url_enabled: bool = False
    tool_timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        description="Seconds a tool call may take before the model gets a timeout error and the run goes on.",
    )
    corpus_max_document_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1024,
        le=1024 * 1024 * 1024,
        description="Corpus files larger than this many bytes are skipped with a warning, not indexed.",
    )

    debug_full_request_snapshots: bool = False
    debug_store_validation_prompt: bool = True

    @field_validator("script", "rules")
    @classmethod
    def _must_be_file(cls, v: Path | None) -> Path | None:
        if v is not None and not v.is_file():
            raise ValueError(f"no such file: {v}")
        return v

    @field_validator("corpus")
    @classmethod
    def _must_be_dir(cls, v: Path | None) -> Path | None:
        if v is not None and not v.is_dir():
            raise ValueError(f"no such folder: {v}")
        return v

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        path = user_config_file()
        if path.is_file():
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)


def load_settings(**overrides: Any) -> Settings:
    """Build settings or raise ``ConfigurationError`` naming each bad setting and why."""
    clean = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(**clean)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigurationError(f"invalid configuration: {problems}") from None
    except SettingsError as exc:  # a source could not decode a value, e.g. a non-JSON list in the environment
        cause = f": {exc.__cause__}" if exc.__cause__ is not None else ""
        raise ConfigurationError(
            f'invalid configuration: {exc}{cause} (list settings take JSON, e.g. ["a", "b"])'
        ) from None
    except (OSError, ValueError) as exc:  # unreadable or malformed TOML file
        raise ConfigurationError(f"cannot read configuration file {user_config_file()}: {exc}") from None
