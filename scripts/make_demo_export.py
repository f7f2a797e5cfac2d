"""Writes memory_core/demo/conversations.json: the synthetic ChatGPT-format export the demo ships.

The export is invented (a person called Maya, her app Kestrel, a half marathon, a move to Lisbon); it
exercises what real exports hold: a mapping tree with a hidden system root, an edited user message that
left a second branch, multimodal parts with an image pointer, a code-execution tool turn, and facts that
change over time. Rerun after editing the dialogue below; the output is deterministic.
"""

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

NS = uuid.UUID("6f1c3a52-8d0e-4c1b-9a57-2f0f3d1e9b10")


def ts(text):
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


CONVERSATIONS = [
    (
        "Kestrel backend database choice",
        "2024-01-08T09:12:00",
        [
            (
                "user",
                "I'm starting a side project called Kestrel: an app that shows bike-share availability and predicts empty docks. I'll write the backend in Python with FastAPI. Should I use PostgreSQL or SQLite?",
            ),
            (
                "assistant",
                "For Kestrel, PostgreSQL is the safer default: you will have concurrent writers (the ingestion job polling the bike-share feeds) and readers (the API), and PostGIS gives you distance queries between docks. SQLite is fine for a prototype, but you would migrate soon.",
            ),
            (
                "user",
                "OK, I'll go with PostgreSQL and PostGIS. My friend Tomás offered to help with the prediction model, he did his PhD on time-series forecasting.",
            ),
            (
                "assistant",
                "Good plan. With Tomás on the forecasting side, keep the feature pipeline separate from the API: a nightly job writes dock-level features to a table, and the model reads only that table.",
            ),
            (
                "user",
                "Honestly I'm a bit anxious about taking this on next to my day job at Northwind Logistics, I already work 45 hours a week.",
            ),
            (
                "assistant",
                "That's a real constraint. Scope the first milestone to one city and one feature: live availability. Predictions can come after the first release.",
            ),
        ],
    ),
    (
        "Half marathon training plan",
        "2024-01-15T18:40:00",
        [
            (
                "user",
                "I signed up for the Lisbon half marathon on April 14, 2024. My current long run is 10 km. Can you make me a 12-week plan?",
            ),
            (
                "assistant",
                "Here is a 12-week plan: three easy runs a week, one long run growing by about 1.5 km a week to 19 km in week 10, a tempo session from week 4, and a two-week taper before April 14.",
            ),
            (
                "user",
                "I can only run in the mornings before work, and my left knee sometimes hurts after long runs.",
            ),
            (
                "assistant",
                "Then keep the long run on Saturday mornings, add two short strength sessions for the hips and quads, and cut the long run by a third in any week the knee pain lasts more than a day.",
            ),
        ],
    ),
    (
        "Kestrel: moving off PostgreSQL",
        "2024-03-02T21:05:00",
        [
            (
                "user",
                "Update on Kestrel: we switched from PostgreSQL to DuckDB for the analytics side. The dock history is 40 million rows and the aggregations were too slow in Postgres on my small VPS.",
            ),
            (
                "assistant",
                "DuckDB is a good fit for columnar aggregations over dock history. Keep a small transactional store for user accounts, and load DuckDB from Parquet files the ingestion job writes.",
            ),
            (
                "user",
                "Exactly, accounts stay in SQLite now. I'm so frustrated though, the deploy broke twice this week because the Parquet schema changed under us.",
            ),
            (
                "assistant",
                "Pin the schema: write Parquet with an explicit schema and fail the ingestion job when the feed adds or renames a field, instead of letting DuckDB infer it.",
            ),
            ("user", "Can you check this snippet that computes the empty-dock rate?"),
            ("assistant", "Let me run it on a small sample."),
            ("tool", "empty_rate by station (sample): st-101 0.12, st-102 0.31, st-103 0.07"),
            (
                "assistant",
                "The snippet runs: station st-102 is empty 31% of the time in the sample, which matches what you described about the riverside docks.",
            ),
        ],
    ),
    (
        "Race date change and knee",
        "2024-03-20T07:30:00",
        [
            (
                "user",
                "The organisers moved the Lisbon half marathon from April 14 to April 21 because of a bridge closure. Does that change the plan?",
            ),
            (
                "assistant",
                "Only the taper: add one more week at your peak long run of 19 km, then taper for the last two weeks before April 21.",
            ),
            (
                "user",
                "Great. And the knee feels much better since I started the strength work, I ran 16 km on Saturday without pain. I'm really happy about that!",
            ),
            (
                "assistant",
                "That's excellent progress. Keep the strength sessions through the race; they are what's protecting the knee.",
            ),
        ],
    ),
    (
        "Moving to Lisbon",
        "2024-04-28T12:00:00",
        [
            (
                "user",
                "Big news: I accepted a job offer in Lisbon at a mobility startup called Andorinha, starting in September. I'm leaving Northwind Logistics.",
            ),
            (
                "assistant",
                "Congratulations! Moving countries takes planning: the NIF tax number, a bank account, and housing are the first three steps in Portugal.",
            ),
            (
                "user",
                "I finished the half marathon in 1:58, by the way. Now I want to learn Portuguese before September, I'm at A1 level.",
            ),
            (
                "assistant",
                "Well done on the sub-two-hour half marathon! For Portuguese from A1 by September: 30 minutes a day of European Portuguese (not Brazilian) listening, a weekly tutor session, and a vocabulary deck focused on housing and bureaucracy.",
            ),
        ],
    ),
    (
        "Kestrel launch",
        "2024-06-10T19:45:00",
        [
            (
                "user",
                "Kestrel is live in Porto! 300 users in the first week. Tomás's model predicts empty docks 30 minutes ahead with 84% accuracy.",
            ),
            (
                "assistant",
                "That's a strong launch. Watch the accuracy per station: averages hide the docks where the model fails, and those are the ones riders complain about.",
            ),
            (
                "user",
                "I'm exhausted though. Between Kestrel, Portuguese lessons and packing for Lisbon I sleep five hours a night.",
            ),
            (
                "assistant",
                "That pace isn't sustainable. Freeze new Kestrel features until after the move; the launch is done, and maintenance is enough for the summer.",
            ),
        ],
    ),
]


