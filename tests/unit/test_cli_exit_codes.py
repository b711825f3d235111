"""The CLI's exit codes, as the README lists them: a script can tell why a command failed."""

from __future__ import annotations

import pytest

from notochord import errors
from notochord.cli.common import exit_code_for


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (errors.KnowledgeValidationError("bad"), 2),
        (errors.KnowledgeNotFoundError("not found: no fact"), 3),
        (errors.SpaceNotFoundError("no vault"), 3),
        (errors.KnowledgePermissionError("lacks knowledge permission facts.read"), 4),
        (errors.KnowledgeQuotaError("daily write quota"), 5),
        (errors.RevertError("superseded"), 6),
        (errors.StorageFullError("disk full"), 8),
        (errors.BusyError("busy", retry_after=60), 10),
        (errors.StoreLockedError("another process kept the store locked"), 10),
        (errors.StorageError("damaged"), 1),
        (errors.StoreVersionError("a newer notochord wrote it"), 2),
        (errors.StoreUnreachableError("cannot connect to the PostgreSQL server"), 11),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value),
)
def test_each_kind_of_failure_has_its_exit_code(error: errors.NotochordError, code: int) -> None:
    assert exit_code_for(error) == code
