"""Task lifecycle: the state machine and the services that drive it."""

from core.tasks.state_machine import (
    TRANSITIONS,
    IllegalTransition,
    Trigger,
    allowed_triggers,
    can,
    next_status,
)

__all__ = ["TRANSITIONS", "IllegalTransition", "Trigger", "allowed_triggers", "can", "next_status"]
