"""A candidate validator as something that can judge: its settings, its templates and its identity.

A candidate is named in the settings (``validator_candidates``): a validator profile plus an
optional folder of templates replacing installed ones by name. Judging with it is the live
validator's code with the candidate's settings, so every policy the live judge applies (budget,
retries, fail-open, citation checks) applies to the candidate too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.config import Settings
from core.errors import InvalidRequest
from core.inputs import read_input_text
from core.profiles import ModelProfile, ModelRole
from core.validation.identity import ValidatorIdentity, validator_identity
from core.validation.prompt import INSTALLED, TemplateSet, validator_template_names

__all__ = ["Candidate", "candidate_templates", "load_candidate"]


@dataclass(frozen=True, slots=True)
class Candidate:
    name: str
    settings: Settings  # the workspace's settings with the candidate as the validator
    templates: TemplateSet
    identity: ValidatorIdentity

    @property
    def version(self) -> str:
        return self.identity.version

    @property
    def session_label(self) -> str:
        """The shadow session holding this exact validator's verdicts (a new version, a new session)."""
        return f"{self.name}@{self.version}"


def candidate_templates(folder: Path | None, label: str, base: TemplateSet = INSTALLED) -> TemplateSet:
    """The templates in ``folder`` over ``base``; a file that replaces no validator template is refused
    (a misspelt name would otherwise be ignored silently and the candidate judged with the old one)."""
    if folder is None:
        return base
    if not folder.is_dir():
        raise InvalidRequest(f"candidate templates folder {folder} is not a folder")
    known = set(validator_template_names())
    found = {p.name: p for p in sorted(folder.iterdir()) if p.is_file()}
    unknown = sorted(set(found) - known)
    if unknown:
        raise InvalidRequest(
            f"{folder}: {', '.join(unknown)} replace(s) no validator template (known: {', '.join(sorted(known))})"
        )
    overrides = dict(base.overrides)
    overrides |= {name: read_input_text(path, what="validator template") for name, path in found.items()}
    return TemplateSet.of(overrides, label)


def load_candidate(settings: Settings, name: str, base: TemplateSet = INSTALLED) -> Candidate:
    """The named candidate, ready to judge; an unknown name is refused with the names there are."""
    configured = settings.validator_candidates.get(name)
    if configured is None:
        names = ", ".join(sorted(settings.validator_candidates)) or "none configured"
        raise InvalidRequest(
            f"no candidate validator {name!r} (validator_candidates: {names}); add [validator_candidates.{name}]"
        )
    if not configured.model:
        raise InvalidRequest(f"validator_candidates.{name}.model is not set")
    profile = ModelProfile.model_validate(configured.model_dump(exclude={"templates"}))
    judged = settings.model_copy(
        update={
            "validator_model": configured.model,
            "profiles": {**settings.profiles, ModelRole.VALIDATOR: profile},
        }
    )
    templates = candidate_templates(configured.templates, f"candidate:{name}", base)
    return Candidate(name, judged, templates, validator_identity(judged, templates))
