"""Prompts of the extraction stage, each paired with its strict response model.

`PROMPTS` lists every prompt the stage can send; a test runs the strict-schema validator over each
response model in it (and the client refuses to send a model that fails it). Changing a prompt's text
changes its hash and therefore the cache key: bump `prompt_id` when the meaning changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel

from memory_core.extraction.teacher import SegmentInput
from memory_core.ontology.claims import slot_vocabulary_text
from memory_core.ontology.extraction import SegmentExtraction


@dataclass(frozen=True)
class Prompt:
    prompt_id: str
    system: str
    response_model: type[BaseModel]
    render: Callable[[SegmentInput], str]


EXTRACTION_SYSTEM = f"""\
You extract long-term memory from one segment of a conversation, into a fixed ontology.

Concept types:
- entity: a named person, pet, place, organisation, product, work or technical name (the name itself).
- project: an undertaking a speaker works on (its name, else its noun phrase).
- goal: what a speaker wants, plans, decides or intends.
- event: something that happened or is scheduled at a time.
- behavioral_pattern: a habit, routine or ongoing repeated activity.
- belief: an opinion, preference, self-description or stable fact about a speaker or their people.
- tension: a difficulty, conflict or worry.

Rules:
- Only facts stated in the messages. Extract from people's messages; from an assistant's messages only named
  entities. Greetings, questions without a personal fact, and generic advice carry nothing.
- Every concept cites evidence: `message_ref` is the handle of a message (m1, m2, ...) and `quote` is copied
  character for character from that message's text (a name, a clause or a sentence; no ellipses, no
  paraphrase). `char_start`/`char_end` are the quote's offsets in the text as shown.
- Titles and descriptions depend on the type:
  - entity / project: `title` is the name as written ("Sweden", "Ledgerly"), never a sentence.
    `description` says what it is, starting with the name, from what the messages say: "Oscar is Caroline's
    guinea pig.", "Ledgerly is the user's Flask app for invoices."; if they say nothing about it,
    "<name>, mentioned by <speaker>." Never the event the name occurs in: that event is its own concept.
  - goal / event / belief / behavioral_pattern / tension: `title` is a short handle of the fact, the subject
    and the head phrase in at most eight words, with no date and no "..." ("Caroline went to a LGBTQ support
    group", "Melanie plays clarinet"). `description` is the whole fact as one sentence in the third person
    with the speaker's name (or "the user") and, when the message gives one, the date resolved from the
    message time in parentheses ("Caroline went to a LGBTQ support group yesterday (7 May 2023).").
- Relations only between concepts of this answer (`target_title` = the other concept's title).
- Claims: a fact concept that sets a revisable attribute of someone lists it in `claims`, one per slot
  (a name concept and a fact setting none: []). `subject` is "speaker" for the person speaking (I, my, we),
  else the person's name, or "speaker's <relation>" when unnamed. `slot` is one of:
{slot_vocabulary_text()}
  `qualifier` names what the slot is about where it needs one (lower case, singular), else "". `value` is the
  value alone ("Seattle", "3", "Tuesdays and Thursdays"); a count is a number in digits. `polarity` is
  "negated" when the text says it stopped or is not so ("I sold the Civic", "I don't live there anymore").
  `valid_from` is YYYY-MM-DD when the text says when it became true, resolved from the message time
  ("since March", "last week"); else "".
- Reactions: the state of a person speaking, on the vocabulary given; `epistemic_status` is explicit when
  they name the feeling, inferred otherwise; `state_raw` is the person's own word only when state is Other,
  else ""; `evidence_message_id` is the message handle; `cue` is the verbatim words showing the state.
- Nothing to extract: {{"concepts": [], "reactions": []}}.
"""


def render_segment(segment: SegmentInput) -> str:
    lines = [f"Conversation format: {segment.source_format or 'unknown'}."]
    for m in segment.messages:
        who = m.author if m.author and m.author not in (m.role,) else m.role
        kind = "person" if m.is_person else "assistant"
        time = m.created_at.strftime("%Y-%m-%d %H:%M")
        lines.append(f'<message ref="{m.ref}" speaker="{who}" kind="{kind}" time="{time}">')
        lines.append(m.piece)
        lines.append("</message>")
    return "\n".join(lines)


EXTRACTION_PROMPT = Prompt(
    prompt_id="extraction/v3",  # v2: the title / description contract per type; v3: claims with slots
    system=EXTRACTION_SYSTEM,
    response_model=SegmentExtraction,
    render=render_segment,
)

PROMPTS: tuple[Prompt, ...] = (EXTRACTION_PROMPT,)
