"""Where team nodes contradict each other: the same claim stated with different values.

Pure data, recorded on the attempt's evidence packet so the synthesis, the validator and the desk
read one finding instead of each re-deriving it. ``core.team.disagreement`` builds these.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, Field


class ClaimKind(StrEnum):
    """What a value measures; only values of one kind (and dimension) can contradict each other."""

    LENGTH = "length"
    AREA = "area"
    MASS = "mass"
    DURATION = "duration"
    TEMPERATURE = "temperature"
    PERCENT = "percent"
    MONEY = "money"
    COUNT = "count"
    DATE = "date"
    NAME = "name"


class NodeStatement(BaseModel):
    """One node's statement of the claim: the value as written and the sentence around it.

    Offsets are into the node's output text; ``value_start``/``value_end`` fall inside the
    passage, so a view can highlight the value within the passage it shows.
    """

    node_id: str
    value: str  # as written, e.g. "8,849 m"
    normalised: str  # comparable form, e.g. "8849 m", "2024-03-12", "peak xv"
    passage: str
    passage_start: int = Field(ge=0)
    value_start: int = Field(ge=0)
    value_end: int = Field(ge=0)

    @property
    def value_in_passage(self) -> tuple[int, int]:
        """The value's span relative to the passage."""
        return self.value_start - self.passage_start, self.value_end - self.passage_start


class Disagreement(BaseModel):
    """Two or more nodes state values of one kind for one subject that never agree."""

    subject: str  # the normalised subject key, e.g. "everest"
    kind: ClaimKind
    unit: str = ""  # the dimension's unit the values are compared in ("m", "%", "USD"), "" for dates, names
    statements: list[NodeStatement] = Field(default_factory=list)

    @property
    def node_ids(self) -> list[str]:
        return list(dict.fromkeys(s.node_id for s in self.statements))

    def summary(self) -> str:
        """One line: ``everest (length): node 'a' says 8,849 m; node 'b' says 8,848 m``."""
        said = "; ".join(f"node '{s.node_id}' says {s.value}" for s in self.statements)
        return f"{self.subject} ({self.kind.value}): {said}"


__all__ = ["ClaimKind", "Disagreement", "NodeStatement"]
