"""Labels and profiles of topics and domains: c-TF-IDF terms offline, or an LLM through the strict client.

`Describer.describe` returns one `Description` per group. The offline describer returns the c-TF-IDF label
and profile it is given. The LLM describer sends each group's terms and excerpts through a strict prompt
(cached by the client, accounted in `llm_calls`); a group whose call fails keeps its c-TF-IDF description
and the failure is returned as a residual row with the reason — the run never stops for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memory_core.llm.accounting import call_row
from memory_core.llm.base import LLMClient, StructuredRequest
from memory_core.store.db import utcnow
from memory_core.topics.prompts import GroupInput, Prompt


@dataclass(frozen=True)
class Description:
    label: str
    profile: str
    source: str  # "c-tf-idf" or "llm:<model>/<prompt id>"


@dataclass
class DescribeOutcome:
    descriptions: list[Description]
    call_rows: list[dict] = field(default_factory=list)  # for llm_calls
    residual_rows: list[dict] = field(default_factory=list)  # failed groups, with reasons


class Describer:
    """The offline describer: the c-TF-IDF description stands."""

    kind = "c-tf-idf"

    def describe(
        self, stage: str, prompt: Prompt, groups: Sequence[GroupInput], fallback: Sequence[Description]
    ) -> DescribeOutcome:
        return DescribeOutcome(descriptions=list(fallback))

    def identity(self) -> str:
        """Part of the build's configuration hash: a different describer means different labels."""
        return self.kind


class LLMDescriber(Describer):
    def __init__(self, client: LLMClient):
        self.client = client
        self.kind = f"llm:{client.model}"

    def describe(
        self, stage: str, prompt: Prompt, groups: Sequence[GroupInput], fallback: Sequence[Description]
    ) -> DescribeOutcome:
        out = DescribeOutcome(descriptions=[])
        for group, offline in zip(groups, fallback, strict=True):
            request = StructuredRequest(
                prompt_id=prompt.prompt_id,
                system=prompt.system,
                user=prompt.render(group),
                response_model=prompt.response_model,
            )
            result = self.client.structured(request)
            out.call_rows.append(call_row(result, stage))
            parsed = result.parsed if result.ok else None
            label = (getattr(parsed, "label", "") or "").strip()
            profile = (getattr(parsed, "profile", "") or "").strip()
            if label and profile:
                out.descriptions.append(
                    Description(label=label, profile=profile, source=f"{self.kind}/{prompt.prompt_id}")
                )
                continue
            reason = result.error or "the answer has an empty label or profile"
            out.residual_rows.append(
                dict(
                    stage=stage,
                    segment_id=None,
                    message_id=None,
                    mention_id=None,
                    reason_code=f"describe_{result.outcome}" if not result.ok else "describe_empty",
                    reason=f"{prompt.prompt_id}: {reason}; kept the c-TF-IDF label {offline.label!r}",
                    payload={"keywords": list(group.keywords), "size": group.size},
                    recorded_at=utcnow(),
                )
            )
            out.descriptions.append(offline)
        return out

    def identity(self) -> str:
        return self.kind
