"""UserReaction (docs/architecture.md §8): a user's state at a message, explicit or inferred, on a controlled vocabulary."""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field, model_validator

from memory_core.ontology.strict import StrictBase

ReactionState = Literal[
    "Frustration",
    "Anxiety",
    "Exhaustion",
    "Clarity",
    "Inspiration",
    "Joy",
    "Confusion",
    "Neutral",
    "Determination",
    "Overwhelmed",
    "Insight",
    "Other",
]
Valence = Literal["positive", "negative", "neutral", "ambiguous"]
EpistemicStatus = Literal["explicit", "inferred"]

REACTION_STATES: tuple[str, ...] = get_args(ReactionState)


class UserReaction(StrictBase):
    state: ReactionState
    state_raw: str = Field(
        description="the user's own word for the state; only when state is Other, else empty"
    )
    intensity: float = Field(ge=0.0, le=1.0)
    valence: Valence
    epistemic_status: EpistemicStatus = Field(
        description="explicit: the user named it; inferred: read from context"
    )
    evidence_message_id: str

    @model_validator(mode="after")
    def _state_raw_only_for_other(self) -> UserReaction:
        if self.state == "Other" and not self.state_raw.strip():
            raise ValueError("state_raw is required when state is Other")
        if self.state != "Other" and self.state_raw:
            raise ValueError("state_raw must be empty unless state is Other")
        return self
