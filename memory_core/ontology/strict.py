"""Strict-schema discipline (SGR): every model extra="forbid"; response models have no Optional and no
defaults, so the JSON schema they generate is accepted by OpenAI/Azure strict structured outputs."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class StrictBase(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StrictSchemaError(ValueError):
    """A model's JSON schema would be rejected by strict structured outputs."""


def _walk(node: Any, path: str, problems: list[str]) -> None:
    if isinstance(node, dict):
        is_object = node.get("type") == "object" or "properties" in node
        if is_object:
            props = node.get("properties", {})
            if node.get("additionalProperties") is not False:
                problems.append(f"{path}: additionalProperties must be false")
            required = node.get("required", [])
            if sorted(required) != sorted(props):
                missing = sorted(set(props) - set(required))
                problems.append(f"{path}: required must equal properties (not required: {missing})")
        if "default" in node:
            problems.append(f"{path}: has a default")
        for key in ("anyOf", "oneOf"):
            for option in node.get(key, []):
                if isinstance(option, dict) and option.get("type") == "null":
                    problems.append(f"{path}: is Optional (null allowed)")
        for key, value in node.items():
            _walk(value, f"{path}/{key}", problems)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _walk(value, f"{path}[{i}]", problems)


def assert_strict_schema(model: type[BaseModel]) -> dict:
    """The model's JSON schema; raises StrictSchemaError listing every node strict mode would reject."""
    schema = model.model_json_schema()
    problems: list[str] = []
    _walk(schema, model.__name__, problems)
    if problems:
        raise StrictSchemaError(f"{model.__name__} is not strict-schema safe:\n  " + "\n  ".join(problems))
    return schema
