"""Which validator the workspace judges with: the configured one, or the candidate last promoted.

A promotion is one ``validator_promoted`` event in the workspace's judge session: who, when, the
candidate's profile (key sources by name, never a key), its own templates, and the comparison it
rested on. From then on every live verdict of the workspace (every desk and worker on a shared
database) uses that profile and those templates; promoting ``configured`` goes back to the
settings' validator. The endpoint's key is still looked up on each machine, from the source the
profile names.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from core.config import Settings
from core.domain.event_codec import decode_as
from core.domain.event_payloads import ValidatorPromotion
from core.domain.facts import EventKind
from core.profiles import ModelProfile, ModelRole
from core.store import Store
from core.store.judge_sql import JUDGE_SESSION_KIND, sessions_of_kind

__all__ = ["CONFIGURED", "Promotion", "promoted_settings", "promotions"]

CONFIGURED = "configured"  # promoting this name goes back to the settings' own validator


@dataclass(frozen=True, slots=True)
class Promotion:
    event_id: int
    at: datetime
    payload: ValidatorPromotion


async def promotions(store: Store) -> list[Promotion]:
    """Every promotion, oldest first."""
    out: list[Promotion] = []
    for session in await sessions_of_kind(store, JUDGE_SESSION_KIND):
        events = await store.get_session_events(
            session.id, kinds=[EventKind.VALIDATOR_PROMOTED], resolve=False
        )
        out += [Promotion(ev.id, ev.created_at, decode_as(ev, ValidatorPromotion)) for ev in events]
    return sorted(out, key=lambda p: p.event_id)


def promoted_settings(settings: Settings, promotion: ValidatorPromotion) -> Settings:
    """``settings`` with the promoted candidate as the validator (unchanged for ``configured``)."""
    if promotion.candidate == CONFIGURED:
        return settings
    profile = ModelProfile.model_validate(promotion.profile)
    return settings.model_copy(
        update={
            "validator_model": profile.model or settings.validator_model,
            "profiles": {**settings.profiles, ModelRole.VALIDATOR: profile},
        }
    )
