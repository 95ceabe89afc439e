"""Settings: environment (``EVIDENCE_DESK_*``) over a TOML file over defaults.

Validation happens once, at start-up, so a bad value stops the program with the setting's name
instead of failing halfway through a run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import unquote, urlsplit

import platformdirs
from pydantic import (
    Field,
    JsonValue,
    SecretBytes,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from core.errors import ConfigurationError
from core.profiles import (
    ROLE_MODEL_SETTING,
    CandidateProfile,
    ModelProfile,
    ModelRole,
    ResolvedProfile,
    resolve_profile,
)
from core.secrets import name_credentials, remember_secret

APP_NAME = "evidence-desk"


def user_config_file() -> Path:
    override = os.environ.get("EVIDENCE_DESK_CONFIG_FILE")
    if override:
        return Path(override)
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def user_log_dir() -> Path:
    """The folder for this user's log files (the desk's log, the CLI's warnings): one place to look.

    ``EVIDENCE_DESK_LOG_DIR`` overrides it (tests, packagers); otherwise the platform's user log
    directory (``~/.local/state/evidence-desk/log`` on Linux).
    """
    override = os.environ.get("EVIDENCE_DESK_LOG_DIR")
    if override:
        return Path(override)
    return Path(platformdirs.user_log_dir(APP_NAME))


def default_db_url() -> str:
    data_dir = Path(platformdirs.user_data_dir(APP_NAME))
    return f"sqlite+aiosqlite:///{data_dir / 'workspace.sqlite3'}"


class ValidationMode(StrEnum):
    ALWAYS = "always"
    KEYWORDS = "keywords"
    OFF = "off"


class SettingsGroup(StrEnum):
    """Where a setting sits in the desk's Settings dialog; the order here is the order shown."""

    MODELS = "Models"
    LIMITS = "Limits"
    REVIEW = "Review"
    EVIDENCE = "Evidence"
    DEBUGGING = "Debugging"
    OTHER = "Other"


PathKind = Literal["file", "folder"]


