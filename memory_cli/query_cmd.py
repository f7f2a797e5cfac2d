"""`memory-os query`: a readable cited answer with a compact evidence list (the XML context with `--xml`, as
the MCP server and agents get it), and the one-line errors of its arguments."""

from __future__ import annotations

import json
import re
from datetime import datetime

import click

from memory_core.corpora import registered_source
from memory_core.errors import InputError
from memory_core.store.db import MemoryHome
from memory_query.evidence import MemoryAnswer

DATE_FORMATS = "YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS] (ISO 8601)"
EXCERPT_CHARS = 110


def parse_when(option: str, value: str | None) -> datetime | None:
    """An ISO date or time argument; anything else is one line saying what is accepted."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.strip())
    except ValueError:
        raise InputError(f"{option} {value!r} is not a date: use {DATE_FORMATS}") from None


def require_built(home: MemoryHome, name: str) -> None:
    """A registered corpus that was never built is said so (and nothing is created for it)."""
    registered_source(home, name)
    if not home.corpus(name, readonly=True).exists():
        raise InputError(
            f"corpus {name!r} is registered but not built yet: run `memory-os materialize {name}`"
        )


def _one_line(text: str, limit: int = EXCERPT_CHARS) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def render_answer(answer: MemoryAnswer, text: str, k: int) -> str:
    """The answer, then at most `k` evidence messages, the concepts that cite them and the topics, one line
    each (what a person reads; the full context is `--xml`)."""
    lines = [text]
    items = answer.items[:k]
    if items:
        lines += ["", f"Evidence ({len(items)} of {len(answer.items)}):"]
        for n, item in enumerate(items, 1):
            lines.append(
                f'  {n}. {item.created_at:%Y-%m-%d} {item.role}: "{_one_line(item.text)}" {item.citation}'
            )
    listed = {i.message_id for i in items}
    concepts = [c for c in answer.concepts if listed & set(c.evidence_message_ids)][:k]
    if concepts:
        lines += ["", "Concepts:"]
        lines += [f"  - {_one_line(c.title, 80)} ({c.type}) {c.citation}" for c in concepts]
    if answer.topics:
        lines += ["", "Topics: " + "; ".join(f"{t.label} ({t.size})" for t in answer.topics[:3])]
    return "\n".join(lines)


@click.command()
@click.argument("name")
@click.argument("question")
@click.option("-k", "k", default=8, show_default=True, help="evidence items (and at most as many concepts)")
@click.option("--as-of", help=f"what memory held then: {DATE_FORMATS}")
@click.option("--believed-at", help=f"the facts as memory believed them then (system time): {DATE_FORMATS}")
@click.option("--psychological-access", is_flag=True, help="include reflective hypotheses (user reactions)")
@click.option("--xml", "as_xml", is_flag=True, help="print the XML context an agent reads, then the answer")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def query_command(ctx, name, question, k, as_of, believed_at, psychological_access, as_xml, as_json) -> None:
    """Ask corpus NAME: a cited extractive answer and the evidence behind it."""
    from memory_query import check_citations, query_memory
    from memory_query.answer import extractive_answer

    home: MemoryHome = ctx.obj["home"]
    when, believed = parse_when("--as-of", as_of), parse_when("--believed-at", believed_at)
    require_built(home, name)
    answer = query_memory(
        question,
        name,
        k=k,
        as_of=when,
        psychological_access=psychological_access,
        home=home,
        believed_at=believed,
    )
    text = extractive_answer(answer)
    if as_json:
        report = check_citations(text, answer.citations) if answer.items else None
        body = {**answer.as_dict(), "answer": text, "citations_valid": bool(report and report.valid)}
        click.echo(json.dumps(body, indent=2, default=str))
    elif as_xml:
        click.echo(f"{answer.context}\n\n{text}")
    else:
        click.echo(render_answer(answer, text, k))
