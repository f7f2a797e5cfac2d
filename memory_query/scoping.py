"""Haystack middleware: the layer that removes every id outside the allowed corpus and sessions before
anything reaches an agent. The base query and tools know nothing of it (the seed's lesson: filtering mixed
into base utilities made agents see "Access Denied" and panic); an out-of-scope id looks exactly like an
unknown one."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from memory_query.catalog import RELATIONS, NodeCatalog
from memory_query.evidence import MemoryAnswer, render_context
from memory_query.reader import CorpusReader
from memory_query.retrieval import rank
from memory_query.settings import RetrievalSettings
from memory_query.tool_results import (
    EvidenceSubmission,
    ExploreNodeResult,
    FactsResult,
    LensPath,
    LensResult,
    NodeRef,
    RelationSummary,
    SmartSearchResult,
    SourceMessage,
)
from memory_query.tools import MemoryTools, ToolError

SCOPE_CHECK_LIMIT = 500  # neighbours checked against the scope per relation when counting


class ScopeError(ValueError):
    """A scope that cannot apply (another corpus)."""


@dataclass(frozen=True)
class Scope:
    corpus: str
    #: allowed conversations, by conversation id or by their source ref (e.g. LongMemEval session ids);
    #: None = the whole corpus
    sessions: frozenset[str] | None = None

    @classmethod
    def of(cls, corpus: str, sessions=None) -> Scope:
        return cls(corpus, frozenset(sessions) if sessions is not None else None)


class ScopeGuard:
    """Decides, for any id the read side can return, whether it is inside the scope."""

    def __init__(self, reader: CorpusReader, scope: Scope):
        if scope.corpus != reader.store.name:
            raise ScopeError(f"scope is for corpus {scope.corpus!r}, the reader serves {reader.store.name!r}")
        self.reader = reader
        self.scope = scope
        table = reader.messages()
        if scope.sessions is None:
            self.conversations = set(table.conv_ids)
        else:
            wanted = set(scope.sessions)
            self.conversations = {
                cid
                for cid, ref in zip(table.conv_ids, table.conv_refs, strict=True)
                if cid in wanted or ref in wanted
            }
        self._catalog = NodeCatalog(reader)

    def message(self, message_id: str) -> bool:
        table = self.reader.messages()
        i = table.index.get(message_id)
        return i is not None and table.conv_ids[table.conversation[i]] in self.conversations

    def node(self, node_type: str, node_id: str) -> bool:
        """Inside the scope: messages and conversations of allowed sessions; any other node only when some
        of its evidence (messages below it) is."""
        if node_type == "Message":
            return self.message(node_id)
        if node_type == "Conversation":
            return node_id in self.conversations
        if self.scope.sessions is None:
            return self._catalog.find(node_id, node_type) is not None
        below = {
            "Segment": ["Segment>Message"],
            "Concept": ["Concept>Message"],
            "Topic": ["Topic>Segment", "Segment>Message"],
            "AnchorEntity": ["AnchorEntity>Topic", "Topic>Segment", "Segment>Message"],
            "Domain": ["Domain>Topic", "Topic>Segment", "Segment>Message"],
            "FactState": ["FactState>Message"],
        }.get(node_type)
        if below is None:
            return False
        frontier = [node_id]
        for relation in below:
            frontier = [m for n in frontier for m, _ in self._catalog.neighbour_ids(relation, n)]
        return any(self.message(m) for m in frontier)

    def filter_answer(self, answer: MemoryAnswer, k: int, psychological_access: bool) -> MemoryAnswer:
        items = [i for i in answer.items if self.message(i.message_id)][:k]
        concepts = []
        for c in answer.concepts:
            kept = [m for m in c.evidence_message_ids if self.message(m)]
            if kept:
                concepts.append(replace(c, evidence_message_ids=kept))
        topics = [t for t in answer.topics if self.node("Topic", t.topic_id)]
        reflective = [r for r in answer.reflective if self.message(r.message_id)]
        for item in items:
            item.concept_ids = [c for c in item.concept_ids if any(h.concept_id == c for h in concepts)]
        out = replace(answer, items=items, concepts=concepts, topics=topics, reflective=reflective)
        out.context = render_context(out, include_reflective=psychological_access)
        return out


def scoped_rank(
    reader: CorpusReader,
    scope: Scope,
    question: str,
    k: int,
    *,
    as_of: datetime | None = None,
    roles: tuple[str, ...] | None = None,
    psychological_access: bool = False,
    settings: RetrievalSettings | None = None,
    believed_at: datetime | None = None,
) -> MemoryAnswer:
    """`rank` through the middleware: asks the base for more than k and keeps what is in scope."""
    guard = ScopeGuard(reader, scope)
    total = len(reader.messages())
    fetch = max(k * 4, 40)
    while True:
        answer = rank(
            reader,
            question,
            fetch,
            as_of=as_of,
            roles=roles,
            psychological_access=psychological_access,
            settings=settings,
            believed_at=believed_at,
        )
        kept = [i for i in answer.items if guard.message(i.message_id)]
        if len(kept) >= k or fetch >= total or len(answer.items) < fetch:
            return guard.filter_answer(answer, k, psychological_access)
        fetch = min(total, fetch * 4)


class ScopedTools:
    """The agent tools behind the middleware: ids outside the scope are refused as unknown on the way in
    and removed on the way out (filtered copies of the base tools' results, the same models)."""

    def __init__(self, tools: MemoryTools, scope: Scope):
        self.tools = tools
        self.guard = ScopeGuard(tools.reader, scope)

    def _require(self, node_id: str, node_type: str | None = None) -> None:
        found = self.tools.catalog.find(node_id, node_type)
        if found is None or not self.guard.node(found[0], node_id):
            raise ToolError(f"no node {node_id!r} in this memory")

    def _refs(self, refs: list[NodeRef]) -> list[NodeRef]:
        return [r for r in refs if self.guard.node(r.type, r.id)]

    def smart_search(
        self,
        query: str,
        k: int = 8,
        *,
        as_of: datetime | None = None,
        since: datetime | None = None,
        believed_at: datetime | None = None,
    ) -> SmartSearchResult:
        out = self.tools.smart_search(
            query, k=min(self.tools.limits.max_ids, k * 3), as_of=as_of, since=since, believed_at=believed_at
        )
        return out.model_copy(
            update={
                "results": [r for r in out.results if self.guard.message(r.id)][:k],
                "concepts": [c for c in out.concepts if self.guard.node("Concept", c.id)],
                "topics": [t for t in out.topics if self.guard.node("Topic", t.id)],
            }
        )

    def explore_node(self, node_id: str, node_type: str | None = None) -> ExploreNodeResult:
        self._require(node_id, node_type)
        out = self.tools.explore_node(node_id, node_type)
        catalog = self.tools.catalog
        relations = {}
        for relation, rel in out.relations.items():
            target = RELATIONS[relation][1]
            inside = {
                i
                for i, _ in catalog.neighbour_ids(relation, node_id)[:SCOPE_CHECK_LIMIT]
                if self.guard.node(target, i)
            }
            # counted inside the scope only
            relations[relation] = RelationSummary(
                count=len(inside), first=[r for r in rel.first if r.id in inside]
            )
        return out.model_copy(update={"relations": relations})

    def lens(self, node_id: str, paths: list[str] | None = None, max_ids: int | None = None) -> LensResult:
        self._require(node_id)
        out = self.tools.lens(node_id, paths, max_ids)
        kept = {}
        for path, result in out.paths.items():
            items = self._refs(result.items)
            if len(items) < len(result.items):  # some were outside: totals beyond the shown ones are unknown
                result = LensPath(items=items, total=len(items))
            kept[path] = result
        return out.model_copy(update={"paths": kept})

    def read_source_message(self, message_id: str, context: int = 1) -> SourceMessage:
        self._require(message_id, "Message")
        out = self.tools.read_source_message(message_id, context)
        return out.model_copy(update={"before": self._refs(out.before), "after": self._refs(out.after)})

    def facts(self, subject=None, slot=None, as_of=None, believed_at=None) -> FactsResult:
        """Fact histories with the evidence outside the scope removed, and the states and histories left
        with no evidence inside it."""
        out = self.tools.facts(subject, slot, as_of, believed_at)

        def inside(cite: str | None) -> bool:
            return cite is not None and self.guard.message(cite[len("[Source:") : -1])

        kept = []
        for g in out.facts:
            states = []
            for s in g.states:
                evidence = [e for e in s.evidence if inside(e.cite)]
                if evidence:
                    by = s.superseded_by
                    if by and not inside(by.cite):
                        by = by.model_copy(update={"cite": None})
                    states.append(s.model_copy(update={"evidence": evidence, "superseded_by": by}))
            if states:
                others = [c for c in g.not_in_history if inside(c.cite)]
                current = next((s.value for s in states if s.status == "current"), None)
                kept.append(
                    g.model_copy(update={"states": states, "not_in_history": others, "current": current})
                )
        return FactsResult(facts=kept, total=len(kept))

    def submit_evidence(self, message_ids: list[str], claim: str) -> EvidenceSubmission:
        inside = [m for m in message_ids if self.guard.message(m)]
        out = self.tools.submit_evidence(inside, claim)
        return out.model_copy(update={"rejected": out.rejected + [m for m in message_ids if m not in inside]})
