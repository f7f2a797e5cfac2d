"""The history of one (subject, slot key): its claims in valid-time order become FactStates.

Pure logic over `ClaimView`s; the fact-states stage loads them and writes what this returns.

Walking the claims by valid time (then utterance time):
- a claim restating the value of an open state supports it (the state's evidence grows);
- a claim with another value while a state is open **supersedes** it — the open state's `valid_until`
  becomes the new state's `valid_from`, `superseded_by` names the new state and the closing claim is cited —
  unless it was said within `conflict_window` of the open state's latest evidence without saying that
  anything changed ("now", "moved", "anymore", "switched", …): two different values at the same time
  **conflict**, both states are `disputed` and name each other in `conflicts_with`. Such a pair is what the
  rules cannot settle: an adjudicator (an LLM when one is configured) may decide supersede / conflict /
  unrelated instead, and an *unrelated* value gets a history of its own (a lane of the slot key);
- a negated claim ("I sold the Civic") ends the open state with that value (status `ended`);
- a claim older than the open states (ingested out of order) falls into its place in the walk: the history
  is recomputed from all claims, so what it changes is where it belongs, never on top.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from memory_core.ids import stable_uuid
from memory_core.revision.slots import same_value

CHANGE_CUE = re.compile(
    r"\b(now|anymore|any more|no longer|moved|move|switched|switch|changed|change|new|these days|nowadays|"
    r"instead|finally|recently|just|actually|started|start|updated|currently|since|lately|became|got|"
    r"promoted|upgraded|replaced|sold|bought|adopted|left|quit|joined|relocated|turned)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class ClaimView:
    """A claim as a history reads it."""

    claim_id: str
    message_id: str
    concept_id: str
    subject: str
    subject_label: str
    slot: str
    attribute: str
    value: str
    value_norm: str
    polarity: str
    valid_from: datetime
    spoken_at: datetime
    text: str
    span_start: int = 0
    change_cue: bool = False  # the message says something changed


@dataclass
class StateDraft:
    """A FactState as the history computes it (one version)."""

    state_key: str
    subject: str
    subject_label: str
    slot: str
    attribute: str
    value: str
    value_norm: str
    valid_from: datetime
    concept_id: str
    evidence_message_id: str
    claims: list[ClaimView] = field(default_factory=list)
    valid_until: datetime | None = None
    status: str = "current"
    superseded_by: str | None = None
    closed_by: ClaimView | None = None
    conflicts_with: list[str] = field(default_factory=list)
    decided_by: str = "rule"
    rationale: str = ""

    @property
    def open(self) -> bool:
        return self.valid_until is None

    @property
    def latest(self) -> datetime:
        return max(c.valid_from for c in self.claims)

    def content(self) -> tuple:
        """What a stored version must equal to be this version."""
        return (
            self.attribute,
            self.value,
            self.value_norm,
            self.valid_from,
            self.valid_until,
            self.status,
            tuple(c.claim_id for c in self.claims),
            self.superseded_by,
            self.closed_by.claim_id if self.closed_by else None,
            tuple(sorted(self.conflicts_with)),
            self.concept_id,
            self.decided_by,
        )


@dataclass(frozen=True)
class Verdict:
    """How a new value relates to the open state(s) it meets."""

    decision: str  # supersede | conflict | unrelated
    decided_by: str  # rule | llm:<model>
    rationale: str


Decide = Callable[[list[StateDraft], ClaimView], Verdict]


def rule_verdict(open_states: list[StateDraft], claim: ClaimView, window: timedelta) -> Verdict | None:
    """The rules' verdict, or None when they cannot settle it (same time, different values, no change
    said): then an adjudicator, or the fallback, decides."""
    latest = max(s.latest for s in open_states)
    if claim.valid_from - latest >= window:
        return Verdict("supersede", "rule", "a later claim with another value replaces the earlier one")
    if claim.change_cue:
        return Verdict(
            "supersede", "rule", "said at about the same time, but the later message says it changed"
        )
    return None


def _state(claim: ClaimView, attribute: str) -> StateDraft:
    key = stable_uuid(
        "fact_state",
        claim.subject,
        attribute,
        claim.message_id,
        claim.value_norm,
        claim.valid_from.isoformat(),
    )
    return StateDraft(
        state_key=key,
        subject=claim.subject,
        subject_label=claim.subject_label,
        slot=claim.slot,
        attribute=attribute,
        value=claim.value,
        value_norm=claim.value_norm,
        valid_from=claim.valid_from,
        concept_id=claim.concept_id,
        evidence_message_id=claim.message_id,
        claims=[claim],
    )


def claim_order(c: ClaimView) -> tuple:
    return (c.valid_from, c.spoken_at, c.message_id, c.span_start, c.claim_id)


@dataclass
class _Lane:
    attribute: str
    states: list[StateDraft] = field(default_factory=list)

    def open_states(self) -> list[StateDraft]:
        return [s for s in self.states if s.open]


def build_history(claims: list[ClaimView], decide: Decide, window: timedelta) -> list[StateDraft]:
    """Every state (version as of now) of one (subject, slot key), lanes included, in valid-time order;
    `decide` settles a new value meeting open states, `window` is the conflict window."""
    main = _Lane(claims[0].attribute if claims else "")
    lanes: dict[str, _Lane] = {"": main}
    for claim in sorted(claims, key=claim_order):
        lane = next((ln for k, ln in lanes.items() if k and same_value(k, claim.value_norm)), main)
        _walk(lane, lanes, claim, decide, window)
    states = [s for ln in lanes.values() for s in ln.states]
    return sorted(states, key=lambda s: (s.attribute, s.valid_from, s.state_key))


def _walk(lane: _Lane, lanes: dict[str, _Lane], claim: ClaimView, decide: Decide, window: timedelta) -> None:
    open_states = lane.open_states()
    if claim.polarity == "negated":
        for s in open_states:
            if not claim.value_norm or same_value(s.value_norm, claim.value_norm):
                _close(s, claim, "ended", None, Verdict("end", "rule", "the later claim says it stopped"))
        return
    same = [s for s in open_states if same_value(s.value_norm, claim.value_norm)]
    if same:
        kept = same[0]
        kept.claims.append(claim)
        others = [s for s in open_states if s is not kept]
        if others and kept.status == "disputed" and rule_verdict(others, claim, window) is not None:
            # the value is said again later: the dispute is settled in its favour
            for s in others:
                _close(s, claim, "superseded", kept.state_key, Verdict("supersede", "rule", "restated later"))
            kept.status = "current"
        return
    new = _state(claim, lane.attribute)
    if not open_states:
        lane.states.append(new)
        return
    verdict = decide(open_states, claim)
    if verdict.decision == "unrelated":
        other = lanes.setdefault(claim.value_norm, _Lane(f"{lane.attribute}/{claim.value_norm}"))
        other.states.append(replace(new, attribute=other.attribute, decided_by=verdict.decided_by,
                                    rationale=verdict.rationale))  # fmt: skip
        return
    if verdict.decision == "conflict":
        new.status = "disputed"
        new.decided_by, new.rationale = verdict.decided_by, verdict.rationale
        for s in open_states:
            s.status = "disputed"
            s.conflicts_with.append(new.state_key)
            new.conflicts_with.append(s.state_key)
            s.decided_by, s.rationale = verdict.decided_by, verdict.rationale
        lane.states.append(new)
        return
    for s in open_states:
        _close(s, claim, "superseded", new.state_key, verdict)
    lane.states.append(new)


def _close(state: StateDraft, claim: ClaimView, status: str, by: str | None, verdict: Verdict) -> None:
    state.valid_until = max(claim.valid_from, state.valid_from)
    state.status = status
    state.superseded_by = by
    state.closed_by = claim
    state.decided_by, state.rationale = verdict.decided_by, verdict.rationale
