"""`memory-os ask NAME "question"`: the agent loop's answer, then the cited evidence it rests on, then the
steps; `--json` prints `answer`, `evidence` (each with its message id and `source_ref`), `steps` and the rest
of the answer object. The offline driver unless an LLM is configured (`--driver`)."""

from __future__ import annotations

import json

import click

DRIVERS = click.Choice(["auto", "offline", "llm"])  # memory_query.agent.choice.DRIVER_KINDS (imported lazily)


def _print_answer(answer) -> None:
    click.echo(answer.answer)
    for gap in answer.gaps if not answer.abstained else []:
        click.echo(f"(not found in memory: {gap})")
    cited = [e for e in answer.evidence if e.citation in answer.answer] or (
        [] if answer.abstained else answer.evidence
    )
    if cited:
        click.echo("\nEvidence:")
        for e in cited:
            click.echo(
                f"  {e.citation} {e.author}, {e.created_at:%Y-%m-%d %H:%M}, {e.conversation_ref} / {e.source_ref}"
            )
            click.echo(f'    "{" ".join(e.quote.split())[:300]}"  ({e.why})')
    for c in answer.concepts:
        if c["citation"] in answer.answer:
            click.echo(f"  {c['citation']} {c['title']}")
    roles = {r: sum(1 for s in answer.steps if s.role == r) for r in ("planner", "scout", "synthesizer")}
    click.echo(
        f"\n{len(answer.steps)} steps (" + ", ".join(f"{r} {n}" for r, n in roles.items()) + f"), "
        f"{answer.latency_ms:.0f} ms, driver {answer.driver}"
        + (f", stopped by the {answer.stopped_by} cap" if answer.stopped_by else "")
    )


@click.command("ask")
@click.argument("name")
@click.argument("question")
@click.option(
    "--as-of", help="ISO date or time: what memory held then (relative time words are read against it)"
)
@click.option("--believed-at", help="ISO date or time: the facts as memory believed them then (system time)")
@click.option(
    "--driver", type=DRIVERS, default="auto", show_default=True, help="auto: the LLM when a key is configured"
)
@click.option("--model", help="LLM driver: the chat model (default $OPENAI_MODEL)")
@click.option(
    "--max-steps",
    default=6,
    show_default=True,
    type=click.IntRange(min=3),
    help="steps of every role together",
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def ask_command(ctx, name, question, as_of, believed_at, driver, model, max_steps, as_json) -> None:
    """Ask corpus NAME: the Planner → Scout → Synthesizer loop answers from cited evidence, or says it cannot."""
    from memory_core.corpora import registered_source
    from memory_query.agent import AgentBudget
    from memory_query.agent.choice import choose_driver
    from memory_query.agent.timeframe import as_of_from_text
    from memory_query.api import ask

    home = ctx.obj["home"]
    registered_source(home, name)
    answer = ask(
        question,
        name,
        as_of=as_of_from_text(as_of),
        driver=choose_driver(driver, home.cache_dir, model),
        budget=AgentBudget(max_steps=max_steps),
        home=home,
        **({"believed_at": as_of_from_text(believed_at)} if believed_at else {}),
    )
    if as_json:
        click.echo(json.dumps(answer.as_dict(), indent=2, default=str))
        return
    _print_answer(answer)
