"""The teacher capability: a segment in, a `SegmentExtraction` (strict response model) out.

Two providers fill the same model: `OfflineTeacher` (deterministic rules, no network) and `LLMTeacher`
(any `LLMClient`, through the extraction prompt). Everything after `Teacher.extract` — the Semantic Mapper,
storage, accounting — is one code path for both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime

from memory_core.llm.base import LLMClient, StructuredRequest, StructuredResult
from memory_core.ontology.extraction import SegmentExtraction

PERSON_ROLES_BY_FORMAT = {"locomo": {"user", "assistant"}}  # both LoCoMo speakers are people


def speaker_is_person(role: str, source_format: str) -> bool:
    return role in PERSON_ROLES_BY_FORMAT.get(source_format, {"user"})


@dataclass(frozen=True)
class MessageView:
    """One message as a segment shows it: the full text and the piece [start, end) inside this segment."""

    ref: str  # the handle the teacher sees: m1, m2, ...
    message_id: str
    role: str
    author: str
    is_person: bool
    text: str
    start: int
    end: int
    created_at: datetime
    caption: str = ""  # what an image the message shared shows ("a photo of a painting of a sunset")

    @property
    def piece(self) -> str:
        return self.text[self.start : self.end]

    @property
    def subject(self) -> str:
        """How a description names the speaker: the author's name for people with names, else 'the user'."""
        if self.author and self.author.lower() not in {"user", "assistant", "system", "tool", self.role}:
            return self.author
        return "The user" if self.role == "user" else "The assistant"


@dataclass(frozen=True)
class SegmentInput:
    segment_id: str
    conversation_id: str
    source_format: str
    messages: tuple[MessageView, ...]
    speakers: tuple[str, ...] = ()  # every author name of the conversation (LoCoMo: the two people)
    # the round before this one, as context for what a pronoun points to (never evidence of this segment)
    context: tuple[MessageView, ...] = ()

    def by_ref(self) -> dict[str, MessageView]:
        return {m.ref: m for m in self.messages}


@dataclass
class TeacherResult:
    extraction: SegmentExtraction | None
    outcome: str  # ok | invalid | refused | error
    error: str = ""
    transient: bool = False
    raw: str = ""
    call: StructuredResult | None = None  # the LLM call behind the answer (None for the offline teacher)
    notes: dict = field(default_factory=dict)


class Teacher(ABC):
    """Returns candidate concepts and reactions for one segment."""

    #: what `mentions.extractor` records: provider, model or rules version, prompt version
    extractor: str
    uses_llm: bool = False

    @abstractmethod
    def extract(self, segment: SegmentInput) -> TeacherResult: ...

    def prepare(self, segments: list[SegmentInput]) -> None:
        """Called with a conversation's segments before they are extracted one by one: a teacher that reads
        with a model batches its work here (the offline teacher parses every person's message at once)."""
        return None

    @abstractmethod
    def describe(self) -> dict:
        """Metadata for the UI: teacher=offline or the model (never secrets)."""

    def reading_figures(self) -> dict:
        """How the teacher read the text it was given (the offline teacher: its parses); {} for a model."""
        return {}


class LLMTeacher(Teacher):
    uses_llm = True

    def __init__(self, client: LLMClient):
        from memory_core.extraction.prompts import EXTRACTION_PROMPT

        self.client = client
        self.prompt = EXTRACTION_PROMPT
        self.extractor = f"llm:{client.model}/{self.prompt.prompt_id}"

    def describe(self) -> dict:
        return {
            "teacher": self.client.model,
            "extractor": self.extractor,
            "prompt": self.prompt.prompt_id,
            **self.client.describe(),
        }

    def request(self, segment: SegmentInput) -> StructuredRequest[SegmentExtraction]:
        return StructuredRequest(
            prompt_id=self.prompt.prompt_id,
            system=self.prompt.system,
            user=self.prompt.render(segment),
            response_model=self.prompt.response_model,
        )

    def extract(self, segment: SegmentInput) -> TeacherResult:
        result = self.client.structured(self.request(segment))
        return TeacherResult(
            extraction=result.parsed if result.ok else None,
            outcome=result.outcome,
            error=result.error,
            transient=result.transient,
            raw=result.raw,
            call=result,
        )
