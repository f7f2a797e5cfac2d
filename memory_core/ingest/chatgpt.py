"""ChatGPT export (`conversations.json`): a list of conversations, each a `mapping` tree of nodes.

Every branch is kept. Positions put the active branch (root → `current_node`) first, then the other
branches in depth-first order; each message records whether it is on the active branch. Nodes without a
message (the client root) are structure, not records. Hidden or empty system nodes are dead-lettered
with their reason like any other unusable record, so the accounting stays exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from memory_core.ingest.jsonstream import iter_json_array
from memory_core.ingest.records import (
    ROLES,
    DeadLetter,
    ParsedConversation,
    ParsedMessage,
    check_text,
    excerpt,
    fill_missing_times,
    parse_timestamp,
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


def content_text(content: object) -> tuple[str, list[str]]:
    """The text of a message's content and the kinds of non-text parts (images, files, ...)."""
    if isinstance(content, str):
        return content, []
    if not isinstance(content, dict):
        return "", []
    ctype = content.get("content_type", "text")
    attachments: list[str] = []
    pieces: list[str] = []
    if isinstance(content.get("parts"), list):
        for part in content["parts"]:
            text = _part_text(part)
            if text is not None:
                if text:
                    pieces.append(text)
            elif isinstance(part, dict):
                attachments.append(str(part.get("content_type") or part.get("asset_pointer") or "attachment"))
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
            t.get("content", "") for t in content["thoughts"] if isinstance(t, dict) and t.get("content")
        ]
    else:
        for key in _TEXT_KEYS:
            if isinstance(content.get(key), str) and content[key]:
                pieces.append(content[key])
                break
    return "\n".join(pieces), attachments


def _is_hidden(message: dict) -> bool:
    meta = message.get("metadata") or {}
    return bool(isinstance(meta, dict) and meta.get("is_visually_hidden_from_conversation"))


def _order_nodes(mapping: dict, current: object) -> tuple[list[str], set[str], set[str]]:
    """(node ids in position order, active-branch ids, ids caught in a parent cycle)."""
    parent_of = {nid: (n.get("parent") if isinstance(n, dict) else None) for nid, n in mapping.items()}
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
    if not isinstance(raw, dict) or not isinstance(raw.get("mapping"), dict):
        return DeadLetter(
            f"conversation[{index}]", "bad_shape", "conversation without a 'mapping' object", excerpt(raw)
        )
    mapping: dict = raw["mapping"]
    conv_ref = str(raw.get("conversation_id") or raw.get("id") or f"conversation[{index}]")
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
    order, active, in_cycle = _order_nodes(mapping, raw.get("current_node"))
    stored_refs: set[str] = set()
    nearest_stored: dict[str, str | None] = {}

    def stored_ancestor(nid: str | None) -> str | None:
        chain = []
        node = nid
        while node is not None and node in mapping and node not in stored_refs and node not in nearest_stored:
            chain.append(node)
            node = mapping[node].get("parent") if isinstance(mapping[node], dict) else None
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
        message = node.get("message")
        if message is None:
            continue  # structural root, not a record
        conv.records_seen += 1
        ref = f"{conv_ref}/{nid}"
        if not isinstance(message, dict):
            conv.dead_letters.append(
                DeadLetter(ref, "bad_shape", "message is not an object", excerpt(message))
            )
            continue
        author = message.get("author") if isinstance(message.get("author"), dict) else {}
        role = author.get("role")
        if role not in ROLES:
            conv.dead_letters.append(
                DeadLetter(ref, "unknown_role", f"unknown role {role!r}", excerpt(message))
            )
            continue
        text, attachments = content_text(message.get("content"))
        if role == "system" and (_is_hidden(message) or not text.strip()):
            conv.dead_letters.append(
                DeadLetter(
                    ref,
                    "hidden_system",
                    "hidden or empty system node (structural, not conversation)",
                    excerpt(message),
                )
            )
            continue
        code, reason = check_text(text, max_chars)
        if code:
            if attachments and code == "empty_text":
                reason = f"no text content (attachments only: {', '.join(attachments)})"
            conv.dead_letters.append(DeadLetter(ref, code, reason, excerpt(message)))
            continue
        try:
            created = parse_timestamp(message.get("create_time"))
        except ValueError:
            created = None
        parent = node.get("parent")
        parent_ref = stored_ancestor(parent) if parent is not None else None
        attrs = {"on_active_branch": nid in active}
        if parent is not None and parent not in mapping:
            attrs["missing_parent"] = str(parent)
        if attachments:
            attrs["attachments"] = attachments
        ctype = (
            (message.get("content") or {}).get("content_type")
            if isinstance(message.get("content"), dict)
            else None
        )
        if ctype and ctype != "text":
            attrs["content_type"] = ctype
        if message.get("recipient") not in (None, "all"):
            attrs["recipient"] = message.get("recipient")
        conv.messages.append(
            ParsedMessage(
                source_ref=nid,
                role=role,
                author=str(author.get("name") or role),
                text=text,
                created_at=created,
                parent_ref=parent_ref,
                attributes=attrs,
                source_id=str(message.get("id") or nid),
            )
        )
        stored_refs.add(nid)
    if not fill_missing_times(conv.messages, conv_time):
        for msg in conv.messages:
            conv.dead_letters.append(
                DeadLetter(
                    f"{conv_ref}/{msg.source_ref}",
                    "no_timestamp",
                    "no create_time in the message or its conversation",
                    excerpt(msg.text),
                )
            )
        conv.messages = []
    return conv


def parse_chatgpt(
    path: Path, max_chars: int, record_id: str | None = None
) -> Iterator[ParsedConversation | DeadLetter]:
    for index, raw in enumerate(iter_json_array(path)):
        if (
            record_id is not None
            and isinstance(raw, dict)
            and str(raw.get("conversation_id") or raw.get("id")) != record_id
        ):
            continue
        yield parse_conversation(raw, index, max_chars)
