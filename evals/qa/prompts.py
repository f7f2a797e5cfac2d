"""Reader and judge prompts.

The judge follows LongMemEval's evaluation protocol: one yes/no per question, temperature 0, a prompt per
question type — off-by-one day counts tolerated for temporal-reasoning, an updated answer accepted with
older information beside it for knowledge-update, a rubric for single-session-preference, and for
abstention (`_abs`) questions: does the response identify the question as unanswerable.
"""

from __future__ import annotations

from collections.abc import Sequence

READER_MAX_TOKENS = 300
JUDGE_MAX_TOKENS = 10
NOT_MENTIONED_ANSWER = "Not mentioned in the conversation."

_READER_SYSTEM = (
    "You answer questions about a user's past conversations, using only the retrieved excerpts given. "
    "Excerpts are in chronological order, each with the date of its session."
)


def reader_prompt(
    benchmark: str, question: str, question_date: str | None, evidence: Sequence[str]
) -> tuple[str, str]:
    """(system, user) for the reader. `evidence`: rendered excerpts, chronological."""
    excerpts = "\n\n".join(evidence) if evidence else "(nothing was retrieved)"
    if benchmark == "locomo":
        rules = (
            "Answer with a short phrase (a few words), taken from the conversation where possible; give dates as they "
            f"follow from the session dates. If the excerpts do not contain the answer, reply exactly: {NOT_MENTIONED_ANSWER}"
        )
    else:
        rules = (
            "Answer concisely. Reason over dates relative to the current date when the question needs it. If the "
            "excerpts do not contain the information asked for, say that you cannot answer from the history."
        )
    when = f"Current date: {question_date}\n" if question_date else ""
    return (
        _READER_SYSTEM,
        f"Retrieved excerpts:\n\n{excerpts}\n\n{when}Question: {question}\n\n{rules}\nAnswer:",
    )


_JUDGE_BASE = (
    "You are grading a model's response to a question about a user's chat history. Answer yes if the response "
    "contains the correct answer, otherwise answer no. A response equivalent to the correct answer, or one that "
    "contains all the intermediate steps needed to reach it, is correct. A response that holds only part of the "
    "information the answer requires is not."
)
_JUDGE_EXTRA = {
    "temporal-reasoning": (
        " Do not penalise off-by-one errors in counts of days, weeks or months: if the question asks for such a "
        "number and the response is off by one (for example 19 days when the answer is 18), it is still correct."
    ),
    "knowledge-update": (
        " If the response gives earlier information together with the updated answer, it is correct as long as "
        "the updated answer is the required one."
    ),
}
_JUDGE_PREFERENCE = (
    "You are grading a model's personalised response against a rubric describing the desired response. Answer "
    "yes if the response satisfies the rubric, otherwise no. It need not cover every point of the rubric: it is "
    "correct as long as it recalls and uses the user's personal information correctly."
)
_JUDGE_ABSTENTION = (
    "You are grading a model's response to an unanswerable question. Answer yes if the response correctly "
    "identifies the question as unanswerable: it may say the information is incomplete or missing, or that "
    "related information is present but not what was asked. Otherwise answer no."
)


def judge_prompt(question_type: str, abstention: bool, question: str, answer: str, response: str) -> str:
    """The single user message of the LongMemEval judge."""
    if abstention:
        head, label = _JUDGE_ABSTENTION, "Explanation"
    elif question_type == "single-session-preference":
        head, label = _JUDGE_PREFERENCE, "Rubric"
    else:
        head, label = _JUDGE_BASE + _JUDGE_EXTRA.get(question_type, ""), "Correct answer"
    return f"{head}\n\nQuestion: {question}\n\n{label}: {answer}\n\nModel response: {response}\n\nIs the model response correct? Answer yes or no only."


def judged_correct(judge_response: str) -> bool:
    return "yes" in judge_response.strip().lower()
