"""The optional LLM agent of Phase 1: it chooses among the finite actions through the strict client.

One neighbourhood per conversation turn: the proposal, its concepts with their evidence (quotes with message
and segment ids) and linked topics. The model answers a `GardenerDecision`: act (a list of actions),
read_source_segments (ids to read; the chooser reads them and asks again, at most `max_reads` times) or
no_action. For a proposal below the rules' acceptance score (ambiguous) the source segments are read up
front and shown, so the constraint "read the source when in doubt" never depends on the model. Every
action it plans is still validated by the executor: uncited, out-of-neighbourhood or malformed actions are
refused and counted as execution errors.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import Field

from memory_core.gardener.refactor.actions import ACTIONS, EvidenceGroup, PlannedAction
from memory_core.gardener.refactor.choosers import Choice, Chooser, ChooserRules, stale_note
from memory_core.gardener.refactor.neighbourhood import Neighbourhood
from memory_core.llm.base import LLMClient, StructuredRequest
from memory_core.ontology.strict import StrictBase

PROMPT_ID = "gardener-refactor/v1"
EVIDENCE_PER_CONCEPT = 12


class EvidenceGroupChoice(StrictBase):
    title: str = Field(description="the new concept's title (usually the old one)")
    type: str = Field(description="one of the ontology's concept types, or '' to keep the old type")
    description: str = Field(description="one sentence grounded in the group's quotes")
    mention_ids: list[str] = Field(description="the mentions (evidence items) this new concept takes")


class ActionChoice(StrictBase):
    action: Literal["refine_concept", "merge_concepts", "split_concept", "create_relation", "archive_concept"]
    concept_ids: list[str] = Field(
        description="merge: canonical first, then the ones merged into it; create_relation: [source, target]; "
        "otherwise the one concept"
    )
    new_title: str = Field(description="refine_concept: the new title, or '' to keep it")
    new_type: str = Field(description="refine_concept: the new type, or '' to keep it")
    new_description: str = Field(description="refine_concept: the new description, or '' to keep it")
    new_aliases: list[str] = Field(description="refine_concept: the full alias list, or [] to keep them")
    relation: str = Field(
        description="create_relation: causes | conflicts_with | supports | instance_of | enables; else ''"
    )
    groups: list[EvidenceGroupChoice] = Field(
        description="split_concept: groups handing out every mention of the concept exactly once; else []"
    )
    cited_message_ids: list[str] = Field(description="the message ids of the quotes this action rests on")
    rationale: str = Field(description="one or two dense sentences on what in the evidence decides it")


class GardenerDecision(StrictBase):
    decision: Literal["act", "read_source_segments", "no_action"]
    segment_ids: list[str] = Field(description="read_source_segments: the segment ids to read; else []")
    actions: list[ActionChoice] = Field(description="act: the actions, smallest sufficient set; else []")
    rationale: str


REFACTOR_SYSTEM = """\
You maintain a person's long-term memory: concepts (typed hypotheses) each backed by quotes from their
conversations. You are given one proposal of the nightly triage and the small neighbourhood it concerns.
Decide with epistemic restraint:
- Act only on what the quotes show. Never invent facts, names or relations; prefer no_action to a guess.
- merge_concepts only when the concepts denote the same thing; split_concept only when the quotes describe
  different things sharing a name (hand out every mention id exactly once); archive_concept only for
  conversational filler; refine_concept to fix a title, type, description or aliases from the quotes;
  create_relation only when a cited quote states the link explicitly.
