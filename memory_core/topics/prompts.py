"""Prompts of the topic layer, each paired with its strict response model.

A topic is described from its most distinctive terms (c-TF-IDF) and the member segments nearest its centroid;
a domain from the labels and profiles of its topics. Bump `prompt_id` when a prompt's meaning changes (its
text is hashed into the cache key either way).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, Field

from memory_core.ontology.strict import StrictBase


class GroupDescription(StrictBase):
    """What an LLM returns for one topic or one domain."""

    label: str = Field(
        description="a short name, 2 to 6 words, specific to this group (no generic 'Conversation')"
    )
    profile: str = Field(
        description="one or two sentences: what the group is about — the activities, people, places, "
        "projects or problems it involves"
    )


@dataclass(frozen=True)
class GroupInput:
    """The evidence a description is written from."""

    keywords: tuple[str, ...]
    excerpts: tuple[str, ...]  # representative texts (segments for a topic, topic profiles for a domain)
    size: int


@dataclass(frozen=True)
class Prompt:
    prompt_id: str
    system: str
    response_model: type[BaseModel]
    render: Callable[[GroupInput], str]


TOPIC_SYSTEM = """\
You name one topic of a person's conversation history for a memory index. You see the topic's most
distinctive terms and the conversation excerpts closest to its centre. Write:
- label: 2 to 6 words naming what these excerpts are about (a subject, not a mood; no quotes).
- profile: one or two sentences on what the topic covers: activities, people, places, projects or problems,
  as the excerpts show them. No speculation beyond the excerpts.
"""

DOMAIN_SYSTEM = """\
You name one domain of a person's memory: a group of related topics. You see the labels and profiles of its
topics. Write:
- label: 2 to 5 words for the area of life or work they share.
- profile: one or two sentences on what the domain spans.
"""

_EXCERPT_CHARS = 600


def _render(kind: str, item: GroupInput) -> str:
    lines = [f"{kind} size: {item.size}", "Distinctive terms: " + ", ".join(item.keywords), ""]
    for i, text in enumerate(item.excerpts, 1):
        body = text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS] + " …"
        lines += [f'<excerpt n="{i}">', body, "</excerpt>"]
    return "\n".join(lines)


TOPIC_PROMPT = Prompt(
    prompt_id="topics/describe/v1",
    system=TOPIC_SYSTEM,
    response_model=GroupDescription,
    render=lambda item: _render("Topic", item),
)
DOMAIN_PROMPT = Prompt(
    prompt_id="domains/describe/v1",
    system=DOMAIN_SYSTEM,
    response_model=GroupDescription,
    render=lambda item: _render("Domain", item),
)

PROMPTS: tuple[Prompt, ...] = (TOPIC_PROMPT, DOMAIN_PROMPT)
