"""ChatGPT export (`conversations.json`): a list of conversations, each a `mapping` tree of nodes.

Every branch is kept. Positions put the active branch (root → `current_node`) first, then the other
branches in depth-first order; each message records whether it is on the active branch. Nodes without a
message (the client root) are structure, not records. Hidden or empty system nodes are records of the
export's structure, not conversation: counted apart (`structural`), neither stored nor dead letters.
A node whose fields have the wrong type (a `parent` that is not a node id, content parts that are neither
text nor attachments, a `message.id` another node already has) is dead-lettered with the field named.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from memory_core.ingest.census import chatgpt_records
from memory_core.ingest.jsonstream import iter_json_array
from memory_core.ingest.records import (
    ROLES,
    DeadLetter,
    ParsedConversation,
    ParsedMessage,
    check_text,
    excerpt,
    fill_missing_times,
    keep_timed,
    label,
    parse_timestamp,
    record_time,
    scalar_ref,
    shielded,
)

_TEXT_KEYS = ("text", "result", "content")


def _part_text(part: object) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, dict):
        for key in _TEXT_KEYS:
            if isinstance(part.get(key), str):
                return part[key]
    return None


def content_text(content: object) -> tuple[str, list[str], str | None]:
    """The text of a message's content, the kinds of non-text parts (images, files, ...), and what is wrong
    with the content when a part is neither text nor an attachment (None when nothing is)."""
    if isinstance(content, str):
        return content, [], None
    if not isinstance(content, dict):
        return "", [], None
    ctype = content.get("content_type", "text")
    attachments: list[str] = []
    pieces: list[str] = []
    if isinstance(content.get("parts"), list):
        for n, part in enumerate(content["parts"]):
            text = _part_text(part)
            if text is not None:
                if text:
                    pieces.append(text)
            elif isinstance(part, dict):
                kind = part.get("content_type") or part.get("asset_pointer") or "attachment"
                attachments.append(kind if isinstance(kind, str) else "attachment")
            else:
                return "", attachments, f"content part {n} is {label(part)}, neither text nor an attachment"
    elif ctype == "tether_quote":
        pieces = [p for p in (content.get("title"), content.get("text")) if isinstance(p, str) and p]
    elif ctype == "user_editable_context":
        pieces = [
            p
            for p in (content.get("user_profile"), content.get("user_instructions"))
            if isinstance(p, str) and p
        ]
    elif ctype == "thoughts" and isinstance(content.get("thoughts"), list):
        pieces = [
            t["content"]
            for t in content["thoughts"]
            if isinstance(t, dict) and isinstance(t.get("content"), str) and t["content"]
        ]
    else:
        for key in _TEXT_KEYS:
            if isinstance(content.get(key), str) and content[key]:
                pieces.append(content[key])
                break
    return "\n".join(pieces), attachments, None


def _is_hidden(message: dict) -> bool:
    meta = message.get("metadata") or {}
    return bool(isinstance(meta, dict) and meta.get("is_visually_hidden_from_conversation"))


def _parents(mapping: dict) -> dict[str, str | None]:
    """Each node's parent id (None for a root, or when `parent` is not a node id: such nodes are
    dead-lettered)."""
    return {
        nid: (node.get("parent") if isinstance(node, dict) and isinstance(node.get("parent"), str) else None)
        for nid, node in mapping.items()
    }


def _order_nodes(
    mapping: dict, parent_of: dict[str, str | None], current: object
) -> tuple[list[str], set[str], set[str]]:
    """(node ids in position order, active-branch ids, ids caught in a parent cycle)."""
    # nodes whose parent chain loops never reach a root
    in_cycle: set[str] = set()
    reaches_root: set[str] = set()
    for nid in mapping:
        path, seen, node = [], set(), nid
        while node is not None and node in mapping and node not in reaches_root:
            if node in seen or node in in_cycle:
                in_cycle.update(path)
                break
            seen.add(node)
            path.append(node)
            node = parent_of.get(node)
        else:
            reaches_root.update(path)
    children: dict[str | None, list[str]] = {}
    for nid in mapping:
        if nid in in_cycle:
            continue
        parent = parent_of.get(nid)
        key = parent if parent in mapping and parent not in in_cycle else None
        children.setdefault(key, []).append(nid)
    # children in the order the source lists them, when it does
    for nid, kids in children.items():
        if len(kids) < 2:
            continue
        node = mapping.get(nid) if nid is not None else None
        listed = node.get("children") if isinstance(node, dict) else None
        if isinstance(listed, list):
            rank = {c: i for i, c in enumerate(listed) if isinstance(c, str)}
            kids.sort(key=lambda c: rank.get(c, len(rank)))
    active: list[str] = []
    node = current if isinstance(current, str) else None
    guard = set()
    while node is not None and node in mapping and node not in in_cycle and node not in guard:
        guard.add(node)
        active.append(node)
        node = parent_of.get(node)
    active.reverse()
    if not active:  # no usable current_node: follow first children from the first root
        node = (children.get(None) or [None])[0]
        while node is not None:
            active.append(node)
            node = (children.get(node) or [None])[0]
    order = list(active)
    placed = set(active)
    stack = list(reversed(children.get(None, [])))
    while stack:
        nid = stack.pop()
        if nid not in placed:
            order.append(nid)
            placed.add(nid)
        stack.extend(reversed(children.get(nid, [])))
    return order, set(active), in_cycle


def parse_conversation(raw: object, index: int, max_chars: int) -> ParsedConversation | DeadLetter:
    """One conversation element. Two nodes with the same explicit `message.id` are one record twice: the
    later is a dead letter (a UUID id repeated across conversations is caught by the loader)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("mapping"), dict):
        return DeadLetter(
            f"conversation[{index}]", "bad_shape", "conversation without a 'mapping' object", excerpt(raw)
        )
    seen_ids: set[str] = set()
    mapping: dict = raw["mapping"]
    conv_ref = conversation_ref(raw) or f"conversation[{index}]"
    try:
        conv_time = parse_timestamp(raw.get("create_time"))
    except ValueError:
        conv_time = None
    title = raw.get("title") if isinstance(raw.get("title"), str) else ""
    conv = ParsedConversation(
        source_ref=conv_ref,
        title=title or "",
        created_at=conv_time,
        messages=[],
        attributes={"update_time": raw.get("update_time"), "current_node": raw.get("current_node")},
        source_id=conv_ref,
    )
    parent_of = _parents(mapping)
    order, active, in_cycle = _order_nodes(mapping, parent_of, raw.get("current_node"))
    stored_refs: set[str] = set()
    nearest_stored: dict[str, str | None] = {}

    def stored_ancestor(nid: str | None) -> str | None:
        chain = []
        node = nid
        while node is not None and node in mapping and node not in stored_refs and node not in nearest_stored:
            chain.append(node)
            node = parent_of.get(node)
            if node in in_cycle:
                node = None
        result = node if node in stored_refs else nearest_stored.get(node) if node is not None else None
        for c in chain:
            nearest_stored[c] = result
        return result

    for nid in list(in_cycle):
        node = mapping[nid]
        if isinstance(node, dict) and node.get("message") is not None:
            conv.records_seen += 1
            conv.dead_letters.append(
                DeadLetter(f"{conv_ref}/{nid}", "cycle", "node's parent chain forms a cycle", excerpt(node))
            )
    for nid in order:
        node = mapping[nid]
        if not isinstance(node, dict):
            conv.records_seen += 1
            conv.dead_letters.append(
                DeadLetter(f"{conv_ref}/{nid}", "bad_shape", "mapping node is not an object", excerpt(node))
            )
            continue
        if node.get("message") is None:
            continue  # structural root, not a record
        conv.records_seen += 1
        message = _node_message(conv, nid, node, seen_ids, max_chars)
        if message is None:
            continue
        parent = parent_of[nid]
        message.parent_ref = stored_ancestor(parent) if parent is not None else None
        message.attributes["on_active_branch"] = nid in active
        if parent is not None and parent not in mapping:
            message.attributes["missing_parent"] = parent
        conv.messages.append(message)
        stored_refs.add(nid)
    timed = fill_missing_times(conv.messages, conv_time)
    keep_timed(conv, timed, "no create_time in the message or its conversation")
    return conv