- Every action cites the message ids of the quotes it rests on.
- When in doubt, answer read_source_segments with the segment ids to read before deciding.
Answer with the JSON schema given.
"""


def render_neighbourhood(hood: Neighbourhood) -> str:
    p = hood.proposal
    concepts = []
    for cid, concept in hood.concepts.items():
        concepts.append(
            {
                "concept_id": cid,
                "title": concept.title,
                "type": concept.type,
                "state": concept.state,
                "description": concept.description,
                "aliases": concept.aliases[:10],
                "evidence_count": concept.support_count,
                "topics": hood.topics.get(cid, [])[:5],
                "relations": [r.model_dump() for r in concept.relations[:10]],
                "evidence": [
                    {
                        "mention_id": m["mention_id"],
                        "message_id": m["message_id"],
                        "segment_id": m["segment_id"],
                        "quote": m["surface"],
                        "context": m["description"],
                        "said_in": sorted(hood.people.get(m["conversation_id"], ())),
                    }
                    for m in hood.mentions.get(cid, [])[:EVIDENCE_PER_CONCEPT]
                ],
                "all_mention_ids": [m["mention_id"] for m in hood.mentions.get(cid, [])],
            }
        )
    body = {
        "proposal": {
            "category": p["category"],
            "score": p["score"],
            "rationale": p["rationale"],
            "concept_ids": p["concept_ids"],
        },
        "concepts": concepts,
        "source_segments": [{"segment_id": s, "text": t} for s, t in sorted(hood.segments_read.items())],
    }
    return json.dumps(body, ensure_ascii=False, indent=1, default=str)


def to_planned(choice: ActionChoice, proposal_id: str, read: list[str]) -> PlannedAction:
    changes = {}
    if choice.new_title.strip():
        changes["title"] = choice.new_title
    if choice.new_type.strip():
        changes["type"] = choice.new_type.strip()
    if choice.new_description.strip():
        changes["description"] = choice.new_description
    if choice.new_aliases:
        changes["aliases"] = list(choice.new_aliases)
    return PlannedAction(
        action=choice.action,
        concept_ids=list(choice.concept_ids),
        rationale=choice.rationale,
        cited_message_ids=[m for m in choice.cited_message_ids if m],
        proposal_id=proposal_id,
        changes=changes if choice.action == "refine_concept" else {},
        groups=[
            EvidenceGroup(list(g.mention_ids), g.title, g.type.strip(), g.description) for g in choice.groups
        ]
        if choice.action == "split_concept"
        else [],
        relation=choice.relation.strip(),
        confidence=0.7,
        read_segment_ids=read,
    )


class LLMChooser(Chooser):
    def __init__(self, client: LLMClient, rules: ChooserRules | None = None, max_reads: int = 1):
        self.client = client
        self.rules = rules or ChooserRules()
        self.max_reads = max_reads
        self.name = f"llm:{client.model}"

    def _accept_score(self, category: str) -> float:
        return {
            "merge": self.rules.merge_accept,
            "split": self.rules.split_accept,
            "noise": self.rules.noise_accept,
            "macro_concept": self.rules.macro_accept,
        }.get(category, 1.0)

    def request(self, hood: Neighbourhood) -> StructuredRequest[GardenerDecision]:
        return StructuredRequest(
            prompt_id=PROMPT_ID,
            system=REFACTOR_SYSTEM,
            user=render_neighbourhood(hood),
            response_model=GardenerDecision,
        )

    def choose(self, hood: Neighbourhood) -> Choice:
        note = stale_note(hood)
        if note and hood.proposal["category"] != "merge":
            return Choice("stale", note=note)
        if hood.proposal["score"] < self._accept_score(hood.proposal["category"]):
            for cid in hood.concepts:  # ambiguous: the source is read before the model decides
                hood.read_source_segments(hood.segment_ids(cid)[: self.rules.segments_per_concept])
        calls = []
        reads = 0
        while True:
            result = self.client.structured(self.request(hood))
            calls.append(result)
            if not result.ok:
                return Choice(
                    "error",
                    note=f"LLM {result.outcome}: {result.error[:300]}",
                    read_segment_ids=sorted(hood.segments_read),
                    llm_calls=calls,
                )
            decision = result.parsed
            if (
                decision.decision == "read_source_segments"
                and reads < self.max_reads
                and decision.segment_ids
            ):
                reads += 1
                hood.read_source_segments(list(decision.segment_ids))
                continue
            read = sorted(hood.segments_read)
            if decision.decision != "act" or not decision.actions:
                return Choice(
                    "reject",
                    note=f"LLM: {decision.rationale.strip()}",
                    read_segment_ids=read,
                    llm_calls=calls,
                )
            actions = [
                to_planned(a, hood.proposal["proposal_id"], read)
                for a in decision.actions
                if a.action in ACTIONS
            ]
            return Choice("act", actions, f"LLM: {decision.rationale.strip()}", read, calls)