def build():
    export = []
    for c_index, (title, start, turns) in enumerate(CONVERSATIONS):
        conv_id = str(uuid.uuid5(NS, f"conv-{c_index}"))
        t0 = ts(start)
        root = str(uuid.uuid5(NS, f"{conv_id}-root"))
        system = str(uuid.uuid5(NS, f"{conv_id}-system"))
        mapping = {
            root: {"id": root, "message": None, "parent": None, "children": [system]},
            system: {
                "id": system,
                "message": {
                    "id": system,
                    "author": {"role": "system", "name": None, "metadata": {}},
                    "create_time": None,
                    "update_time": None,
                    "content": {"content_type": "text", "parts": [""]},
                    "status": "finished_successfully",
                    "end_turn": True,
                    "weight": 0.0,
                    "metadata": {"is_visually_hidden_from_conversation": True},
                    "recipient": "all",
                },
                "parent": root,
                "children": [],
            },
        }
        parent = system
        for t_index, (role, text) in enumerate(turns):
            nid = str(uuid.uuid5(NS, f"{conv_id}-{t_index}"))
            content = {"content_type": "text", "parts": [text]}
            author = {"role": role, "name": None, "metadata": {}}
            if role == "tool":
                content = {"content_type": "execution_output", "text": text}
                author["name"] = "python"
            message = {
                "id": nid,
                "author": author,
                "create_time": t0 + 60 * t_index,
                "update_time": None,
                "content": content,
                "status": "finished_successfully",
                "end_turn": role == "assistant",
                "weight": 1.0,
                "metadata": {},
                "recipient": "all",
            }
            mapping[nid] = {"id": nid, "message": message, "parent": parent, "children": []}
            mapping[parent]["children"].append(nid)
            parent = nid
        current = parent
        if c_index == 1:
            # the user edited their second message: the first wording stays as an inactive branch
            first_user = str(uuid.uuid5(NS, f"{conv_id}-0"))
            first_reply = str(uuid.uuid5(NS, f"{conv_id}-1"))
            old = str(uuid.uuid5(NS, f"{conv_id}-edited"))
            mapping[old] = {
                "id": old,
                "message": {
                    "id": old,
                    "author": {"role": "user", "name": None, "metadata": {}},
                    "create_time": t0 + 90,
                    "update_time": None,
                    "content": {"content_type": "text", "parts": ["I can only run in the evenings."]},
                    "status": "finished_successfully",
                    "end_turn": None,
                    "weight": 1.0,
                    "metadata": {},
                    "recipient": "all",
                },
                "parent": first_reply,
                "children": [],
            }
            mapping[first_reply]["children"].insert(0, old)
            del first_user
        if c_index == 2:
            # a multimodal user turn with an image pointer next to the text
            pic = str(uuid.uuid5(NS, f"{conv_id}-photo"))
            last = parent
            mapping[pic] = {
                "id": pic,
                "message": {
                    "id": pic,
                    "author": {"role": "user", "name": None, "metadata": {}},
                    "create_time": t0 + 60 * len(turns),
                    "update_time": None,
                    "content": {
                        "content_type": "multimodal_text",
                        "parts": [
                            {
                                "content_type": "image_asset_pointer",
                                "asset_pointer": "file-service://file-demo123",
                                "width": 800,
                                "height": 600,
                            },
                            "Here is the dashboard after the fix, riverside docks are the red ones.",
                        ],
                    },
                    "status": "finished_successfully",
                    "end_turn": None,
                    "weight": 1.0,
                    "metadata": {},
                    "recipient": "all",
                },
                "parent": last,
                "children": [],
            }
            mapping[last]["children"].append(pic)
            current = pic
        export.append(
            {
                "title": title,
                "create_time": t0,
                "update_time": t0 + 3600,
                "mapping": mapping,
                "moderation_results": [],
                "current_node": current,
                "plugin_ids": None,
                "conversation_id": conv_id,
                "id": conv_id,
                "default_model_slug": "gpt-4o",
            }
        )
    return export


if __name__ == "__main__":
    out = Path(__file__).resolve().parents[1] / "memory_core" / "demo" / "conversations.json"
    out.write_text(json.dumps(build(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}")
