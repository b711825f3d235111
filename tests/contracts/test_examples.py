"""The example gems carry the seed's code unchanged: byte for byte what SPEC §27 quotes.

EX-14 is ``examples/weather/tools/home.mjs``, EX-15 is ``examples/recipes/tools/rate.js`` and
EX-01 is ``examples/recipes/manifest.json``. SPEC §27 states its examples keep every character of
the sources, so any edit to an example (a reformat, a semicolon) is a drift from the seed and fails
here. The specification is read from ``../shared/SPEC.md`` beside the repository; without it this
contract cannot be checked, which is a failure, not a skip.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT.parent / "shared" / "SPEC.md"

CASES = [
    ("EX-14", "js", ROOT / "examples" / "weather" / "tools" / "home.mjs"),
    ("EX-15", "js", ROOT / "examples" / "recipes" / "tools" / "rate.js"),
    ("EX-01", "json", ROOT / "examples" / "recipes" / "manifest.json"),
]


def _spec_text() -> str:
    if not SPEC.is_file():
        pytest.fail(
            f"SPEC.md not found at {SPEC}: the example contracts are checked against ../shared/SPEC.md "
            "beside the repository; put the shared folder there (CI does)"
        )
    return SPEC.read_text(encoding="utf-8")


def quoted_block(spec: str, example: str, language: str) -> str:
    """The first ``language`` fenced block under the ``### <example> ·`` heading, without its fences."""
    heading = re.search(rf"^### {re.escape(example)} ·.*$", spec, flags=re.MULTILINE)
    if heading is None:
        pytest.fail(f"SPEC.md has no heading '### {example} ·'")
    following = spec[heading.end() :]
    next_heading = re.search(r"^#{1,3} ", following, flags=re.MULTILINE)
    section = following[: next_heading.start()] if next_heading else following
    block = re.search(rf"^```{language}\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    if block is None:
        pytest.fail(f"SPEC.md {example} has no ```{language} block")
    return block.group(1)


@pytest.mark.parametrize(("example", "language", "path"), CASES, ids=[c[0] for c in CASES])
def test_example_file_is_byte_identical_to_the_spec_quote(example: str, language: str, path: Path) -> None:
    """EX-01, EX-14, EX-15: the file is the quoted block, ending with one newline."""
    expected = quoted_block(_spec_text(), example, language).encode("utf-8")
    actual = path.read_bytes()
    assert actual == expected, (
        f"{path.relative_to(ROOT)} differs from SPEC §27 {example}; restore the seed's text exactly\n"
        f"--- SPEC\n{expected.decode()}--- file\n{actual.decode('utf-8', 'replace')}"
    )


def test_quoted_blocks_are_the_ones_the_examples_claim() -> None:
    """A guard on the extraction itself: each block is the code its example is about."""
    spec = _spec_text()
    assert "ctx.knowledge.profile.get('location.home')" in quoted_block(spec, "EX-14", "js")
    assert "collections.create('Recipes')" in quoted_block(spec, "EX-15", "js")
    assert '"entry": "tools/rate.js",' in quoted_block(spec, "EX-01", "json")
