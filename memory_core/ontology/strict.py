"""Strict-schema discipline (SGR): every model extra="forbid"; response models have no Optional and no
defaults, so the JSON schema they generate is accepted by OpenAI/Azure strict structured outputs.

What is sent as `response_format` is the *wire schema* (`strict_json_schema`): the model's JSON schema with
every `$ref` inlined and the validation keywords strict mode rejects (Azure, and OpenAI before late 2024:
minimum/maximum, string lengths and patterns, formats, array sizes ...) moved into the field's description.
Those bounds stay enforced where they belong, by Pydantic when the answer is parsed; a violation is a
validation error the client feeds back to the model. `assert_strict_schema` checks the wire schema.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ConfigDict


class StrictBase(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StrictSchemaError(ValueError):
    """A model's JSON schema would be rejected by strict structured outputs."""


# Keywords strict structured outputs reject (Azure OpenAI documents them as unsupported), with how a bound
# reads in a description.
UNSUPPORTED_KEYWORDS: dict[str, str] = {
    "minimum": ">= {}",
    "maximum": "<= {}",
    "exclusiveMinimum": "> {}",
    "exclusiveMaximum": "< {}",
    "multipleOf": "a multiple of {}",
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "pattern": "matching /{}/",
    "format": "format {}",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
    "uniqueItems": "unique items: {}",
    "minProperties": "at least {} properties",
    "maxProperties": "at most {} properties",
}
# Keywords with no strict-mode meaning at all: a schema using them cannot be sent.
FORBIDDEN_KEYWORDS = (
    "patternProperties",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "minContains",
    "maxContains",
    "if",
    "then",
    "else",
    "not",
    "oneOf",
    "allOf",
    "dependentRequired",
    "dependentSchemas",
)


def _inline_refs(node: Any, defs: dict, stack: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline_refs(v, defs, stack) for v in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in stack:
            raise StrictSchemaError(
                f"recursive model {name!r}: strict wire schemas are inlined and cannot recurse"
            )
        if name not in defs:
            raise StrictSchemaError(f"unresolvable $ref {node['$ref']!r}")
        target = _inline_refs(copy.deepcopy(defs[name]), defs, (*stack, name))
        siblings = {k: _inline_refs(v, defs, stack) for k, v in node.items() if k != "$ref"}
        return {**target, **siblings}
    return {k: _inline_refs(v, defs, stack) for k, v in node.items() if k != "$defs"}


def _move_bounds_to_description(node: Any) -> Any:
    if isinstance(node, list):
        return [_move_bounds_to_description(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in node.items():
        if key in UNSUPPORTED_KEYWORDS and not isinstance(value, (dict, list)):
            notes.append(UNSUPPORTED_KEYWORDS[key].format(value))
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: _move_bounds_to_description(v) for name, v in value.items()}
        else:
            out[key] = _move_bounds_to_description(value)
    if notes:
        described = out.get("description", "")
        out["description"] = (described + " " if described else "") + "(" + ", ".join(notes) + ")"
    return out


def strict_json_schema(model: type[BaseModel]) -> dict:
    """The wire schema of a response model: refs inlined, unsupported bounds moved into descriptions."""
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})
    return _move_bounds_to_description(_inline_refs(schema, defs, ()))


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
        if node.get("type") == "null" or (isinstance(node.get("type"), list) and "null" in node["type"]):
            problems.append(f"{path}: is Optional (null allowed)")
        for key in ("anyOf", "oneOf"):
            for option in node.get(key, []):
                if isinstance(option, dict) and option.get("type") == "null":
                    problems.append(f"{path}: is Optional (null allowed)")
        for key in node:
            if key in UNSUPPORTED_KEYWORDS or key in FORBIDDEN_KEYWORDS:
                problems.append(f"{path}: keyword {key!r} is not supported by strict mode")
            if key == "$ref":
                problems.append(f"{path}: $ref must be inlined")
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    _walk(sub, f"{path}.{name}", problems)
            else:
                _walk(value, f"{path}/{key}", problems)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _walk(value, f"{path}[{i}]", problems)


def schema_problems(schema: dict, name: str = "schema") -> list[str]:
    """Every node of a JSON schema strict mode would reject (empty: acceptable)."""
    problems: list[str] = []
    if schema.get("type") != "object":
        problems.append(f"{name}: the root must be an object")
    _walk(schema, name, problems)
    return problems


def assert_strict_schema(model: type[BaseModel]) -> dict:
    """The model's wire schema; raises StrictSchemaError listing every node strict mode would reject."""
    if not (isinstance(model, type) and issubclass(model, StrictBase)):
        raise StrictSchemaError(f"{model!r} does not inherit StrictBase (extra='forbid')")
    # the wire transform only inlines refs and moves bounds: defaults and Optional stay visible to the walk
    problems = schema_problems(strict_json_schema(model), model.__name__)
    if problems:
        raise StrictSchemaError(f"{model.__name__} is not strict-schema safe:\n  " + "\n  ".join(problems))
    return strict_json_schema(model)
