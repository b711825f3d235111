"""The console's words for why a file rollback left a path alone, one sentence per reason code of
the file history, in English and Chinese (P-FILE-25, K-UI-11).

The file history gives each reason a code with its values and an English sentence for the command
line; the console says it in the reader's language, and falls back to that English sentence for a
code it has no words for, so a new code is never shown as a blank or a crash.
"""

from __future__ import annotations

import string

import pytest

from notochord.console.i18n import LABELS
from notochord.console.views.runs import skipped_paths
from notochord.files.history import RollbackReport, SkipReason
from notochord.files.skips import CODES

WORDED = [code for code in CODES if code != "other"]


def _placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


@pytest.mark.parametrize("code", WORDED)
def test_every_reason_code_has_words_in_both_languages_with_the_same_values(code: str) -> None:
    english, chinese = LABELS[f"skip_{code}"]
    assert english and chinese
    assert _placeholders(english) == _placeholders(chinese)


def _report(*reasons: SkipReason) -> RollbackReport:
    paths = tuple(f"workspace:{n}.md" for n in range(len(reasons)))
    return RollbackReport(
        run_id="r-1", restored=(), skipped=paths, skip_reasons=tuple(zip(paths, reasons, strict=True))
    )


def test_a_reason_is_said_in_chinese_with_its_values_and_kept_in_english_for_the_command_line() -> None:
    moved = SkipReason.of(
        "later_run_moved",
        "run r-2 later moved workspace:a to workspace:b; roll that run back first",
        run="r-2",
        path="workspace:a",
        to="workspace:b",
    )
    report = _report(moved)

    assert skipped_paths(report, "zh") == [
        ("workspace:0.md", "运行 r-2 后来把 workspace:a 移到了 workspace:b;请先恢复那次运行")
    ]
    assert skipped_paths(report, "en") == [("workspace:0.md", moved.text)]
    assert report.reasons == (("workspace:0.md", moved.text),)
    assert report.reason("workspace:0.md") == moved.text


@pytest.mark.parametrize(
    "reason",
    [
        SkipReason.of("other", "could not move it to the trash: Permission denied", detail="Permission denied"),
        SkipReason.of("a_code_from_a_newer_version", "it stays as it is"),
        SkipReason.of("later_run_changed", "run r-2 later changed it; roll that run back first", run="r-2"),
    ],
    ids=["other", "unknown-code", "missing-value"],
)
def test_a_reason_without_words_of_the_console_keeps_its_english_sentence(reason: SkipReason) -> None:
    assert skipped_paths(_report(reason), "zh") == [("workspace:0.md", reason.text)]
