"""The tool schemas are valid JSON Schema, and a call is checked against them before anything runs
: the checker refuses exactly what the schema refuses."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from notochord.mcp_server.tools import MAX_ARGUMENT_BYTES, TOOLS, ArgumentError, check_arguments

BY_NAME = {t.name: t for t in TOOLS}


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_every_schema_is_a_closed_object_schema_with_an_example_in_its_description(tool: Any) -> None:
    """Precise enough for a model to call the tool right."""
    jsonschema.Draft202012Validator.check_schema(tool.schema)
    assert tool.schema["type"] == "object"
    assert tool.schema["additionalProperties"] is False
    assert "Example: {" in tool.description


CASES = [
    ("search", {"query": "stew", "limit": 5, "groupBy": "document", "collections": ["keep"]}),
    ("search", {"limit": True}),
    ("search", {"limit": 101}),
    ("search", {"groupBy": "page"}),
    ("search", {"timeRange": {"from": "2026-09-01", "until": "x"}}),
    ("search", {"collections": "keep"}),
    ("search", {"collections": [1]}),
    ("facts_put", {"predicateHint": "pref.food.like", "value": {"stars": 5}}),
    ("facts_put", {"value": "x"}),
    ("facts_put", {"predicateHint": 7}),
    ("entities_resolve", {"identifiers": {"email": "a@b.nl"}, "create": True}),
    ("entities_resolve", {"identifiers": {"email": 3}}),
    ("entities_resolve", {"identifiers": {"email": "a@b.nl"}, "create": "yes"}),
    ("documents_get", {"ref": "doc_x", "range": {"from": 0, "to": 2}}),
    ("documents_get", {"ref": "doc_x", "range": {"from": -1, "to": 2}}),
    ("documents_get", {"ref": "doc_x", "range": {"from": 0}}),
    ("changes_list", {"status": "reverted"}),
    ("changes_list", {"status": "gone"}),
    ("collections_list", {}),
    ("collections_list", {"all": True}),
]


@pytest.mark.parametrize(("name", "arguments"), CASES)
def test_the_checker_agrees_with_json_schema(name: str, arguments: dict[str, Any]) -> None:
    """What does not fit the schema is refused before the gem API is called."""
    tool = BY_NAME[name]
    valid = jsonschema.Draft202012Validator(tool.schema).is_valid(arguments)
    if valid:
        assert check_arguments(tool, arguments) == arguments
    else:
        with pytest.raises(ArgumentError):
            check_arguments(tool, arguments)


def test_arguments_over_the_size_limit_are_refused_before_the_schema() -> None:
    """Oversized arguments (the REST service's 1 MiB body limit)."""
    with pytest.raises(ArgumentError, match="over the limit"):
        check_arguments(BY_NAME["facts_put"], {"predicateHint": "p.q", "value": "x" * MAX_ARGUMENT_BYTES})