def _desk(
    group: SettingsGroup | None = None, *, path: PathKind | None = None, editable: bool = True
) -> dict[str, JsonValue]:
    """How the settings dialog presents a field, kept beside the field (in its JSON schema extras).

    ``editable=False`` is the one switch that keeps a field out of the dialog: the workspace
    location belongs to the command line, and secrets never go to the settings file.
    """
    extra: dict[str, JsonValue] = {"editable": editable}
    if group is not None:
        extra["group"] = group.value
    if path is not None:
        extra["path"] = path
    return extra


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="EVIDENCE_DESK_", env_nested_delimiter="__", extra="forbid", validate_default=True
    )

    db_url: str = Field(
        default_factory=default_db_url,
        title="Workspace database",
        description="SQLAlchemy URL of the workspace; chosen per launch (--db), not in the desk.",
        json_schema_extra=_desk(editable=False),
    )
    agent_model: str = Field(
        default="scripted/agent",
        title="Agent model",
        description="The litellm model name that answers tasks, e.g. openai/gpt-4o.",
        json_schema_extra=_desk(SettingsGroup.MODELS),
    )
    validator_model: str = Field(
        default="scripted/validator",
        title="Validator model",
        description="The model that judges each answer against the evidence.",
        json_schema_extra=_desk(SettingsGroup.MODELS),
    )
    validator_fallback_model: str | None = Field(
        default=None,
        title="Validator fallback model",
        description="Used when the validator model fails or keeps replying in the wrong shape; empty for none.",
        json_schema_extra=_desk(SettingsGroup.MODELS),
    )
    schema_fallback_model: str | None = Field(
        default=None,
        title="Structured-output fallback model",
        description="Asked for a simplified shape (required fields only) when the planner or an answer with "
        "an output schema keeps replying in the wrong shape; also the validator's when it has none. Empty for none.",
        json_schema_extra=_desk(SettingsGroup.MODELS),
    )
    planner_model: str = Field(
        default="scripted/planner",
        title="Planner model",
        description="The model that writes a team plan: which agents run, with which tools, in what order.",
        json_schema_extra=_desk(SettingsGroup.MODELS),
    )
    api_base: str | None = Field(
        default=None,
        title="Default endpoint",
        description="Base URL every model call uses unless its role's profile names another, e.g. "
        "http://127.0.0.1:11434 for Ollama; empty: the provider's own.",
        json_schema_extra=_desk(SettingsGroup.MODELS),
    )
    profiles: dict[ModelRole, ModelProfile] = Field(
        default_factory=dict,
        title="Model profiles",
        description="Per role ([profiles.agent], [profiles.validator], ...): model, endpoint, key source, "
        "temperature, max_tokens, context window and extra litellm parameters.",
        json_schema_extra=_desk(editable=False),  # edited on the Models page's own profile form
    )
    validator_candidates: dict[str, CandidateProfile] = Field(
        default_factory=dict,
        title="Candidate validators",
        description="Named validators to replay on decided tasks before using one ([validator_candidates.NAME]: "
        "a profile plus an optional templates folder); see `evidence-desk revalidate`.",
        json_schema_extra=_desk(editable=False),
    )
    script: Path | None = Field(
        default=None,
        title="Scripted conversations",
        description="JSON file the scripted/* models replay (demos, tests, offline replays); --script overrides it.",
        json_schema_extra=_desk(SettingsGroup.EVIDENCE, path="file"),
    )
    corpus: Path | None = Field(
        default=None,
        title="Corpus folder",
        description="The folder of documents the agent searches and cites.",
        json_schema_extra=_desk(SettingsGroup.EVIDENCE, path="folder"),
    )
    max_tool_iterations: int = Field(
        default=8,
        ge=0,
        le=200,
        title="Tool iterations per run",
        description="How many rounds of tool calls an agent run may make before it must answer.",
        json_schema_extra=_desk(SettingsGroup.LIMITS),
    )
    max_validation_attempts: int = Field(
        default=2,
        ge=1,
        le=20,
        title="Validation attempts",
        description="Validations per task: a rejected answer is revised automatically until this many are done.",
        json_schema_extra=_desk(SettingsGroup.LIMITS),
    )
    max_parallel_team_nodes: int = Field(
        default=3,
        ge=1,
        le=64,
        title="Parallel team steps",
        description="How many steps of a team plan may run at the same time.",
        json_schema_extra=_desk(SettingsGroup.LIMITS),
    )
    max_schema_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        title="Structured-output retries",
        description="Re-asks when a model's reply does not match the expected shape.",
        json_schema_extra=_desk(SettingsGroup.LIMITS),
    )
    schema_stuck_after: int = Field(
        default=2,
        ge=2,
        le=10,
        title="Identical shape errors before giving up",
        description="A model that repeats the same shape error this many times in a row is not re-asked again.",
        json_schema_extra=_desk(SettingsGroup.LIMITS),
    )
    max_task_cost_usd: float | None = Field(
        default=None,
        gt=0,
        title="Cost budget per task (USD)",
        description="When a task's model calls have cost this much, the agent stops calling tools and answers "
        "from what it gathered. Empty for no budget.",
        json_schema_extra=_desk(SettingsGroup.LIMITS),
    )
    max_task_tokens: int | None = Field(
        default=None,
        gt=0,
        title="Token budget per task",
        description="When a task's model calls have used this many tokens (prompt and completion), the agent "
        "stops calling tools and answers from what it gathered. Empty for no budget.",
        json_schema_extra=_desk(SettingsGroup.LIMITS),
    )
    llm_cost_per_mtok_in: float | None = Field(
        default=None,
        ge=0,
        title="Prompt price per million tokens (USD)",
        description="Used for models litellm has no price for (local or private ones); empty counts them as free.",
        json_schema_extra=_desk(SettingsGroup.LIMITS),
    )
    llm_cost_per_mtok_out: float | None = Field(
        default=None,
        ge=0,
        title="Completion price per million tokens (USD)",
        description="Used for models litellm has no price for (local or private ones); empty counts them as free.",
        json_schema_extra=_desk(SettingsGroup.LIMITS),
    )
    stream_agent: bool = Field(
        default=True,
        title="Stream the agent's answers",
        description="Show the agent's text in the desk as it is written; the stored record is the same either way.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )
    llm_timeout_s: float = Field(
        default=120.0,
        gt=0,
        le=3600,
        title="Model call timeout (s)",
        description="Seconds to wait for one model call (and for fetch_url) before giving up.",
        json_schema_extra=_desk(SettingsGroup.LIMITS),
    )
    llm_num_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        title="Model call retries",
        description="Retries after a timeout, rate limit or connection error.",
        json_schema_extra=_desk(SettingsGroup.LIMITS),
    )
    validator_timeout_s: float = Field(
        default=180.0,
        gt=0,
        le=3600,
        title="Validator call timeout (s)",
        description="Seconds for one validator call (a verdict, one chunk's review, a re-ask).",
        json_schema_extra=_desk(SettingsGroup.LIMITS),
    )
    validator_budget_s: float = Field(
        default=600.0,
        gt=0,
        le=86_400,
        title="Validator budget (s)",
        description="Seconds for the whole verdict (retries and re-asks), plus the per-chunk budget for each "
        "chunk; when it runs out the answer goes to review with a validator error.",
        json_schema_extra=_desk(SettingsGroup.LIMITS),
    )
    validator_budget_per_chunk_s: float = Field(
        default=180.0,
        ge=0,
        le=86_400,
        title="Validator budget per chunk (s)",
        description="Seconds added to the validator budget for each chunk when the evidence does not fit "
        "its window (slow local models need them).",
        json_schema_extra=_desk(SettingsGroup.LIMITS),
    )
    local_server_ports: list[int] = Field(
        default_factory=list,
        title="Local server ports",
        description="Extra loopback ports where Detect looks for an OpenAI-compatible model server (e.g. a "
        "llama.cpp server started with --port), beside Ollama 11434, LM Studio 1234, llama.cpp 8080 and "
        "vLLM 8000.",
        json_schema_extra=_desk(SettingsGroup.MODELS),
    )
    validator_context_tokens: int | None = Field(
        default=None,
        ge=256,
        title="Validator context window (tokens)",
        description="Overrides the validator model's context size; leave unset to use litellm's model map.",
        json_schema_extra=_desk(SettingsGroup.MODELS),
    )
    validation_mode: ValidationMode = Field(
        default=ValidationMode.ALWAYS,
        title="When to validate",
        description="always: every answer; keywords: only answers containing a trigger keyword; off: never.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )
    trigger_keywords: list[str] = Field(
        default_factory=list,
        title="Trigger keywords",
        description="Comma-separated whole words or phrases, any case; with 'keywords' mode, only answers "
        "containing one are validated. Empty: done, completed, finished, ready, here you go.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )
    verify_team_nodes: bool = Field(
        default=True,
        title="Verify each team step",
        description="Before the synthesis, the validator judges each team step's output against that step's "
        "own evidence (pre-checks first; a failed check never blocks); a rejected step is run again once "
        "with the feedback. Off: only the final answer is validated.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )
    require_verified_citations: bool = Field(
        default=False,
        title="Require a verified citation to accept",
        description="An answer accepted with evidence but no verified citation is marked insufficient evidence.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )
    # A weak judge cannot endorse (core/validation/coherence.py; README "A weak judge cannot endorse").
    coherence_min_score: float = Field(
        default=0.6,
        ge=0.0,
        le=1.0,
        title="Lowest score an acceptance may have",
        description="An accepted verdict scored below this is recorded as insufficient evidence "
        "(incoherent verdict); 0 turns the check off.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )
    coherence_max_issues: int = Field(
        default=0,
        ge=0,
        le=1000,
        title="Issues an acceptance may list",
        description="An accepted verdict listing more issues than this is recorded as insufficient evidence.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )
    coherence_max_missing_requirements: int = Field(
        default=0,
        ge=0,
        le=1000,
        title="Missing requirements an acceptance may list",
        description="An accepted verdict listing more missing requirements than this is recorded as "
        "insufficient evidence.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )
    coherence_min_citations: int = Field(
        default=1,
        ge=0,
        le=1000,
        title="Citations an acceptance needs",
        description="When the task has evidence, an accepted verdict citing fewer items than this is recorded "
        "as insufficient evidence; 0 turns the check off.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )
    coherence_text_check: bool = Field(
        default=True,
        title="Check the verdict's own words",
        description="An accepted verdict whose goal, completeness or rules text says the answer failed "
        "(goal_missed, not met, incomplete, ...) is recorded as insufficient evidence.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )
    rules: Path | None = Field(
        default=None,
        title="Rules file",
        description="A text file of analyst rules the validator checks every answer against.",
        json_schema_extra=_desk(SettingsGroup.REVIEW, path="file"),
    )
    reviewer: str | None = Field(
        default=None,
        title="Reviewer name",
        description="Recorded with each review decision; empty means your login name.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )
    reasons: Path | None = Field(
        default=None,
        title="Reason codes file",
        description="A TOML list of [[reason]] code and description; empty means the default set "
        "(wrong fact, missing part, unsupported claim, wrong source, format, policy, other).",
        json_schema_extra=_desk(SettingsGroup.REVIEW, path="file"),
    )
    blind_review: bool = Field(
        default=False,
        title="Blind review",
        description="Hide the validator's verdict until you record a first judgement, then reveal it.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )
    blind_reviewers: list[str] = Field(
        default_factory=list,
        title="Blind review for these reviewers",
        description="Comma-separated reviewer names who review blind even when Blind review is off.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )
    second_review_rate: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        title="Second review sample (0-1)",
        description="Share of decided tasks queued for an independent, blind second review by another "
        "reviewer (`evidence-desk second-review --due`); the sample is fixed per task.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )
    auto_advance: bool = Field(
        default=True,
        title="Move to the next task after a decision",
        description="After Satisfied, Revise or Abandon, the desk selects the next task that needs a decision.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )
    fetch_url_enabled: bool = Field(
        default=False,
        title="Let the agent fetch web pages",
        description="Enables the fetch_url tool, which reaches the network.",
        json_schema_extra=_desk(SettingsGroup.EVIDENCE),
    )

    tool_timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=3600,
        title="Tool call time limit (s)",
        description="Seconds a tool call may take before the model gets a timeout error and the run goes on.",
        json_schema_extra=_desk(SettingsGroup.LIMITS),
    )
    corpus_max_document_bytes: int = Field(
        default=64 * 1024 * 1024,
        ge=1024,
        le=1024 * 1024 * 1024,
        title="Largest corpus document (bytes)",
        description="Corpus files larger than this many bytes are skipped with a warning, not indexed.",
        json_schema_extra=_desk(SettingsGroup.EVIDENCE),
    )

    debug_full_request_snapshots: bool = Field(
        default=False,
        title="Store full model requests",
        description="Keeps every request sent to a model with the run; large, for debugging.",
        json_schema_extra=_desk(SettingsGroup.DEBUGGING),
    )
    debug_store_validation_prompt: bool = Field(
        default=True,
        title="Store the validator's prompt",
        description="Keeps the prompt the validator saw with each validation, to explain its verdict.",
        json_schema_extra=_desk(SettingsGroup.DEBUGGING),
    )
    defer_runs: bool | None = Field(
        default=None,
        title="Defer runs to workers",
        description="PostgreSQL workspaces: queue runs for `evidence-desk worker` processes instead of "
        "running them here. Unset: defer while a worker is alive. Never on SQLite.",
        json_schema_extra=_desk(editable=False),
    )
    cron_timezone: str | None = Field(
        default=None,
        title="Cron time zone",
        description="IANA time zone (e.g. Europe/Berlin) that schedules' cron expressions are read in; "
        "empty: this machine's zone. Set it on every machine of a team workspace.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )
    verify_heartbeat: bool = Field(
        default=False,
        title="Verify heartbeat answers",
        description="Validate every scheduled (heartbeat) answer whatever the trigger keywords, to catch a "
        "lazy HEARTBEAT_OK; off: heartbeat answers skip validation. A schedule can also turn it on.",
        json_schema_extra=_desk(SettingsGroup.REVIEW),
    )

    @model_validator(mode="after")
    def _profile_models_win(self) -> Settings:
        self._sync_profile_models()
        self._name_credentials()
        return self

    def _name_credentials(self) -> None:
        """Tell the masking which variables and keyring entries hold keys, and the database password.

        Masking goes by value, so a key under a variable named like anything (``VLLM_APIKEY``) is
        still masked in exports, error lines and stored provider errors.
        """
        name_credentials(
            env=[p.api_key_env for p in self.profiles.values()],
            keyring=[p.api_key_keyring for p in self.profiles.values()],
        )
        try:
            password = urlsplit(self.db_url).password
        except ValueError:  # an unparseable URL: the store says so when it opens it
            password = None
        if password:
            remember_secret("database password", password)
            remember_secret("database password", unquote(password))

    def _sync_profile_models(self) -> None:
        """A profile's ``model`` replaces its role's flat ``*_model`` setting, which every caller reads.

        The planner fallback has no flat setting of its own (it shares the structured-output one), so
        its profile gives that model's endpoint and tuning, not a different model.
        """
        for role, name in ROLE_MODEL_SETTING.items():
            profile = self.profiles.get(role)
            if profile is not None and profile.model and role is not ModelRole.PLANNER_FALLBACK:
                object.__setattr__(self, name, profile.model)

    def with_profiles(self, profiles: dict[ModelRole, ModelProfile]) -> Settings:
        """A copy with these profiles (and their models), as the next start would read them."""
        copy = self.model_copy(update={"profiles": profiles})
        copy._sync_profile_models()
        copy._name_credentials()
        return copy

    def profile(self, role: ModelRole) -> ResolvedProfile | None:
        """The role's profile with defaults applied and its key found (``None``: the role has no model)."""
        return resolve_profile(self, role)

    @field_validator("script", "rules", "reasons")
    @classmethod
    def _must_be_file(cls, v: Path | None) -> Path | None:
        if v is not None and not v.is_file():
            raise ValueError(f"no such file: {v}")
        return v

    @field_validator("cron_timezone")
    @classmethod
    def _known_zone(cls, v: str | None) -> str | None:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        if not v:
            return None
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {v!r} (an IANA name, e.g. 'Europe/Berlin' or 'UTC')"
            ) from None
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


@dataclass(frozen=True)
class EditableSetting:
    """One field as the desk's Settings dialog shows it: everything it needs comes from the model."""

    name: str
    field: FieldInfo
    title: str
    description: str
    group: str
    path_kind: PathKind | None


def _holds_secret(annotation: Any) -> bool:
    return any(a in (SecretStr, SecretBytes) for a in (annotation, *get_args(annotation)))


def editable_settings(model: type[Settings] = Settings) -> list[EditableSetting]:
    """The fields an analyst may change from the desk, grouped in ``SettingsGroup`` order.

    The only rule for leaving a field out lives here: it is marked ``editable=False`` or it holds a
    secret. A field without desk metadata still appears (under "Other"), so a new setting is never
    silently unreachable.
    """
    order = {group.value: i for i, group in enumerate(SettingsGroup)}
    found: list[EditableSetting] = []
    for name, field in model.model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if extra.get("editable") is False or _holds_secret(field.annotation):
            continue
        group = extra.get("group")
        path = extra.get("path")
        found.append(
            EditableSetting(
                name=name,
                field=field,
                title=field.title or name.replace("_", " ").capitalize(),
                description=field.description or "",
                group=group if isinstance(group, str) else SettingsGroup.OTHER.value,
                path_kind="folder" if path == "folder" else "file" if path == "file" else None,
            )
        )
    return sorted(found, key=lambda s: order.get(s.group, len(order)))


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
