"""The simplified schema tier 2 asks for: required fields only, no nested optional objects."""

from __future__ import annotations

from core.llm.structured import simplified_schema
from core.validation.schema import ValidatorOutput


def test_dict_schema_keeps_required_fields_and_recurses_into_them() -> None:
    schema = {
        "type": "object",
        "required": ["answer", "meta"],
        "properties": {
            "answer": {"type": "string"},
            "meta": {
                "type": "object",
                "required": ["year"],
                "properties": {"year": {"type": "integer"}, "notes": {"type": "object", "properties": {}}},
            },
            "extra": {"type": "object", "properties": {"a": {"type": "string"}}},
        },
    }
    assert simplified_schema(schema) == {
        "type": "object",
        "required": ["answer", "meta"],
        "properties": {
            "answer": {"type": "string"},
            "meta": {"type": "object", "required": ["year"], "properties": {"year": {"type": "integer"}}},
        },
    }


def test_validator_output_is_reduced_to_its_required_fields() -> None:
    simple = simplified_schema(ValidatorOutput)
    assert simple["required"] == ["goal_achievement", "completeness", "rule_compliance", "status", "score"]
    assert set(simple["properties"]) == set(simple["required"])
