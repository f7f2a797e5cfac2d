"""Descriptions of name concepts (entity, project) as the memory loop maintains them.

The contract (`memory_core/ontology/concepts.py`) says a name concept's description says what the thing is.
A teacher describes each mention; a concept that absorbs many mentions keeps the best *definition* seen,
ranked without knowing which teacher wrote it:

- 2: starts with the name and says something about it ("Oscar is Caroline's guinea pig.", "Ledgerly: ..."),
- 1: starts with the name but only says who named it ("LGBTQ, mentioned by Caroline."),
- 0: a sentence about something else (an event the name occurred in) - kept only until anything better.

and a few *usage contexts*: the noun phrases the name modifies in the messages ("LGBTQ support group", "LGBTQ
art show"), read from the message text around the evidence span, first come first kept. The description is
`"<definition> Contexts: <c1>; <c2>; <c3>."`; `split` reads it back, so the description itself is the state
and replaying the ActionLog reproduces it.
"""

from __future__ import annotations

import re

from memory_core.concepts.names import normalise_name

MAX_CONTEXTS = 3
_CONTEXTS = " Contexts: "
_GENERIC = re.compile(r"^[^.]{0,120}?, mentioned by [^.]{1,80}\.?$")
_FOLLOWER = re.compile(r"(?:\+|['’]s)?((?:\s+[a-z][a-z\-]*){1,3})")
_STOP = frozenset(
    (
        "a an the and or but so to of in on at for with from by about into than as is are was were be been "
        "being am has have had do does did will would can could should may might must shall not no i me my "
        "we us our you your he him his she her they them their it its this that these those there here who "
        "what which when where why how too also just really very so again still yet then now today "
        "yesterday tomorrow tonight last next every each all some any more most much many said says say "
        "told tell got get gets went go goes going come came like love loved loves made make makes s t "
        "re ve ll d m gave give gives took take takes saw see sees ate eat eats ran kept keep keeps need "
        "needs let lets put puts felt feel feels knew know knows thought think thinks found finds brought "
        "bring left won lost bought buy sent send taught teach began helped showed started wants"
    ).split()
)


def definition_rank(names: list[str], description: str) -> int:
    """How well `description` defines a thing called by one of `names` (see the module docstring)."""
    desc = normalise_name(description)
    starts = any(desc == n or desc.startswith(n + " ") for n in (normalise_name(x) for x in names) if n)
    if not starts:
        return 0
    return 1 if _GENERIC.match(description.strip()) else 2


_ROLE = re.compile(
    r"^.{1,60}? is (?:(?:the )?[\w'’ ]{1,30}['’]s |an? |the )((?:[a-z][\w\-]* ){0,2}([a-z][\w\-]*))(?=[.,])"
)


def role_of(description: str) -> str:
    """The head noun of what a name's definition says it is ("Max is Dana's dog." → "dog"; "" when the
    definition says nothing: "Max, mentioned by Dana.")."""
    m = _ROLE.match(split(description)[0])
    return m.group(2) if m else ""


def roles_conflict(a: str, b: str) -> bool:
    """Two definitions that give one name different roles ("Dana's dog" / "Dana's coworker")."""
    ra, rb = role_of(a), role_of(b)
    return bool(ra and rb and ra != rb)


def split(description: str) -> tuple[str, list[str]]:
    """(definition, usage contexts) of a name concept's description."""
    head, sep, tail = description.partition(_CONTEXTS)
    if not sep:
        return description.strip(), []
    return head.strip(), [c.strip() for c in tail.rstrip(". ").split("; ") if c.strip()]


def compose(definition: str, contexts: list[str]) -> str:
    definition = definition.strip()
    if not contexts:
        return definition
    if definition and definition[-1] not in ".!?":
        definition += "."
    return f"{definition}{_CONTEXTS}{'; '.join(contexts)}."


_DETERMINERS = frozenset(
    "a an the my our your his her their this that these those some any every each".split()
)


