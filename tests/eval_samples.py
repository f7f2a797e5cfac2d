"""Small benchmark-shaped records for the evaluation harness tests (written here, never copied from the data)."""

from __future__ import annotations


def _lme_sessions():
    return {
        "haystack_session_ids": ["answer_s1", "s_noise", "answer_s2"],
        "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/03 (Wed) 18:30", "2023/05/10 (Wed) 12:15"],
        "haystack_sessions": [
            [
                {
                    "role": "user",
                    "content": "I adopted a beagle puppy named Rufus last month.",
                    "has_answer": True,
                },
                {"role": "assistant", "content": "Congratulations! Beagles are friendly, curious dogs."},
            ],
            [
                {"role": "user", "content": "Can you give me a recipe for banana bread?"},
                {
                    "role": "assistant",
                    "content": "Mix mashed bananas, flour, sugar, butter and eggs, then bake.",
                },
                {"role": "user", "content": "   "},
            ],
            [
                {"role": "user", "content": "What should I pack for a long weekend?"},
                {"role": "assistant", "content": "Pack light layers, a charger and snacks for the road."},
                {
                    "role": "user",
                    "content": "My beagle Rufus is coming with me on the road trip to Denver.",
                    "has_answer": True,
                },
                {
                    "role": "assistant",
                    "content": "Denver has many dog-friendly parks for your beagle.",
                    "has_answer": True,
                },
            ],
        ],
    }


def lme_question(
    qid="q_multi",
    question_type="multi-session",
    question="Which city is my beagle Rufus travelling to?",
    answer="Denver",
):
    """Three sessions: two evidence sessions (a has_answer user turn each, one has_answer assistant turn), one
    noise session with an empty user turn."""
    return {
        "question_id": qid,
        "question_type": question_type,
        "question": question,
        "answer": answer,
        "question_date": "2023/05/30 (Tue) 23:40",
        **_lme_sessions(),
        "answer_session_ids": ["answer_s1", "answer_s2"],
    }


def lme_file_records():
    """A scored question, an abstention question over the same haystack, and a question whose only
    has_answer turn is the assistant's (no relevant user turn: not retrieval-scored)."""
    abstention = lme_question(
        "q_multi_abs", question="Which city is my cat travelling to?", answer="You did not mention a cat."
    )
    assistant_only = lme_question(
        "q_asst", "single-session-assistant", "Which parks did you suggest in Denver?", "dog-friendly parks"
    )
    for session in assistant_only["haystack_sessions"]:
        for turn in session:
            if turn["role"] == "user":
                turn.pop("has_answer", None)
    return [lme_question(), abstention, assistant_only]


def locomo_sample(sample_id="conv-t"):
    """Two sessions; QA with a single-hop, a multi-hop with malformed evidence ("D1:1; D2:2" and "D"), a
    temporal one, an adversarial (category 5) one and one without evidence."""
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy named Max from the shelter!"},
                {
                    "speaker": "Bob",
                    "dia_id": "D1:2",
                    "text": "Congrats! Here is my cat.",
                    "img_url": ["http://x/cat.jpg"],
                    "blip_caption": "a photo of a grey cat on a sofa",
                },
                {"speaker": "Ann", "dia_id": "D1:3", "text": "I also started pottery classes on Tuesday."},
            ],
            "session_2_date_time": "10:00 am on 9 June, 2023",
            "session_2": [
                {"speaker": "Bob", "dia_id": "D2:1", "text": "How is Max doing?"},
                {
                    "speaker": "Ann",
                    "dia_id": "D2:2",
                    "text": "Max loves the beach; we went surfing in Malibu last weekend.",
                },
            ],
        },
        "qa": [
            {
                "question": "What is the name of Ann's puppy?",
                "answer": "Max",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "Where did Ann's puppy go to the beach?",
                "answer": "Malibu, beach",
                "evidence": ["D1:1; D2:2", "D"],
                "category": 1,
            },
            {
                "question": "When did Ann start pottery classes?",
                "answer": "May 2023",
                "evidence": ["D1:3"],
                "category": 2,
            },
            {
                "question": "What is the name of Bob's dog?",
                "adversarial_answer": "Max",
                "evidence": ["D1:1"],
                "category": 5,
            },
            {"question": "What colour is the sofa?", "answer": "grey", "evidence": [], "category": 3},
        ],
    }
