"""Every network, resource, file and storage requirement is named by some test.

The requirements are read from ``../shared/SPEC.md`` (beside the repository); each ID defined there
as ``**P-NET-xx**``, ``**P-RES-xx**``, ``**P-FILE-xx**`` or ``**P-STOR-xx**`` must appear, by its
full name, in the text of some test file under ``tests/`` (a range such as ``P-FILE-21…25`` names only
its ends). The few requirements about parts outside this code (the gem page, the agent runtime,
plan mode) are listed in :data:`EXEMPT` with the reason; an exempt ID that gains a test must leave
the list, so the list never hides a requirement that is in fact covered.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import pytest

REPO: Final = Path(__file__).resolve().parents[2]
SPEC: Final = REPO.parent / "shared" / "SPEC.md"
TESTS: Final = REPO / "tests"
FAMILIES: Final = ("NET", "RES", "FILE", "STOR")
_DEFINED: Final = re.compile(r"\*\*(P-(?:NET|RES|FILE|STOR)-\d+)\*\*")

EXEMPT: Final[dict[str, str]] = {
    "P-FILE-28": "an agent's built-in fs.* platform tools belong to the agent runtime, not to ctx.files",
    "P-STOR-05": "sideEffect checking belongs to the tool runner and plan mode, not to storage",
    "P-STOR-06": "plan mode (running read tools before approval) belongs to the agent runtime",
    "P-STOR-07": "the read declaration is the gem's promise, judged by quality review, not enforced here",
}


def _spec_ids() -> list[str]:
    if not SPEC.is_file():
        pytest.fail(
            f"the requirements file {SPEC} is missing: the spec coverage check reads the P-NET, P-RES, "
            "P-FILE and P-STOR IDs from ../shared/SPEC.md next to the repository; put it there"
        )
    return list(dict.fromkeys(_DEFINED.findall(SPEC.read_text(encoding="utf-8"))))


def _test_texts() -> dict[Path, str]:
    this = Path(__file__).resolve()
    return {path: path.read_text(encoding="utf-8") for path in sorted(TESTS.rglob("*.py")) if path.resolve() != this}


def _named(requirement: str, text: str) -> bool:
    return re.search(rf"{re.escape(requirement)}(?!\d)", text) is not None


def test_the_spec_defines_every_family() -> None:
    ids = _spec_ids()
    for family in FAMILIES:
        assert any(i.startswith(f"P-{family}-") for i in ids), f"SPEC.md defines no P-{family} ID"


def test_every_requirement_is_named_by_a_test_or_exempt_with_a_reason() -> None:
    """P-NET, P-RES, P-FILE, P-STOR: each ID is covered by name (acceptance of both issues)."""
    texts = _test_texts()
    missing = [i for i in _spec_ids() if i not in EXEMPT and not any(_named(i, t) for t in texts.values())]
    assert missing == [], (
        "these requirements are named by no test under tests/: "
        + ", ".join(missing)
        + "; write a test that asserts the behaviour and cite the ID in its name or docstring"
    )


def test_the_exemptions_are_real_ids_with_reasons_and_no_test() -> None:
    ids = set(_spec_ids())
    texts = _test_texts()
    for requirement, reason in EXEMPT.items():
        assert requirement in ids, f"{requirement} is exempt but SPEC.md does not define it"
        assert len(reason.split()) >= 5, f"{requirement} needs a reason"
        tested = [str(p.relative_to(REPO)) for p, t in texts.items() if _named(requirement, t)]
        assert tested == [], f"{requirement} is tested in {tested}; take it off the exemption list"