def conversation_ref(raw: dict) -> str | None:
    return scalar_ref(raw.get("conversation_id") or raw.get("id"))


def _node_message(
    conv: ParsedConversation, nid: str, node: dict, seen_ids: set[str], max_chars: int
) -> ParsedMessage | None:
    """The message of a node that holds one, or None when it is dead-lettered or structural."""
    ref = f"{conv.source_ref}/{nid}"
    message = node["message"]
    dead = conv.dead_letters.append
    if not isinstance(message, dict):
        dead(DeadLetter(ref, "bad_shape", "message is not an object", excerpt(message)))
        return None
    if node.get("parent") is not None and not isinstance(node.get("parent"), str):
        dead(
            DeadLetter(
                ref, "bad_shape", f"parent is {label(node['parent'])}, not a node id", excerpt(message)
            )
        )
        return None
    author = message.get("author") if isinstance(message.get("author"), dict) else {}
    role = author.get("role")
    if role not in ROLES:
        dead(DeadLetter(ref, "unknown_role", f"unknown role {label(role)}", excerpt(message)))
        return None
    text, attachments, problem = content_text(message.get("content"))
    if problem:
        dead(DeadLetter(ref, "bad_shape", problem, excerpt(message)))
        return None
    if role == "system" and (_is_hidden(message) or not text.strip()):
        conv.structural.append(ref)  # the export's scaffolding, not conversation
        return None
    code, reason = check_text(text, max_chars)
    if code:
        if attachments and code == "empty_text":
            reason = f"no text content (attachments only: {', '.join(attachments)})"
        dead(DeadLetter(ref, code, reason, excerpt(message)))
        return None
    message_id = message.get("id")
    if message_id is not None and scalar_ref(message_id) is None:
        dead(DeadLetter(ref, "bad_shape", f"message.id is {label(message_id)}", excerpt(message)))
        return None
    explicit_id = scalar_ref(message_id)
    if explicit_id is not None:
        if explicit_id in seen_ids:
            dead(
                DeadLetter(ref, "duplicate_id", f"message.id {label(explicit_id)} repeats", excerpt(message))
            )
            return None
        seen_ids.add(explicit_id)
    attrs: dict = {}
    created = record_time(message.get("create_time"), attrs, "create_time")
    if attachments:
        attrs["attachments"] = attachments
    content = message.get("content")
    ctype = content.get("content_type") if isinstance(content, dict) else None
    if ctype and ctype != "text":
        attrs["content_type"] = ctype
    if message.get("recipient") not in (None, "all"):
        attrs["recipient"] = message.get("recipient")
    name = author.get("name")
    return ParsedMessage(
        source_ref=nid,
        role=role,
        author=name if isinstance(name, str) and name else role,
        text=text,
        created_at=created,
        attributes=attrs,
        source_id=explicit_id or nid,
        dead_ref=ref,
    )


def parse_chatgpt(
    path: Path, max_chars: int, record_id: str | None = None
) -> Iterator[ParsedConversation | DeadLetter]:
    for index, raw in enumerate(iter_json_array(path)):
        if record_id is not None and not (isinstance(raw, dict) and conversation_ref(raw) == record_id):
            continue
        yield from shielded(
            _conversation_items,
            (raw, index, max_chars),
            raw,
            f"conversation[{index}]",
            chatgpt_records(raw),
        )


def _conversation_items(raw: object, index: int, max_chars: int) -> list:
    return [parse_conversation(raw, index, max_chars)]
