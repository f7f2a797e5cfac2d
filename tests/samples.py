"""Small real-shaped inputs of each format, written by the tests themselves."""

from __future__ import annotations


def chatgpt_node(nid, role, text, parent, children=(), t=None, hidden=False, content=None):
    message = None
    if role is not None:
        message = {
            "id": nid,
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": t,
            "content": content if content is not None else {"content_type": "text", "parts": [text]},
            "metadata": {"is_visually_hidden_from_conversation": True} if hidden else {},
            "recipient": "all",
        }
    return {"id": nid, "message": message, "parent": parent, "children": list(children)}


def chatgpt_conversation(conv_id="c1", title="Trip planning", branch=True):
    """root → hidden system → user u1 → assistant a1 → user u2 (active) / user u2b (edited-away branch) → a2."""
    m = {
        "root": chatgpt_node("root", None, None, None, ["sys"]),
        "sys": chatgpt_node("sys", "system", "", "root", ["u1"], hidden=True),
        "u1": chatgpt_node("u1", "user", "I want to visit Kyoto in April.", "sys", ["a1"], t=1_700_000_000),
        "a1": chatgpt_node(
            "a1",
            "assistant",
            "April is cherry blossom season in Kyoto.",
            "u1",
            ["u2b", "u2"] if branch else ["u2"],
            t=1_700_000_060,
        ),
        "u2": chatgpt_node("u2", "user", "Book me a ryokan near Gion.", "a1", ["a2"], t=1_700_000_120),
        "a2": chatgpt_node("a2", "assistant", "Here are three ryokans near Gion.", "u2", [], t=1_700_000_180),
    }
    if branch:
        m["u2b"] = chatgpt_node("u2b", "user", "Actually, what about Osaka?", "a1", [], t=1_700_000_100)
    return {
        "title": title,
        "create_time": 1_700_000_000,
        "mapping": m,
        "current_node": "a2",
        "conversation_id": conv_id,
    }


def longmemeval_record(qid="q1"):
    return {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": "Where did I go?",
        "answer": "Kyoto",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["s_a", "answer_s_b"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "Hi there"}, {"role": "assistant", "content": "Hello!"}],
            [
                {"role": "user", "content": "I went to Kyoto last week.", "has_answer": True},
                {"role": "assistant", "content": "How was it?"},
            ],
        ],
        "answer_session_ids": ["answer_s_b"],
    }


def locomo_sample(sample_id="conv-x"):
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy named Max!"},
                {
                    "speaker": "Bob",
                    "dia_id": "D1:2",
                    "text": "Congrats! Here is my cat.",
                    "img_url": ["http://x/cat.jpg"],
                    "blip_caption": "a photo of a cat on a sofa",
                },
            ],
            "session_2_date_time": "10:00 am on 9 June, 2023",
            "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "How is Max doing?"}],
        },
        "qa": [
            {"question": "What is the puppy's name?", "answer": "Max", "evidence": ["D1:1"], "category": 4}
        ],
    }


def jsonl_rows():
    return [
        {
            "id": "m1",
            "conversation_id": "c1",
            "role": "user",
            "author": "dana",
            "text": "My flight is on May 3.",
            "created_at": "2024-04-01T10:00:00Z",
        },
        {
            "id": "m2",
            "conversation_id": "c1",
            "role": "assistant",
            "author": "bot",
            "text": "Noted: May 3.",
            "created_at": "2024-04-01T10:00:05Z",
            "parent_id": "m1",
        },
        {
            "id": "m3",
            "conversation_id": "c2",
            "role": "user",
            "author": "dana",
            "text": "Second thread",
            "created_at": 1711965600,
        },
    ]
