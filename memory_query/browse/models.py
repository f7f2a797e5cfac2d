"""What the browsing views return: one pydantic model per page of memory a person reads (the explorer renders
them; any other client may serialise them with `model_dump(mode="json")`)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from memory_query.tool_results import FactStateView, NotInHistory


class View(BaseModel):
    model_config = ConfigDict(frozen=True)


# ------------------------------------------------------------------------------------------ overview
class CorpusSummary(View):
    corpus: str
    conversations: int
    messages: int
    concepts_live: int = Field(description="concepts in state active or weak")
    concepts_by_type: dict[str, int]
    topics: int
    domains: int
    fact_states: int
    subjects: int
    first_message: datetime | None
    last_message: datetime | None
    built: bool = Field(description="the corpus has messages (ingested at least)")


# ------------------------------------------------------------------------------------------ conversations
class ConversationRow(View):
    conversation_id: str
    title: str
    source_ref: str
    created_at: datetime
    message_count: int


class ConversationList(View):
    corpus: str
    rows: list[ConversationRow]
    total: int
    offset: int
    limit: int
    query: str = ""


class SpanLink(View):
    """A concept's evidence span inside a message."""

    concept_id: str
    title: str
    type: str
    span_start: int
    span_end: int


class MessageView(View):
    message_id: str
    position: int
    role: str
    author: str
    created_at: datetime
    time_derived: bool
    text: str
    source_ref: str
    on_active_branch: bool = True
    concepts: list[SpanLink] = Field(default_factory=list)


class ConversationView(View):
    corpus: str
    conversation: ConversationRow
    messages: list[MessageView]
    first_position: int = Field(description="position of the first message shown")
    before: int = Field(description="messages earlier than the window shown")
    after: int = Field(description="messages later than the window shown")
    focus: str | None = Field(default=None, description="the message the page opened on")


class MessageLocation(View):
    message_id: str
    conversation_id: str
    position: int


# ------------------------------------------------------------------------------------------ concepts
class ConceptRow(View):
    concept_id: str
    title: str
    type: str
    state: str
    trust: str
    confidence: float
    support_count: int
    first_seen: datetime
    last_seen: datetime


class ConceptList(View):
    corpus: str
    rows: list[ConceptRow]
    total: int
    offset: int
    limit: int
    query: str = ""
    type: str = ""
    types: dict[str, int] = Field(description="live concepts per type")


class EvidenceSpan(View):
    message_id: str
    conversation_id: str
    conversation_title: str
    author: str
    created_at: datetime
    span_start: int
    span_end: int
    text: str = Field(description="the span, verbatim")
    before: str = Field(default="", description="the message's words just before the span")
    after: str = Field(default="", description="the message's words just after it")
    status: str
    confidence: float


class ConceptRelation(View):
    relation: str
    target: str = Field(description="the target's title as the teacher named it")
    target_id: str | None = Field(default=None, description="the live concept of that title, when one is")
    confidence: float | None = None


class TopicLink(View):
    topic_id: str
    label: str
    weight: float


class ConceptAction(View):
    """A decision about the concept: the memory loop's, the revision layer's or the gardener's."""

    at: datetime
    actor: str
    action: str
    rationale: str
    cited_message_ids: list[str]
    run_id: str
    status: str = ""


class FactTimelineEntry(View):
    fact_state_id: str
    subject: str
    attribute: str
    value: str
    status: str
    valid_from: datetime
    valid_until: datetime | None
    evidence_message_id: str
    closed_by_message_id: str | None


class ConceptPage(View):
    corpus: str
    concept: ConceptRow
    description: str
    aliases: list[str]
    revision_count: int
    merged_into: str | None
    merged_into_title: str | None
    evidence: list[EvidenceSpan]
    evidence_total: int
    relations: list[ConceptRelation]
    topics: list[TopicLink]
    anchors: list[str] = Field(description="labels of the anchor entities it is")
    facts: list[FactTimelineEntry]
    actions: list[ConceptAction]
    actions_total: int
    gardener: list[ConceptAction]


# ------------------------------------------------------------------------------------------ profiles
class SubjectRow(View):
    subject: str = Field(description="the subject's key")
    label: str
    slots: int
    states: int
    current: int = Field(description="slots with a value current now")
    concept_id: str | None = Field(default=None, description="the subject's own concept, when memory has one")


class SubjectList(View):
    corpus: str
    rows: list[SubjectRow]


class SlotHistory(View):
    """One slot of a subject: its value now and its states, the latest of them when there are many."""

    slot: str
    current: str | None = Field(description="the value current now")
    states: list[FactStateView] = Field(description="in valid-time order; each with its first evidence")
    earlier: int = Field(description="states before those shown")
    later: int = Field(default=0, description="states after those shown (a page of the history)")
    evidence: dict[str, int] = Field(description="fact state id → how much evidence it has in all")
    not_in_history: list[NotInHistory]


class Profile(View):
    corpus: str
    subject: SubjectRow
    slots: list[SlotHistory] = Field(description="slots with a current value first, then by name")
    slot: str | None = Field(default=None, description="the one slot shown, when the page is its history")


# ------------------------------------------------------------------------------------------ topics
class MapDomain(View):
    domain_id: str
    label: str
    topics: int
    colour: int = Field(description="index into the map's palette")


class MapTopic(View):
    topic_id: str
    label: str
    size: int
    conversations: int | None
    x: float
    y: float
    domain_id: str | None
    top_concepts: list[str]


class TopicMap(View):
    corpus: str
    method: str = Field(description="how the 2-D positions were made")
    topics: list[MapTopic]
    domains: list[MapDomain]
    points: list[tuple[float, float, int]] = Field(
        default_factory=list, description="a sample of segments: x, y, index into `topics` (-1 noise)"
    )
    noise_segments: int
    segments: int


class TreeTopic(View):
    topic_id: str
    label: str
    size: int


class TreeAnchor(View):
    anchor_id: str | None = Field(description="None: the domain's topics under no anchor")
    label: str
    concept_id: str | None
    topics: list[TreeTopic]


class TreeDomain(View):
    domain_id: str | None = Field(description="None: topics in no domain")
    label: str
    segments: int
    anchors: list[TreeAnchor]


class TopicTree(View):
    corpus: str
    domains: list[TreeDomain]


class SegmentExcerpt(View):
    segment_id: str
    conversation_id: str
    conversation_title: str
    first_message_id: str
    created_at: datetime
    text: str


class ConceptLink(View):
    concept_id: str
    title: str
    type: str
    weight: float = Field(description="the topic-concept link weight (0-100)")


class TopicPage(View):
    corpus: str
    topic_id: str
    label: str
    profile: str
    keywords: list[str]
    size: int
    conversations: int | None
    first_seen: datetime | None
    last_seen: datetime | None
    domain: str | None
    domain_id: str | None
    anchor: str | None
    label_source: str | None
    silhouette: float | None
    concepts: list[ConceptLink] = Field(description="linked concepts, strongest first")
    representatives: list[SegmentExcerpt]
