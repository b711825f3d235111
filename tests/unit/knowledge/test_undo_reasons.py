"""Each refused undo carries a stable reason code and the values its words need, beside the English
sentence the CLI, REST and MCP show unchanged (K-CHG-03, OD-K44).

A reader in another language (the console) words the code itself; the sentence stays what every
other edge has always shown, word for word.
"""

from __future__ import annotations

import pytest

from notochord import RevertError, Space
from refused_undos import REFUSED_UNDOS


def test_every_reason_but_other_is_one_a_refusal_below_carries() -> None:
    assert sorted(REFUSED_UNDOS) == sorted(set(RevertError.REASONS) - {"other"})


@pytest.mark.parametrize("reason", sorted(REFUSED_UNDOS))
def test_a_refused_undo_names_its_reason_and_values_and_keeps_its_english_sentence(space: Space, reason: str) -> None:
    """OD-K44: the refusal changes nothing; its message is the sentence every edge has shown."""
    refusal = REFUSED_UNDOS[reason](space)
    before = refusal.state()

    with pytest.raises(RevertError) as refused:
        space.changes.revert(refusal.change_id)

    assert (refused.value.reason, refused.value.values) == (reason, refusal.values)
    assert str(refused.value) == refused.value.message == refusal.message
    assert refused.value.code == "E_REVERT"
    assert space.changes.get(refusal.change_id).status == "applied"
    assert refusal.state() == before


def test_a_refusal_made_without_a_reason_is_other_with_no_values() -> None:
    refused = RevertError("superseded")
    assert (refused.reason, refused.values, str(refused)) == ("other", {}, "superseded")
