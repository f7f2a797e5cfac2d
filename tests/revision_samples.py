"""Real-shaped inputs for the revision layer: a user's chat over months whose facts change (where they live
and work, their car, how many cats, a favourite food, gym days), a ChatGPT export with an edited-away
branch, and the runner calls that build them (offline teacher, hashing embeddings)."""

from __future__ import annotations

import json
from pathlib import Path

from memory_core.corpora import plan_corpora
from tests.samples import chatgpt_node

# (conversation, id, role, time, text): January → September 2024
MOVES = [
    ("c1", "u1", "user", "2024-01-10T09:00:00", "I live in Portland with my wife Anna. I work at Intel as a QA engineer."),
    ("c1", "a1", "assistant", "2024-01-10T09:00:05", "Portland is lovely! How is the work at Intel going?"),
    ("c1", "u2", "user", "2024-01-10T09:01:00", "I drive a Honda Civic and I have two cats."),
    ("c1", "a2", "assistant", "2024-01-10T09:01:05", "Two cats, nice. What are their names?"),
    ("c2", "u3", "user", "2024-03-02T18:00:00", "My favourite food is sushi. I go to the gym on Mondays and Wednesdays."),
    ("c2", "a3", "assistant", "2024-03-02T18:00:05", "A solid routine, and sushi is a great choice."),
    ("c3", "u4", "user", "2024-07-15T20:00:00", "We finally moved! I live in Seattle now. I started working at Amazon last week."),
    ("c3", "a4", "assistant", "2024-07-15T20:00:05", "Congratulations on the move to Seattle and the new job at Amazon!"),
    ("c3", "u5", "user", "2024-07-15T20:02:00", "I sold the Civic, I drive a Tesla Model 3 now. We adopted a third cat, so I have three cats."),
    ("c3", "a5", "assistant", "2024-07-15T20:02:05", "Three cats! The Tesla must be fun to drive."),
    ("c4", "u6", "user", "2024-09-01T08:00:00", "My favourite food is ramen these days. I go to the gym on Tuesdays and Thursdays now."),
    ("c4", "a6", "assistant", "2024-09-01T08:00:05", "Ramen is a great comfort food."),
]  # fmt: skip
# told later, about the spring in between: ingested out of order
TACOMA = [
    ("c5", "u7", "user", "2024-04-20T10:00:00", "I live in Tacoma now, the commute to Portland was too long."),
    ("c5", "a7", "assistant", "2024-04-20T10:00:05", "Tacoma sounds like a good compromise."),
]  # fmt: skip
# two different values told at the same time, neither saying it changed
CONFLICT = [
    ("c6", "u8", "user", "2024-10-05T12:00:00", "My favourite drink is green tea."),
    ("c6", "a8", "assistant", "2024-10-05T12:00:05", "Green tea is lovely."),
    ("c6", "u9", "user", "2024-10-05T12:03:00", "My favourite drink is black coffee."),
    ("c6", "a9", "assistant", "2024-10-05T12:03:05", "Coffee it is, then."),
]  # fmt: skip
REVISION_ASSETS = [
    "messages", "segments", "mentions", "user_reactions", "canonical_concepts", "claims", "fact_states", "repairs",
]  # fmt: skip


def jsonl_rows(rows) -> list[dict]:
    return [
        {
            "id": i,
            "conversation_id": c,
            "role": role,
            "author": role,
            "text": text,
            "created_at": t,
            "title": c,
        }
        for c, i, role, t, text in rows
    ]


def write_chat(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in jsonl_rows(rows)), encoding="utf-8")
    return path


def edited(rows, message_id: str, old: str, new: str) -> list:
    return [(c, i, r, t, text.replace(old, new) if i == message_id else text) for c, i, r, t, text in rows]


def without(rows, message_id: str) -> list:
    return [row for row in rows if row[1] != message_id]


def running_export() -> list[dict]:
    """Two ChatGPT conversations, each with a user message edited after its first answer: the kept version
    is the active branch (to current_node), the first version and its reply an abandoned branch."""

    def conversation(cid, title, t0, opening, question, first, kept, replies):
        m = {
            "root": chatgpt_node("root", None, None, None, ["u1"]),
            "u1": chatgpt_node("u1", "user", opening, "root", ["a1"], t=t0),
            "a1": chatgpt_node("a1", "assistant", question, "u1", ["u2old", "u2"], t=t0 + 60),
            "u2old": chatgpt_node("u2old", "user", first, "a1", ["a2old"], t=t0 + 120),
            "a2old": chatgpt_node("a2old", "assistant", replies[0], "u2old", [], t=t0 + 130),
            "u2": chatgpt_node("u2", "user", kept, "a1", ["a2"], t=t0 + 180),
            "a2": chatgpt_node("a2", "assistant", replies[1], "u2", [], t=t0 + 190),
        }
        return {"title": title, "create_time": t0, "mapping": m, "current_node": "a2", "conversation_id": cid}

    return [
        conversation(
            "run-1", "10k plan", 1_717_000_000, "I am training for a 10k race in October.",
            "Great goal! When can you run during the week?", "I can only run in the evenings.",
            "I can run in the mornings before work.",
            ("Evening runs work well for many people.", "Morning runs are a great way to start the day."),
        ),
        conversation(
            "home-1", "Moving", 1_718_000_000, "I need help with a change of address.",
            "Sure. Where do you live now?", "I live in Lisbon.", "I live in Porto.",
            ("Lisbon it is.", "Porto it is."),
        ),
    ]  # fmt: skip


def offline_runner(home, instance):
    """The runner the revision tests build with: offline teacher, hashing embeddings."""
    from memory_assets.runner import CorpusRunner
    from memory_resources.embeddings import EmbeddingsResource
    from memory_resources.llm import LLMResource

    return CorpusRunner(
        home,
        instance,
        resources={
            "embeddings": EmbeddingsResource(provider="hashing", hashing_dim=256),
            "llm": LLMResource(teacher="offline"),
        },
    )


def build(
    runner, name: str, path: Path, source_format: str = "jsonl", selection=REVISION_ASSETS, progress=None
):
    """Register (once) and materialise `name` from `path` through the revision stages."""
    runner.register(plan_corpora(name, path, source_format))
    return runner.materialize(name, selection=selection, progress=progress)
