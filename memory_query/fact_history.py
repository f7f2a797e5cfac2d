"""Fact histories as the `facts` views show them (the CLI command, the agent tool, the MCP tool): per
(subject, slot key) every state as memory believes it now or believed it at a system time, each with its
status at a valid time, what replaced it and its cited evidence, and the claims in no history with why."""

from __future__ import annotations

from datetime import datetime

from memory_query.facts import FactView, believed
from memory_query.reader import CorpusReader


def _cite(message_id: str | None) -> str | None:
    return f"[Source:{message_id}]" if message_id else None


def _state_view(view: FactView, version: dict, claims_by_id: dict[str, dict]) -> dict:
    nxt = view.state(version["superseded_by"])
    return {
        "fact_state_id": version["fact_state_id"],
        "state_key": version["state_key"],
        "value": version["value"],
        "status": view.status_at(version),
        "valid_from": version["valid_from"].isoformat(),
        "valid_until": version["valid_until"].isoformat() if version["valid_until"] else None,
        "recorded_at": version["recorded_at"].isoformat(),
        "superseded_at": version["superseded_at"].isoformat() if version["superseded_at"] else None,
        "superseded_by": (
            {
                "value": nxt["value"] if nxt else None,
                "state_key": version["superseded_by"],
                "cite": _cite(version["closed_by_message_id"]),
            }
            if version["closed_by_message_id"]
            else None
        ),  # fmt: skip
        "conflicts_with": list(version["conflicts_with"] or []),
        "decided_by": version["decided_by"],
        "rationale": version["rationale"] or "",
        "concept": f"[Concept:{version['concept_id']}]" if version["concept_id"] else None,
        "evidence": [
            {"cite": _cite(c["message_id"]), "text": c["text"], "said_at": c["spoken_at"].isoformat()}
            for c in (claims_by_id.get(i) for i in version["claim_ids"] or [])
            if c is not None
        ],
    }


def _matches(text: str | None, wanted: str | None) -> bool:
    return wanted is None or (wanted.casefold() in (text or "").casefold())


def fact_history(
    reader: CorpusReader,
    subject: str | None = None,
    slot: str | None = None,
    *,
    as_of: datetime | None = None,
    believed_at: datetime | None = None,
) -> list[dict]:
    """Per (subject, slot key): its states in valid-time order as memory believes them (or believed them at
    `believed_at`), each with its status at `as_of` (default now), what replaced it and its evidence; the
    value current then; and the claims that are in no history (stale, rejected, abandoned branches) with
    why. `subject` / `slot` filter by a part of the subject's name or the slot key."""
    table = reader.facts()
    view = FactView(table, as_of, believed_at)
    claims_by_id = {c["claim_id"]: c for c in table.claims}
    groups: dict[tuple[str, str], dict] = {}
    for version in table.versions:
        if not believed(version, believed_at):
            continue
        if not (_matches(version["subject"], subject) or _matches(version["subject_label"], subject)):
            continue
        if slot is not None and not version["attribute"].startswith(slot):
            continue
        key = (version["subject"], version["attribute"])
        group = groups.setdefault(
            key, {"subject": version["subject_label"] or version["subject"], "subject_key": version["subject"],
                  "slot": version["attribute"], "states": [], "current": None, "not_in_history": []},
        )  # fmt: skip
        state = _state_view(view, version, claims_by_id)
        group["states"].append(state)
        if state["status"] == "current":
            group["current"] = state["value"]
    for c in table.claims:
        key = (c["subject"], c["attribute"])
        if key in groups and view.known(c) and view.version(c["claim_id"]) is None:
            note = view.note(c)
            if note.status != "ends":  # a negation that closed a state is that state's closing evidence
                groups[key]["not_in_history"].append(
                    {
                        "value": c["value"],
                        "status": note.status,
                        "reason": note.reason,
                        "cite": _cite(c["message_id"]),
                    }
                )
    out = sorted(groups.values(), key=lambda g: (g["subject"], g["slot"]))
    for g in out:
        g["states"].sort(key=lambda s: (s["valid_from"], s["state_key"]))
    return out
