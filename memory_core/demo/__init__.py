"""The demo corpus the project ships: a small synthetic ChatGPT export (see scripts/make_demo_export.py)."""

from pathlib import Path

DEMO_QUESTIONS = (
    "When is my half marathon?",
    "Which database does Kestrel use for analytics now?",
)


def demo_export_path() -> Path:
    return Path(__file__).with_name("conversations.json")
