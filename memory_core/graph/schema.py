"""The graph ontology (docs/architecture.md §3, the graph): the fixed whitelist of node labels, edge types and properties.

Every label, edge type and property name that reaches a Cypher query comes from here, never from data, so
queries can name them while every value stays a parameter. Property types are the common subset of
LadybugDB and Neo4j: STRING, INT64, DOUBLE, BOOLEAN, TIMESTAMP (naive UTC). Lists and maps (aliases,
keywords, cited ids) are stored as JSON text so both backends hold the same values.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

PropType = Literal["STRING", "INT64", "DOUBLE", "BOOLEAN", "TIMESTAMP"]
Direction = Literal["out", "in", "both"]
_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Prop:
    name: str
    type: PropType
    nullable: bool = False


@dataclass(frozen=True)
class NodeType:
    label: str
    props: tuple[Prop, ...]
    #: reflective data (docs/architecture.md §8): exported only on request, so it can be gated and purged on its own
    reflective: bool = False

    def prop(self, name: str) -> Prop:
        return _find(self.props, name, self.label)


@dataclass(frozen=True)
class EdgeType:
    type: str
    endpoints: tuple[tuple[str, str], ...]  # allowed (source label, target label) pairs
    props: tuple[Prop, ...] = ()
    #: property telling parallel edges between the same two nodes apart (EVIDENCE_FOR: one per mention)
    key: str | None = None

    def prop(self, name: str) -> Prop:
        return _find(self.props, name, self.type)


def _find(props: tuple[Prop, ...], name: str, owner: str) -> Prop:
    for p in props:
        if p.name == name:
            return p
    raise KeyError(f"{owner} has no property {name!r}")


# tiny constructors, read as type tags in the tables below
def S(name: str, nullable: bool = False) -> Prop:
    return Prop(name, "STRING", nullable)


def I(name: str, nullable: bool = False) -> Prop:  # noqa: E743
    return Prop(name, "INT64", nullable)


def D(name: str, nullable: bool = False) -> Prop:
    return Prop(name, "DOUBLE", nullable)


def T(name: str, nullable: bool = False) -> Prop:
    return Prop(name, "TIMESTAMP", nullable)


def B(name: str) -> Prop:
    return Prop(name, "BOOLEAN")


NODE_TYPES: dict[str, NodeType] = {
    n.label: n
    for n in (
        NodeType(
            "Conversation",
            (S("title"), T("created_at"), S("source_format"), S("source_ref"), I("message_count")),
        ),
        NodeType(
            "Message",
            (
                S("conversation_id"),
                S("role"),
                S("author"),
                S("text"),
                T("created_at"),
                I("position"),
                S("source_ref"),
                S("parent_id", nullable=True),
            ),
        ),
        NodeType(
            "Segment",
            (
                S("conversation_id"),
                I("position"),
                S("preview"),  # the first characters only: the text lives in the source messages
                I("start_char"),
                I("end_char"),
                I("token_estimate"),
                I("message_count"),
                T("created_at"),
            ),
        ),
        NodeType(
            "Concept",
            (
                S("title"),
                S("type"),
                S("description"),
                S("state"),
                S("trust"),
                D("confidence"),
                S("aliases"),  # JSON list
                I("support_count"),
                I("revision_count"),
                T("first_seen"),
                T("last_seen"),
                T("recorded_at"),
                S("merged_into", nullable=True),
            ),
        ),
        NodeType(
            "Topic",
            (
                S("label"),
                S("profile"),
                S("keywords"),  # JSON list
                I("size"),
                D("silhouette", nullable=True),
                D("label_centroid_distance", nullable=True),
                T("first_seen", nullable=True),
                T("last_seen", nullable=True),
            ),
        ),
        NodeType("AnchorEntity", (S("label"), D("score"), S("domain_id"), S("concept_id", nullable=True))),
        NodeType("Domain", (S("label"), S("profile"), I("size"))),
        NodeType(
            "FactState",
            (
                S("concept_id"),
                S("attribute"),  # the slot key
                S("value"),
                T("valid_from"),
                T("valid_until", nullable=True),
                T("recorded_at"),
                T("superseded_at", nullable=True),
                S("evidence_message_id"),
                S("state_key", nullable=True),  # the state across its versions
                S("subject"),
                S("slot"),
                S("status"),  # current | superseded | ended | disputed
                S("superseded_by", nullable=True),  # state_key of the state that replaced it
                S("closed_by_message_id", nullable=True),
                S("claim_ids"),  # JSON list
                S("conflicts_with"),  # JSON list of state_keys
            ),
        ),
        NodeType(
            "UserReaction",
            (
                S("state"),
                S("state_raw"),
                D("intensity"),
                S("valence"),
                S("epistemic_status"),
                S("evidence_text"),
                S("message_id"),
                S("segment_id"),
                S("conversation_id"),
                S("topic_id", nullable=True),
                T("occurred_at"),
            ),
            reflective=True,
        ),
        NodeType(
            "GardenerAction",
            (
                S("action"),
                S("status"),
                B("dry_run"),
                S("rationale"),
                S("concept_ids"),  # JSON list
                S("cited_message_ids"),  # JSON list
                S("run_id"),
                T("recorded_at"),
                S("proposal_id", nullable=True),
            ),
        ),
    )
}

#: ConceptRelation.relation -> edge type (docs/architecture.md §3, the typed concept relations)
CONCEPT_RELATION_TYPES: dict[str, str] = {
    "causes": "CAUSES",
    "conflicts_with": "CONFLICTS_WITH",
    "supports": "SUPPORTS",
    "instance_of": "INSTANCE_OF",
    "enables": "ENABLES",
    "about": "ABOUT",  # a fact about its subject (a person, a named thing, a possession, a theme)
}

EDGE_TYPES: dict[str, EdgeType] = {
    e.type: e
    for e in (
        EdgeType("HAS_MESSAGE", (("Conversation", "Message"),), (I("position"),)),
        EdgeType("NEXT", (("Message", "Message"),)),
        EdgeType("PREVIOUS", (("Message", "Message"),)),
        # ordinal: the message's place in the segment; start/end: the message chars the segment holds
        EdgeType("CONTAINS_MESSAGE", (("Segment", "Message"),), (I("ordinal"), I("start"), I("end"))),
        EdgeType("MENTIONS", (("Segment", "Concept"),), (I("mentions"), D("confidence"))),
        EdgeType(
            "EVIDENCE_FOR",
            (("Message", "Concept"),),
            (
                S("mention_id"),
                S("segment_id"),
                I("span_start"),
                I("span_end"),
                S("text"),
                D("confidence"),
                S("status"),
            ),
            key="mention_id",
        ),
        EdgeType("RELATED_TO", (("Topic", "Concept"),), (D("weight"), D("cosine"))),
        *(
            EdgeType(t, (("Concept", "Concept"),), (D("confidence"),))
            for t in CONCEPT_RELATION_TYPES.values()
        ),
        # Topic -> Domain only for a topic with a domain but no anchor entity, so every topic hangs in the tree
        EdgeType(
            "BELONGS_TO",
            (
                ("Segment", "Topic"),
                ("Topic", "AnchorEntity"),
                ("AnchorEntity", "Domain"),
                ("Topic", "Domain"),
            ),
            (D("probability", nullable=True),),
        ),
        EdgeType(
            "HAS_STATE",
            (("Concept", "FactState"),),
            (
                T("valid_from"),
                T("valid_until", nullable=True),
                T("recorded_at"),
                T("superseded_at", nullable=True),
                S("status"),
            ),
        ),
        EdgeType("DURING", (("UserReaction", "Topic"),)),
        # not among docs/architecture.md §3's edges: links an audited gardener action to the concepts it touched
        EdgeType("ACTED_ON", (("GardenerAction", "Concept"),)),
    )
}

REFLECTIVE_LABELS = frozenset(n.label for n in NODE_TYPES.values() if n.reflective)
REFLECTIVE_EDGE_TYPES = frozenset(
    e.type
    for e in EDGE_TYPES.values()
    if any(s in REFLECTIVE_LABELS or d in REFLECTIVE_LABELS for s, d in e.endpoints)
)

#: Domain → AnchorEntity → Topic → Concept → Segment → Message: how to step one level down from a label
#: (edge type, direction from the parent, child labels). Upwards is the same step reversed.
HIERARCHY_DOWN: dict[str, tuple[str, Direction, tuple[str, ...]]] = {
    "Domain": ("BELONGS_TO", "in", ("AnchorEntity", "Topic")),
    "AnchorEntity": ("BELONGS_TO", "in", ("Topic",)),
    "Topic": ("RELATED_TO", "out", ("Concept",)),
    "Concept": ("MENTIONS", "in", ("Segment",)),
    "Segment": ("CONTAINS_MESSAGE", "out", ("Message",)),
}
HIERARCHY_UP: dict[str, tuple[str, Direction, tuple[str, ...]]] = {
    "AnchorEntity": ("BELONGS_TO", "out", ("Domain",)),
    "Topic": ("BELONGS_TO", "out", ("AnchorEntity", "Domain")),
    "Concept": ("RELATED_TO", "in", ("Topic",)),
    "Segment": ("MENTIONS", "out", ("Concept",)),
    "Message": ("CONTAINS_MESSAGE", "in", ("Segment",)),
}


# ------------------------------------------------------------------------------------------ validation
def node_type(label: str) -> NodeType:
    try:
        return NODE_TYPES[label]
    except KeyError:
        raise ValueError(f"unknown node label {label!r} (allowed: {sorted(NODE_TYPES)})") from None


def edge_type(type_: str) -> EdgeType:
    try:
        return EDGE_TYPES[type_]
    except KeyError:
        raise ValueError(f"unknown edge type {type_!r} (allowed: {sorted(EDGE_TYPES)})") from None


def check_endpoints(type_: str, src_label: str, dst_label: str) -> EdgeType:
    et = edge_type(type_)
    if (src_label, dst_label) not in et.endpoints:
        raise ValueError(f"{type_} does not connect {src_label} -> {dst_label} (allowed: {et.endpoints})")
    return et


def edge_types_or_all(types: list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    if not types:
        return tuple(EDGE_TYPES)
    return tuple(edge_type(t).type for t in types)


def ident(name: str) -> str:
    """A whitelisted identifier, checked once more before it is written into a query."""
    if not _IDENT.match(name):
        raise ValueError(f"not an identifier: {name!r}")
    return name


def q(name: str) -> str:
    """A whitelisted identifier, back-quoted for Cypher (some property names, e.g. `label`, are keywords)."""
    return f"`{ident(name)}`"


def coerce(value: object, prop: Prop, owner: str) -> object:
    """The value in the property's type (None stays None only where the property is nullable)."""
    if value is None:
        if prop.nullable:
            return None
        if prop.type == "STRING":
            return ""
        raise ValueError(f"{owner}.{prop.name} must not be null")
    if prop.type == "STRING":
        if value == "" and prop.nullable:
            return None  # one representation of "absent" on both backends
        if isinstance(value, (list, dict)):
            return json.dumps(value, ensure_ascii=False, sort_keys=True)
        return str(value)
    if prop.type == "INT64":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value:
            raise ValueError(f"{owner}.{prop.name} must be an integer, got {value!r}")
        return int(value)
    if prop.type == "DOUBLE":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{owner}.{prop.name} must be a number, got {value!r}")
        return float(value)
    if prop.type == "BOOLEAN":
        if not isinstance(value, bool):
            raise ValueError(f"{owner}.{prop.name} must be a boolean, got {value!r}")
        return value
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if not isinstance(value, datetime):
        raise ValueError(f"{owner}.{prop.name} must be a timestamp, got {value!r}")
    if value.tzinfo is not None:
        raise ValueError(f"{owner}.{prop.name} must be naive UTC, got {value!r}")
    return value


def clean_props(values: dict, props: tuple[Prop, ...], owner: str) -> dict:
    """Props of one node/edge row in schema order, typed; unknown names are an error (the whitelist)."""
    names = {p.name for p in props}
    extra = set(values) - names
    if extra:
        raise ValueError(f"{owner}: properties {sorted(extra)} are not in the graph schema")
    return {p.name: coerce(values.get(p.name), p, owner) for p in props}


def read_props(values: dict, props: tuple[Prop, ...]) -> dict:
    """Props as read back from a backend: schema names only; a STRING that a backend stored as NULL
    because it was empty (LadybugDB's CSV reader does that) comes back as ""."""
    out = {}
    for p in props:
        v = values.get(p.name)
        if v is None and p.type == "STRING" and not p.nullable:
            v = ""
        out[p.name] = v
    return out
