"""Promote: make a candidate the workspace's validator, as one recorded event.

The event says who, when, the candidate's profile (key sources by name only; ``extra`` parameters
that could carry a credential are left out), the templates of its own, and the comparison with
the live validator it rested on. A candidate that was never replayed has no comparison and is
refused: promotion is a decision on evidence.
"""

from __future__ import annotations

import re
from typing import Any

from core.config import Settings
from core.domain.event_codec import encode
from core.domain.event_payloads import ValidatorPromotion
from core.errors import InvalidRequest
from core.judge.candidates import load_candidate
from core.judge.compare import compare_validators
from core.store import Store
from core.validation.identity import validator_identity
from core.validation.prompt import TemplateSet
from core.validation.workspace_templates import judge_session
from core.validation.workspace_validator import CONFIGURED, promotions

__all__ = ["promote"]

_SECRET_LOOKING = re.compile(r"head|key|token|secret|auth|pass|cookie", re.IGNORECASE)


def _comparison_summary(data: dict[str, Any]) -> dict[str, Any]:
    """What the decision rested on, without the (possibly long) case lists: their sizes and ids."""
    groups = ("candidate_right", "current_right", "both_wrong")
    out = {k: v for k, v in data.items() if k not in groups}
    for g in groups:
        out[g] = [f"{c['task_id']}#{c['attempt_index']}" for c in data[g]][:200]
        out[f"{g}_count"] = len(data[g])
    return out


async def promote(
    store: Store, settings: Settings, name: str, *, reviewer: str, base: TemplateSet
) -> ValidatorPromotion:
    """Record ``name`` as the workspace's validator (``configured``: back to the settings' own)."""
    history = await promotions(store)
    previous = (
        history[-1].payload.validator_version if history else validator_identity(settings, base).version
    )
    if name == CONFIGURED:
        version = validator_identity(settings, base).version
        payload = ValidatorPromotion(
            candidate=CONFIGURED, validator_version=version, previous_version=previous, reviewer=reviewer
        )
    else:
        candidate = load_candidate(settings, name, base)
        comparison = await compare_validators(store, settings, "live", name, base)
        configured = settings.validator_candidates[name]
        profile = configured.model_dump(mode="json", exclude={"templates"})
        profile["extra"] = {k: v for k, v in configured.extra.items() if not _SECRET_LOOKING.search(k)}
        base_overrides = dict(base.overrides)
        own = {n: s for n, s in candidate.templates.overrides if base_overrides.get(n) != s}
        payload = ValidatorPromotion(
            candidate=name,
            validator_version=candidate.version,
            previous_version=previous,
            reviewer=reviewer,
            profile=profile,
            template_set=candidate.templates.label,
            templates=own,
            comparison=_comparison_summary(comparison.as_json()),
        )
    if (
        history
        and history[-1].payload.candidate == name
        and history[-1].payload.validator_version == payload.validator_version
    ):
        raise InvalidRequest(
            f"{name} (validator {payload.validator_version}) is already the workspace's validator"
        )
    session_id = await judge_session(store, create=True)
    assert session_id is not None
    await store.append_event(session_id, *encode(payload))
    return payload
