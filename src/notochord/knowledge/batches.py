"""Many writes in one transaction: the shared rules of ``put_many`` and ``upsert_many``.

Rules (K-FACT, K-DOC, K-CHG, K-QUOTA):

- A batch is one transaction (:meth:`~notochord.knowledge.writes.Store.batch`): every item is
  written, or none is. An item that is refused (bad arguments, or a reference to something that
  does not exist) raises :class:`BatchItemError` naming the item's index and the problem, and
  nothing of the batch is written.
- Each item is still its own write: it is validated as a single call would be, charged to the
  writer's daily quota as one write, and recorded as its own change, so it can be undone alone.
- Every change of a batch carries the batch's run id (the caller's, or a fresh ``batch-…`` id), so
  the whole batch is undone at once with ``revert(run_id=…)``.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from notochord.errors import KnowledgeNotFoundError, KnowledgeValidationError

__all__ = ["BatchItemError", "BatchOutcome", "batch_run_id", "check_items", "item_errors"]

T = TypeVar("T")


class BatchItemError(KnowledgeValidationError):
    """One item of a batch was refused; nothing of the batch was written.

    ``index`` is the item's position (from 0), ``problem`` what was wrong with it.
    """

    def __init__(self, index: int, problem: str) -> None:
        super().__init__(f"item {index} of the batch: {problem}; nothing of the batch was written")
        self.index = index
        self.problem = problem


@dataclass(frozen=True)
class BatchOutcome(Generic[T]):
    """What a batch wrote: one result per item, in order, and the run id all its changes carry."""

    run_id: str
    results: list[T]


def batch_run_id(run_id: str | None) -> str:
    """The caller's run id, or a fresh one for this batch."""
    return run_id if run_id is not None else f"batch-{uuid.uuid4().hex}"


def check_items(items: object, allowed: Collection[str], *, what: str) -> Sequence[Mapping[str, Any]]:
    """``items`` as a list of mappings whose keys are all ``allowed``; else the item's error."""
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Sequence):
        raise KnowledgeValidationError(f"{what} takes a list of items, one mapping per {what.split('_')[0]} write")
    quick = allowed if isinstance(allowed, frozenset | set) else None
    for index, item in enumerate(items):
        # a plain dict is told without the abstract base class's slower check
        if item.__class__ is not dict and not isinstance(item, Mapping):
            raise BatchItemError(index, f"an item must be a mapping of arguments, not {type(item).__name__}")
        if quick is not None and item.keys() <= quick:
            continue  # the common case, told in one set comparison
        unknown = sorted(str(k) for k in item if k not in allowed)
        if unknown:
            raise BatchItemError(index, f"unknown argument(s) {', '.join(unknown)}; use {', '.join(sorted(allowed))}")
    return items


@contextlib.contextmanager
def item_errors(index: int) -> Iterator[None]:
    """Turn an item's refusal into a :class:`BatchItemError`; other errors pass unchanged."""
    try:
        yield
    except BatchItemError:
        raise
    except (KnowledgeValidationError, KnowledgeNotFoundError) as error:
        raise BatchItemError(index, error.message) from error
