"""The read side of the revision layer: which fact is current, as of a valid time and as believed at a
system time, for ranking (`current_facts` path), for annotating evidence, and for the `facts` views.

- **valid time** (`as_of`): the state valid at that moment (`valid_from <= t < valid_until`); default the
  current view (open `valid_until`);
- **system time** (`believed_at`): the state versions memory held then (`recorded_at <= s < superseded_at`)
  and the claims it had recorded; default what it holds now.

Every claim of a message is annotated with its fact: subject, slot key, value, status (`current`,
`superseded`, `ended`, `disputed`, `not_yet` — valid only after the time asked —, or the claim's own
`stale` / `rejected` / `archived` when its source changed or it sits on an abandoned ChatGPT branch),
valid_from / valid_until and, for a replaced fact, what replaced it (`superseded_by`: the new value and
the message saying it).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime

import numpy as np
from sqlalchemy import select

from memory_core.lexical import tokenize
from memory_core.store.schema import claims, conversations, fact_states, messages
from memory_query.fusion import strongest
from memory_query.reader import CorpusReader

# what a question about a slot says (stemmed like the question): a group is asked about when the question
# shares a word with its slot's words, its qualifier or one of its values
SLOT_WORDS: dict[str, str] = {
    "residence": "live lives living lived move moved moving home city town country reside address apartment "
    "house based",
    "hometown": "from grew born hometown origin originally",
    "workplace": "work works working job company employer office",
    "job_title": "job title role position promoted profession career",
    "school": "school university college study studying attend",
    "vehicle": "car drive drives driving vehicle ride",
    "possession": "many own have number",
    "count": "many times number often count",
    "favourite": "favourite favorite",
    "preference": "prefer preference rather",
    "schedule": "time usually day days schedule often morning evening week",
    "diet": "diet eat vegan vegetarian",
    "relationship": "name partner",
    "relationship_status": "married single engaged relationship dating",
    "plan_date": "date scheduled day",
    "location": "kept hang hanging placed currently",
    "duration": "long months years",
    "age": "old age",
}
_SLOT_TOKENS = {slot: frozenset(tokenize(words)) for slot, words in SLOT_WORDS.items()}
NOT_CURRENT = ("superseded", "ended", "not_yet", "archived", "stale", "rejected", "unrecorded")
FACT_SEEDS = 30  # strongest messages whose facts the current_facts path looks at


@dataclass
class FactNote:
    """One claim of a message with its fact, as of the times asked."""

    claim_id: str
    subject: str
    attribute: str
    value: str
    status: str
    valid_from: datetime
    valid_until: datetime | None
    state_key: str | None
    superseded_by: dict | None = None  # {"value", "message_id", "cite", "state_key"}
    reason: str = ""

    def as_dict(self) -> dict:
        d = asdict(self)
        d["valid_from"] = self.valid_from.isoformat()
        d["valid_until"] = self.valid_until.isoformat() if self.valid_until else None
        return d


@dataclass
class FactTable:
    """Every claim and every FactState version of a corpus, as loaded once per version of the store."""

    claims: list[dict]
    versions: list[dict]
    by_message: dict[str, list[int]] = field(default_factory=dict)  # message id → claim rows
    by_group: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # (subject, slot key) → claims
    by_concept: dict[str, list[int]] = field(default_factory=dict)  # concept id → its claims
    versions_of_claim: dict[str, list[int]] = field(default_factory=dict)  # claim id → version rows
    versions_of_key: dict[str, list[int]] = field(default_factory=dict)  # state key → version rows
    closed_by: dict[str, list[int]] = field(default_factory=dict)  # claim id → version rows it closed
    slot_of: dict[str, str] = field(default_factory=dict)  # claim id → its slot

    #: an abandoned ChatGPT branch's message → the active branch's message in its place (same depth below
    #: the fork): what must outrank it
    alternatives: dict[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.versions and not self.alternatives


def branch_alternatives(reader: CorpusReader) -> dict[str, str]:
    """For each message of an abandoned ChatGPT branch, the active-branch message at the same depth below
    the point where the branches fork (the edited message's kept version, its reply ...)."""
    abandoned = messages.c.attributes["on_active_branch"].as_boolean().is_(False)
    with reader.store.source.connect() as conn:
        # only conversations holding an abandoned branch (most hold none): decoding every message's
        # attributes of a 100k-message export cost a cold query seconds
        branched = list(
            conn.execute(
                select(messages.c.conversation_id)
                .join(conversations, conversations.c.conversation_id == messages.c.conversation_id)
                .where(conversations.c.source_format == "chatgpt", abandoned)
                .distinct()
            ).scalars()
        )
        rows = []
        for i in range(0, len(branched), 500):
            rows += conn.execute(
                select(messages.c.message_id, messages.c.parent_id, messages.c.attributes).where(
                    messages.c.conversation_id.in_(branched[i : i + 500])
                )
            ).all()
    parent = {r.message_id: r.parent_id for r in rows}
    active = {r.message_id for r in rows if (r.attributes or {}).get("on_active_branch", True) is not False}
    active_child: dict[str, str] = {}
    for r in rows:
        if r.message_id in active and r.parent_id is not None:
            active_child[r.parent_id] = r.message_id
    out: dict[str, str] = {}
    for mid in parent:
        if mid in active:
            continue
        depth, node = 0, mid
        while node is not None and node not in active:
            node, depth = parent.get(node), depth + 1
        if node is None:
            continue
        for _ in range(depth):
            if node not in active_child:
                break
            node = active_child[node]
        if node in active and node != mid:
            out[mid] = node
    return out


def load_fact_table(reader: CorpusReader) -> FactTable:
    with reader.store.staging.connect() as conn:
        claim_rows = [dict(r) for r in conn.execute(select(claims)).mappings()]
        versions = [
            dict(r)
            for r in conn.execute(
                select(fact_states)
                .where(fact_states.c.state_key.is_not(None))
                .order_by(fact_states.c.recorded_at)
            ).mappings()
        ]
    table = FactTable(claim_rows, versions, alternatives=branch_alternatives(reader))
    for i, c in enumerate(claim_rows):
        table.by_message.setdefault(c["message_id"], []).append(i)
        table.by_group.setdefault((c["subject"], c["attribute"]), []).append(i)
        table.slot_of[c["claim_id"]] = c["slot"]
        if c["concept_id"]:
            table.by_concept.setdefault(c["concept_id"], []).append(i)
    for i, v in enumerate(versions):
        table.versions_of_key.setdefault(v["state_key"], []).append(i)
        for claim_id in v["claim_ids"] or ():
            table.versions_of_claim.setdefault(claim_id, []).append(i)
        if v["closed_by_claim_id"]:
            table.closed_by.setdefault(v["closed_by_claim_id"], []).append(i)
    return table


def believed(version: dict, believed_at: datetime | None) -> bool:
    if believed_at is None:
        return version["superseded_at"] is None
    return version["recorded_at"] <= believed_at and (
        version["superseded_at"] is None or believed_at < version["superseded_at"]
    )


class FactView:
    """The facts of one table as of a valid time (`as_of`) and as believed at a system time (`believed_at`)."""

    def __init__(self, table: FactTable, as_of: datetime | None = None, believed_at: datetime | None = None):
        self.table = table
        self.as_of = as_of
        self.believed_at = believed_at

    def version(self, claim_id: str) -> dict | None:
        """The believed version of the state a claim supports."""
        for i in reversed(self.table.versions_of_claim.get(claim_id, [])):
            v = self.table.versions[i]
            if believed(v, self.believed_at):
                return v
        return None

    def state(self, state_key: str | None) -> dict | None:
        for i in reversed(self.table.versions_of_key.get(state_key or "", [])):
            v = self.table.versions[i]
            if believed(v, self.believed_at):
                return v
        return None

    def known(self, claim: dict) -> bool:
        return self.believed_at is None or claim["recorded_at"] <= self.believed_at

    def _claim_status(self, claim: dict) -> str:
        status = claim["state"]
        if (
            self.believed_at is not None
            and claim["state_changed_at"]
            and claim["state_changed_at"] > self.believed_at
        ):
            return "active"  # it changed later: then it was still standing
        return status

    def status_at(self, version: dict) -> str:
        """current / superseded / ended / disputed / not_yet, at `as_of` (default: now)."""
        if version["status"] == "disputed":
            return "disputed"
        t = self.as_of
        until = version["valid_until"]
        if t is None:
            return "current" if until is None else version["status"]
        if t < version["valid_from"]:
            return "not_yet"
        if until is None or t < until:
            return "current"
        return version["status"]

    def closed(self, claim_id: str) -> dict | None:
        """The believed version this claim closed (a negation: "I sold the Civic"), if any."""
        for i in self.table.closed_by.get(claim_id, []):
            v = self.table.versions[i]
            if believed(v, self.believed_at):
                return v
        return None

    def note(self, claim: dict) -> FactNote | None:
        if not self.known(claim):  # told, but memory had not read it at `believed_at`
            return FactNote(
                claim["claim_id"], claim["subject_label"] or claim["subject"], claim["attribute"], claim["value"],
                "unrecorded", claim["valid_from"], None, None, reason="recorded after the time believed at",
            )  # fmt: skip
        status = self._claim_status(claim)
        version = self.version(claim["claim_id"]) if status in ("active", "disputed") else None
        if version is None and claim["polarity"] == "negated" and status == "active":
            ended = self.closed(claim["claim_id"])
            return FactNote(
                claim["claim_id"], claim["subject_label"] or claim["subject"], claim["attribute"], claim["value"],
                "ends" if ended else "unplaced", claim["valid_from"], None, ended["state_key"] if ended else None,
                reason="says it stopped" + ("" if ended else "; nothing open to end"),
            )  # fmt: skip
        if version is None:
            return FactNote(
                claim["claim_id"], claim["subject_label"] or claim["subject"], claim["attribute"], claim["value"],
                status if status not in ("active", "disputed") else "unplaced", claim["valid_from"], None, None,
                reason=claim["state_reason"] or "",
            )  # fmt: skip
        note = FactNote(
            claim["claim_id"],
            version["subject_label"] or version["subject"],
            version["attribute"],
            version["value"],
            self.status_at(version),
            version["valid_from"],
            version["valid_until"],
            version["state_key"],
        )
        nxt = self.state(version["superseded_by"])
        if note.status in ("superseded", "ended") and version["closed_by_message_id"]:
            note.superseded_by = {
                "value": nxt["value"] if nxt else None,
                "state_key": version["superseded_by"],
                "message_id": version["closed_by_message_id"],
                "cite": f"[Source:{version['closed_by_message_id']}]",
            }
        return note

    def notes(self, message_id: str) -> list[FactNote]:
        out = []
        for i in self.table.by_message.get(message_id, []):
            note = self.note(self.table.claims[i])
            if note is not None:
                out.append(note)
        return out

    def group_key(self, claim: dict) -> tuple[str, str]:
        version = self.version(claim["claim_id"])
        return claim["subject"], version["attribute"] if version else claim["attribute"]


# ------------------------------------------------------------------------------------------ ranking
def _asked(question_tokens: set[str], attribute: str, slot: str, values: list[str]) -> bool:
    if question_tokens & _SLOT_TOKENS.get(slot, frozenset()):
        return True
    words = set(tokenize(attribute.split(":", 1)[1] if ":" in attribute else ""))
    for v in values:
        words |= set(tokenize(v))
    return bool(question_tokens & words)


def current_fact_lift(state) -> np.ndarray:
    """Per message, what lifts the latest evidence of the current fact just above the best-ranked message
    of a fact it replaced (or of an abandoned branch / a not-yet-valid value) — for the (subject, slot)
    groups the question is about that the strongest messages reach. Nothing else moves."""
    out = state.zeros()
    table = state.reader.facts()
    if table.empty:
        return out
    view = FactView(table, state.as_of, state.believed_at)
    index, fused, visible = state.table.index, state.fused, state.visible
    tokens = set(state.tokens)
    seeds = strongest(fused, FACT_SEEDS)
    _lift_active_branches(state, table, seeds, out)
    groups: dict[tuple[str, str], dict] = {}
    for mi in seeds:
        for ci in table.by_message.get(state.table.ids[mi], []):
            claim = table.claims[ci]
            if view.known(claim):
                groups.setdefault(view.group_key(claim), {"slot": claim["slot"]})
    if not groups:
        return out
    members: dict[tuple[str, str], list[tuple[int, FactNote, dict]]] = defaultdict(list)
    for key in groups:
        for claim in _claims_of(table, key, view):
            mi = index.get(claim["message_id"])
            note = view.note(claim)
            if mi is not None and visible[mi] and note is not None:
                members[key].append((mi, note, claim))
    for key, rows in members.items():
        values = sorted({n.value for _, n, _ in rows})
        if not _asked(tokens, key[1], groups[key]["slot"], values):
            continue
        current = [(mi, c) for mi, n, c in rows if n.status == "current"]
        old = [mi for mi, n, _ in rows if n.status in NOT_CURRENT]
        if not current or not old:
            continue
        latest = max(current, key=lambda mc: (mc[1]["spoken_at"], float(fused[mc[0]])))[0]
        best_old = max(float(fused[mi]) for mi in old)
        gap = best_old - float(fused[latest])
        if gap >= 0:
            out[latest] = max(out[latest], gap + 1e-3 * max(1.0, abs(best_old)))
    return out


def _lift_active_branches(state, table: FactTable, seeds: list[int], out: np.ndarray) -> None:
    """An abandoned branch's message never outranks the active branch's message in its place."""
    index, fused, visible = state.table.index, state.fused, state.visible
    for mi in seeds:
        alternative = index.get(table.alternatives.get(state.table.ids[mi], ""))
        if alternative is None or not visible[alternative]:
            continue
        gap = float(fused[mi]) - float(fused[alternative])
        if gap >= 0:
            out[alternative] = max(out[alternative], gap + 1e-3 * max(1.0, abs(float(fused[mi]))))


def _claims_of(table: FactTable, key: tuple[str, str], view: FactView) -> list[dict]:
    """The claims of a (subject, slot key) group; of a lane ("slot/value": an unrelated value's own
    history), those whose state lies in it."""
    subject, attribute = key
    rows = [table.claims[i] for i in table.by_group.get((subject, attribute.split("/", 1)[0]), [])]
    return [c for c in rows if view.group_key(c) == key]


def facts_built(reader: CorpusReader) -> bool:
    return not reader.facts().empty


_STATUS_ORDER = {
    s: i for i, s in enumerate(("superseded", "ended", "not_yet", "disputed", "archived", "current"))
}


def annotate_facts(state, items, concepts) -> None:
    """Each item's and concept hit's facts as of the question's times, the ones the question is about
    first (`asked`)."""
    table = state.reader.facts()
    if table.empty:
        return
    view = FactView(table, state.as_of, state.believed_at)
    tokens = set(state.tokens)
    slots = table.slot_of

    def described(notes: list[FactNote]) -> list[dict]:
        out = []
        for n in notes:
            d = n.as_dict()
            d["asked"] = _asked(tokens, n.attribute, slots.get(n.claim_id, ""), [n.value])
            out.append(d)
        return sorted(out, key=lambda d: (not d["asked"], _STATUS_ORDER.get(d["status"], 9), d["attribute"]))

    for item in items:
        item.facts = described(view.notes(item.message_id))
    for hit in concepts:
        notes = [view.note(table.claims[i]) for i in table.by_concept.get(hit.concept_id, [])]
        hit.facts = described([n for n in notes if n is not None])
