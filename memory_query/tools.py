"""Agent tools with bounded outputs: smart_search, explore_node, lens, read_source_message, facts,
submit_evidence (their names and result models: `memory_query.tool_registry`). Hard caps everywhere: past a
cap a tool returns a count and a summary, never 50+ ids.

These are the base tools: they know nothing of session scoping (`memory_query.scoping` wraps them).
Every call is appended to the corpus's agent trace (`<corpus>/traces/agent_trace.jsonl`).
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from datetime import datetime

from memory_core.lexical import STOP_WORDS, tokenize
from memory_core.store.db import utcnow
from memory_query import tool_registry as registry
from memory_query.catalog import NODE_TYPES, RELATIONS, NodeCatalog, relations_from
from memory_query.catalog import NodeRef as CatalogRef
from memory_query.fact_history import fact_history
from memory_query.reader import CorpusReader
from memory_query.retrieval import rank
from memory_query.settings import RetrievalSettings
from memory_query.tool_results import (
    ConceptRef,
    EvidenceSubmission,
    ExploreNodeResult,
    FactHistory,
    FactsResult,
    LensPath,
    LensResult,
    NodeRef,
    RelationSummary,
    SearchFact,
    SearchHit,
    SmartSearchResult,
    SourceMessage,
    ToolResult,
    TopicRef,
)

MAX_IDS = 20  # hard cap on ids any tool returns per list
MAX_TEXT = 4000  # read_source_message: characters of text returned
SNIPPET = 200


class ToolError(ValueError):
    """A tool call the agent must change (unknown id, relation, bad argument); the message says how."""


@dataclass
class ToolLimits:
    max_ids: int = MAX_IDS
    max_text: int = MAX_TEXT


def _snip(text: str, size: int = SNIPPET) -> str:
    text = " ".join(text.split())
    return text if len(text) <= size else text[: size - 1] + "…"


def node_ref(ref: CatalogRef) -> NodeRef:
    """The catalog's node reference as a tool returns it."""
    weight = round(ref.weight, 3) if ref.weight is not None else None
    return NodeRef(type=ref.type, id=ref.id, label=ref.label, weight=weight)


def query_clauses(query: str) -> list[str]:
    """The clauses of a multi-part query (split on punctuation and conjunctions)."""
    parts = [p.strip() for p in re.split(r"[,;?!.]|\band\b|\bor\b|\bbut\b", query) if p.strip()]
    return parts if len(parts) > 1 else []


