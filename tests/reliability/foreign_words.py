"""How a message that is not in notochord's own words gives itself away, for the hostile-input properties."""

from __future__ import annotations

import re

__all__ = ["FOREIGN_WORDS", "REQUIREMENT_IDS"]

FOREIGN_WORDS = re.compile(
    r"Traceback|\b(?:Type|Attribute|Key|Value|Index|Overflow|Recursion|Lookup|Assertion|Runtime|Unicode\w*|"
    r"ZeroDivision|NotImplemented|Name|Integrity|Operational|Programming|Interface|Data|Statement)Error\b"
    r"|\bStopIteration\b|sqlalchemy|sqlite|psycopg|pydantic|\[SQL:|Background on this error|validation errors? for"
    r"|Input should be|object has no attribute|unhashable type|not supported between instances|'NoneType' object"
    r"|invalid literal for|takes \d+ positional|got an unexpected keyword|object is not (?:iterable|subscriptable)"
    r"|maximum recursion depth|Python int too large|out of range integral|Out of range float|integer string conversion"
    r"|Error binding parameter|type '\w+' is not supported|argument must be|object is not callable"
)
"""Python's, pydantic's, SQLAlchemy's or a database's wording, or a traceback."""
REQUIREMENT_IDS = re.compile(r"\b(?:K|P|KB|OD)-[A-Z]+-?\d+|\bOD-K\d+")
"""A requirement id, which messages never cite."""
