"""The one helper every human listing passes stored strings through (see tests/e2e/test_cli_terminal_escapes.py).

It escapes exactly the characters a terminal acts on instead of showing: C0 and C1 controls, DEL,
and the Unicode bidi embeddings, overrides and isolates. Everything else, any script included,
is printed as stored.
"""

from __future__ import annotations

import pytest

from notochord.cli.common import printable, printable_text


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        pytest.param("plain name", "plain name", id="plain-text-unchanged"),
        pytest.param("Zhang San 张三 — café", "Zhang San 张三 — café", id="non-ascii-unchanged"),
        pytest.param("a\x1bb", "a\\u001bb", id="escape"),
        pytest.param("a\x00b\x7fc", "a\\u0000b\\u007fc", id="nul-and-delete"),
        pytest.param("a\x85b\x9fc", "a\\u0085b\\u009fc", id="c1-controls"),
        pytest.param("a\tb\r\nc", "a\\u0009b\\u000d\\u000ac", id="tab-and-line-breaks"),
        pytest.param(
            "".join(map(chr, [0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069])),
            "\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069",
            id="bidi-embeddings-overrides-isolates",
        ),
    ],
)
def test_printable_escapes_exactly_what_a_terminal_would_act_on(stored: str, shown: str) -> None:
    assert printable(stored) == shown


def test_printable_text_keeps_line_breaks_and_tabs_of_a_body() -> None:
    assert printable_text("one\n\ttwo\x1b[2J\r") == "one\n\ttwo\\u001b[2J\\u000d"


def test_printable_accepts_any_value() -> None:
    assert printable(42) == "42"