def query_components(query: str) -> list[str]:
    """The parts of a query to try one by one (the OR fallback): its clauses, then its content words."""
    words = [w for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9'\-]+", query) if w.lower() not in STOP_WORDS]
    out: list[str] = []
    for item in query_clauses(query) + words:
        if item.lower() != query.strip().lower() and item not in out:
            out.append(item)
    return out[:8]


def _grounded(query: str, items) -> int:
    """Results whose own text holds at least one of the query's words."""
    wanted = set(tokenize(query))
    return sum(1 for i in items if wanted & set(tokenize(i.text)))


class MemoryTools:
    def __init__(
        self,
        reader: CorpusReader,
        limits: ToolLimits | None = None,
        settings: RetrievalSettings | None = None,
        trace: bool = True,
    ):
        self.reader = reader
        self.catalog = NodeCatalog(reader)
        self.limits = limits or ToolLimits()
        self.settings = settings
        self.trace_enabled = trace
        self.submitted: list[EvidenceSubmission] = []
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------ trace
    def _trace(self, tool: registry.ToolSpec, args: dict, result: ToolResult, started: float):
        if self.trace_enabled:
            entry = {
                "at": utcnow().isoformat(),
                "tool": tool.name,
                "args": args,
                "ms": round((time.perf_counter() - started) * 1000, 2),
                "result_ids": result.returned_ids()[: self.limits.max_ids],
            }
            path = self.reader.store.path("traces", "agent_trace.jsonl")
            with self._lock, path.open("a", encoding="utf-8") as fp:
                fp.write(json.dumps(entry, default=str) + "\n")
        return result

    def _cap(self, refs: list[CatalogRef], total: int) -> LensPath:
        shown = refs[: self.limits.max_ids]
        more = None
        if total > len(shown):
            more = f"{total - len(shown)} more not shown (cap {self.limits.max_ids}); narrow the query or follow a listed node"
        return LensPath(items=[node_ref(r) for r in shown], total=total, more=more)

    # ------------------------------------------------------------------------------------ tools
    def smart_search(
        self,
        query: str,
        k: int = 8,
        *,
        as_of: datetime | None = None,
        since: datetime | None = None,
        believed_at: datetime | None = None,
    ) -> SmartSearchResult:
        """Evidence messages for a query; when the whole query finds little, each component is searched
        and the results merged (OR fallback). `as_of` / `since` bound the messages' time (memory as it
        stood then; a time range to search inside); `believed_at` reads the facts as memory believed
        them then (system time)."""
        started = time.perf_counter()
        if not query.strip():
            raise ToolError("query is empty")
        k = max(1, min(int(k), self.limits.max_ids))
        window = {"as_of": as_of, "since": since, "believed_at": believed_at}
        answer = rank(self.reader, query, k, settings=self.settings, **window)
        results = {i.message_id: (i, None) for i in answer.items}
        # OR fallback: a multi-part query, or one whose words matched little, is also searched part by part
        # and each part's best hits are merged in, so one dominant term cannot hide the others
        parts = query_clauses(query) or (
            query_components(query) if _grounded(query, answer.items) < min(3, k) else []
        )
        fallback = parts[:4]
        for part in fallback:
            for item in rank(self.reader, part, 3, settings=self.settings, **window).items:
                best = results.get(item.message_id)
                if best is None or best[0].score < item.score:
                    results[item.message_id] = (item, part)
        ranked = sorted(results.values(), key=lambda x: -x[0].score)[:k]
        out = SmartSearchResult(
            query=query,
            results=[
                SearchHit(
                    id=i.message_id,
                    cite=i.citation,
                    author=i.author,
                    time=i.created_at,
                    conversation_id=i.conversation_id,
                    snippet=_snip(i.text),
                    score=round(i.score, 4),
                    paths=i.paths,
                    # the facts it states that the query asks about, with their status in the view read
                    facts=[
                        SearchFact(attribute=f["attribute"], value=f["value"], status=f["status"])
                        for f in i.facts
                        if f.get("asked")
                    ],
                    matched_component=part,
                )
                for i, part in ranked
            ],
            concepts=[
                ConceptRef(id=c.concept_id, cite=c.citation, title=c.title) for c in answer.concepts[:5]
            ],
            topics=[TopicRef(id=t.topic_id, label=t.label) for t in answer.topics[:3]],
            fallback_components=fallback,
        )
        args = {"query": query, "k": k, **{n: v.isoformat() for n, v in window.items() if v is not None}}
        return self._trace(registry.SMART_SEARCH, args, out, started)

    def explore_node(self, node_id: str, node_type: str | None = None) -> ExploreNodeResult:
        """A node of any type (Domain, AnchorEntity, Topic, Concept, Segment, Message, Conversation): its
        summary, and per relation the neighbour count with the first few neighbours."""
        started = time.perf_counter()
        found = self._find(node_id, node_type)
        ntype, row = found
        relations = {}
        for relation in relations_from(ntype):
            ids = self.catalog.neighbour_ids(relation, node_id)
            target = RELATIONS[relation][1]
            refs = [r for r in (self.catalog.ref(target, i, w) for i, w in ids[:5]) if r]
            relations[relation] = RelationSummary(count=len(ids), first=[node_ref(r) for r in refs])
        out = ExploreNodeResult(
            id=node_id, type=ntype, summary=self.catalog.label(ntype, row), relations=relations
        )
        return self._trace(registry.EXPLORE_NODE, {"node_id": node_id, "node_type": node_type}, out, started)

    def lens(self, node_id: str, paths: list[str] | None = None, max_ids: int | None = None) -> LensResult:
        """Follow one or several relation paths from a node (e.g. "Topic>Concept>Message"); each path returns
        at most `max_ids` ids (hard cap) and the total reached."""
        started = time.perf_counter()
        ntype, _row = self._find(node_id, None)
        cap = max(1, min(int(max_ids or self.limits.max_ids), self.limits.max_ids))
        if not paths:
            paths = [r for r in relations_from(ntype) if not r.endswith(("NEXT", "PREVIOUS"))]
        result = {}
        for path in paths:
            steps = self._path_steps(ntype, path)
            frontier: list[tuple[str, float | None]] = [(node_id, None)]
            for relation in steps:
                reached: dict[str, float | None] = {}
                for nid, _ in frontier[: cap * 5]:  # bounded fan-out per step
                    for mid, weight in self.catalog.neighbour_ids(relation, nid):
                        reached.setdefault(mid, weight)
                frontier = list(reached.items())
            target = RELATIONS[steps[-1]][1]
            refs = [r for r in (self.catalog.ref(target, i, w) for i, w in frontier[:cap]) if r]
            result[path] = self._cap(refs, len(frontier))
        out = LensResult(id=node_id, type=ntype, paths=result)
        return self._trace(registry.LENS, {"node_id": node_id, "paths": paths, "max_ids": cap}, out, started)

    def read_source_message(self, message_id: str, context: int = 1) -> SourceMessage:
        """The original text of a message (up to 4,000 chars) with its provenance, and the ids and snippets
        of up to `context` messages before and after it."""
        started = time.perf_counter()
        found = self.catalog.find(message_id, "Message")
        if found is None:
            raise ToolError(f"no message {message_id!r} in this memory")
        row = found[1]
        context = max(0, min(int(context), 3))
        before, after = [], []
        cur = message_id
        for _ in range(context):
            prev = self.catalog.neighbour_ids("Message>PREVIOUS", cur)
            if not prev:
                break
            cur = prev[0][0]
            before.insert(0, node_ref(self.catalog.ref("Message", cur)))
        cur = message_id
        for _ in range(context):
            nxt = self.catalog.neighbour_ids("Message>NEXT", cur)
            if not nxt:
                break
            cur = nxt[0][0]
            after.append(node_ref(self.catalog.ref("Message", cur)))
        text = row["text"]
        conversation = self.catalog.find(row["conversation_id"], "Conversation")
        out = SourceMessage(
            id=message_id,
            cite=f"[Source:{message_id}]",
            author=row["author"],
            role=row["role"],
            time=row["created_at"],
            time_derived=bool(row["time_derived"]),
            conversation_id=row["conversation_id"],
            conversation_ref=conversation[1]["source_ref"] if conversation else None,
            source_ref=row["source_ref"],
            text=text[: self.limits.max_text],
            truncated=len(text) > self.limits.max_text,
            chars=len(text),
            before=before,
            after=after,
        )
        args = {"message_id": message_id, "context": context}
        return self._trace(registry.READ_SOURCE_MESSAGE, args, out, started)

    def facts(
        self,
        subject: str | None = None,
        slot: str | None = None,
        as_of: datetime | None = None,
        believed_at: datetime | None = None,
    ) -> FactsResult:
        """Fact histories per (subject, slot): the current value, the states it replaced with their valid
        times and what replaced them, each cited; `as_of` = valid-time travel, `believed_at` = what memory
        believed then. At most `max_ids` histories, each with at most `max_ids` states."""
        started = time.perf_counter()
        groups = fact_history(self.reader, subject, slot, as_of=as_of, believed_at=believed_at)
        cap = self.limits.max_ids
        shown = [
            FactHistory.model_validate(
                {**g, "states": g["states"][-cap:], "not_in_history": g["not_in_history"][:cap]}
            )
            for g in groups[:cap]
        ]
        more = None
        if len(groups) > cap:
            more = f"{len(groups) - cap} more histories not shown (cap {cap}); name a subject or slot"
        out = FactsResult(facts=shown, total=len(groups), more=more)
        args = {"subject": subject, "slot": slot, "as_of": as_of, "believed_at": believed_at}
        return self._trace(registry.FACTS, args, out, started)

    def submit_evidence(self, message_ids: list[str], claim: str) -> EvidenceSubmission:
        """The Scout's exit: the messages that support a claim. Ids are checked; unknown ones are rejected."""
        started = time.perf_counter()
        if not claim.strip():
            raise ToolError("claim is empty: say what the evidence supports")
        ids = list(dict.fromkeys(message_ids))[: self.limits.max_ids]
        accepted = [m for m in ids if self.catalog.find(m, "Message") is not None]
        rejected = [m for m in ids if m not in accepted]
        submission = EvidenceSubmission(claim=claim, accepted=accepted, rejected=rejected)
        self.submitted.append(submission)
        args = {"message_ids": ids, "claim": claim}
        return self._trace(registry.SUBMIT_EVIDENCE, args, submission, started)

    # ------------------------------------------------------------------------------------ helpers
    def _find(self, node_id: str, node_type: str | None) -> tuple[str, dict]:
        if node_type is not None and node_type not in NODE_TYPES:
            raise ToolError(f"unknown node type {node_type!r}; one of {', '.join(NODE_TYPES)}")
        found = self.catalog.find(node_id, node_type)
        if found is None:
            raise ToolError(f"no node {node_id!r} in this memory")
        return found

    @staticmethod
    def _path_steps(start: str, path: str) -> list[str]:
        names = [p.strip() for p in path.split(">") if p.strip()]
        if names and names[0] == start:
            names = names[1:]
        steps, current = [], start
        for name in names:
            relation = f"{current}>{name}"
            if relation not in RELATIONS:
                options = ", ".join(r.split(">")[1] for r in relations_from(current))
                raise ToolError(
                    f"cannot go from {current} to {name}; from {current} you can go to: {options}"
                )
            steps.append(relation)
            current = RELATIONS[relation][1]
        if not steps:
            raise ToolError(f"path {path!r} has no step from {start}")
        return steps
