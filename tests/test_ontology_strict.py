"""Strict-schema discipline: every model ever sent as `response_format` passes the validator, and the
validator rejects what OpenAI/Azure strict mode rejects."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

import memory_core
from memory_core.ontology import (
    ConceptHypothesis,
    LifecycleProposals,
    SegmentExtraction,
    StrictBase,
    StrictSchemaError,
    UserReaction,
    assert_strict_schema,
    strict_json_schema,
)


def _all_strict_models() -> list[type[StrictBase]]:
    # import every domain module so every StrictBase subclass (prompts' response models included) is defined
    for mod in pkgutil.walk_packages(memory_core.__path__, "memory_core."):
        importlib.import_module(mod.name)
    out, todo = [], list(StrictBase.__subclasses__())
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo.extend(cls.__subclasses__())
    return [c for c in out if c.__module__.startswith("memory_core.")]


def test_every_prompt_response_model_is_strict():
    from memory_core.extraction.prompts import PROMPTS

    assert PROMPTS, "no prompts registered"
    for prompt in PROMPTS:
        schema = assert_strict_schema(prompt.response_model)
        assert schema["type"] == "object" and schema["additionalProperties"] is False


@pytest.mark.parametrize("model", _all_strict_models(), ids=lambda m: m.__name__)
def test_every_strict_model_is_strict(model):
    assert_strict_schema(model)


def test_models_that_are_sent_are_known():
    names = {m.__name__ for m in _all_strict_models()}
    assert {
        "SegmentExtraction",
        "ConceptCandidate",
        "CandidateSpan",
        "ReactionCandidate",
        "UserReaction",
    } <= names
    assert {ConceptHypothesis.__name__, LifecycleProposals.__name__} <= names


def test_bounds_move_into_descriptions_and_stay_enforced_on_parse():
    wire = strict_json_schema(UserReaction)
    intensity = wire["properties"]["intensity"]
    assert "minimum" not in intensity and "maximum" not in intensity
    assert "<= 1.0" in intensity["description"] and ">= 0.0" in intensity["description"]
    assert "$defs" not in strict_json_schema(SegmentExtraction) and "$ref" not in str(
        strict_json_schema(SegmentExtraction)
    )
    with pytest.raises(ValidationError):
        UserReaction(
            state="Joy",
            state_raw="",
            intensity=1.5,
            valence="positive",
            epistemic_status="explicit",
            evidence_message_id="m1",
        )


def test_datetime_format_is_described_not_sent():
    wire = strict_json_schema(ConceptHypothesis)
    assert (
        "format" not in wire["properties"]["first_seen"]
        and "date-time" in wire["properties"]["first_seen"]["description"]
    )


class _Optional(StrictBase):
    note: str | None


class _Default(StrictBase):
    note: str = "x"


class _FreeDict(StrictBase):
    extra: dict[str, str]


class _Inner(StrictBase):
    value: int


class _Nested(StrictBase):
    items: list[_Inner]
    choice: Literal["a", "b"]


class _NotStrict(BaseModel):  # extra fields allowed
    value: int


class _Pattern(StrictBase):
    code: str = Field(pattern=r"^[a-z]+$")


@pytest.mark.parametrize(
    ("model", "problem"),
    [
        (_Optional, "null allowed"),
        (_Default, "has a default"),
        (_FreeDict, "additionalProperties must be false"),
        (_NotStrict, "does not inherit StrictBase"),
    ],
)
def test_validator_rejects(model, problem):
    with pytest.raises(StrictSchemaError, match=problem):
        assert_strict_schema(model)


def test_validator_accepts_nested_and_enum_models_and_moves_patterns():
    assert assert_strict_schema(_Nested)["properties"]["items"]["items"]["additionalProperties"] is False
    assert "matching /^[a-z]+$/" in assert_strict_schema(_Pattern)["properties"]["code"]["description"]


def test_validator_rejects_forbidden_keywords_in_a_hand_written_schema():
    from memory_core.ontology.strict import schema_problems

    schema = {
        "type": "object",
        "properties": {"x": {"type": "integer", "minimum": 0}, "y": {"oneOf": [{"type": "string"}]}},
        "required": ["x"],
        "additionalProperties": False,
    }
    problems = "\n".join(schema_problems(schema))
    assert "'minimum'" in problems and "'oneOf'" in problems and "not required: ['y']" in problems