def usage_context(text: str, start: int, end: int) -> str:
    """The phrase a capitalised name heads as a modifier inside a noun phrase: "a LGBTQ support group" →
    "LGBTQ support group", "my Harry Potter books" → "Harry Potter books"; "" otherwise (a name that is
    the subject of a verb, "Max ate my shoes", gives nothing: without a parser, a verb is not told apart)."""
    name = re.sub(r"\s+", " ", text[start:end]).strip()
    if not any(c.isupper() for c in name):
        return ""
    before = re.findall(r"[A-Za-z]+", text[max(0, start - 30) : start])[-2:]
    before = [w.lower() for w in before]
    in_phrase = bool(before) and (
        before[-1] in _DETERMINERS
        or (len(before) == 2 and before[0] in _DETERMINERS and before[1] not in _STOP)
    )
    m = _FOLLOWER.match(text, end) if in_phrase else None
    if not m:
        return ""
    words = m.group(1).split()
    keep = 0
    for w in words:
        if w in _STOP or (w.endswith("ed") and len(w) > 4):  # a verb ("... rights have", "... group joined")
            break
        keep += 1
    if not keep:
        return ""
    lead = text[end : m.start(1)]  # "+" or "'s" between the name and its head words
    return f"{name}{lead} {' '.join(words[:keep])}"


def summary(
    names: list[str], current: str, candidate_description: str, context: str, prefer_candidate: bool
) -> tuple[str, str | None]:
    """(new description, reason code or None) after a name concept absorbs a candidate.

    The definition is replaced by the candidate's when it ranks higher ("refine_definition"), or ranks the
    same while the caller prefers the candidate (a weak concept, a more confident candidate: "refine_weak");
    a new usage context is added while there are fewer than `MAX_CONTEXTS` ("refine_context")."""
    definition, contexts = split(current)
    code = None
    candidate = candidate_description.strip()
    rank, current_rank = definition_rank(names, candidate), definition_rank(names, definition)
    if rank > current_rank:
        definition, code = candidate, "refine_definition"
    elif (
        rank == current_rank and prefer_candidate and normalise_name(candidate) != normalise_name(definition)
    ):
        definition, code = candidate, "refine_weak"
    known = {normalise_name(c) for c in contexts} | {normalise_name(n) for n in names}
    if context and len(contexts) < MAX_CONTEXTS and normalise_name(context) not in known:
        contexts = [*contexts, context]
        code = code or "refine_context"
    return compose(definition, contexts), code


# ---------------------------------------------------------------------------------------------- facts
MAX_RESTATEMENTS = 2  # a fact's description keeps its first restatement and up to this many more
MAX_INSTANCES = 4  # a broader concept's description lists up to this many instances
_ALSO = " Also: "
_INSTANCES = " Instances: "


def grow_fact(current: str, candidate: str, new_words: set[str]) -> str | None:
    """A fact's description grown by a restatement that says more (`new_words`: content it adds), or None
    when it adds nothing or the description holds enough restatements already."""
    head, _, instances = current.partition(_INSTANCES)
    if not new_words or head.count(_ALSO) >= MAX_RESTATEMENTS:
        return None
    grown = f"{head.rstrip()}{_ALSO}{candidate.strip()}"
    return grown + (f"{_INSTANCES}{instances}" if instances else "")


def with_instance(current: str, instance_title: str) -> str | None:
    """A broader concept's description listing one more instance ("... Instances: Caroline applied to
    adoption agencies; ..."), or None when it lists it already or enough of them."""
    head, sep, tail = current.partition(_INSTANCES)
    listed = [t.strip() for t in tail.rstrip(". ").split("; ") if t.strip()] if sep else []
    if len(listed) >= MAX_INSTANCES or normalise_name(instance_title) in {normalise_name(t) for t in listed}:
        return None
    listed.append(instance_title.strip())
    head = head.rstrip()
    if head and head[-1] not in ".!?":
        head += "."
    return f"{head}{_INSTANCES}{'; '.join(listed)}."
