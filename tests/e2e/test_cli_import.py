"""``notochord docs import`` of every file a person has: HTML, PDF and Word next to Markdown and text.

Real files are written to disk (a DOCX by python-docx, a PDF by hand with a correct cross-reference
table, HTML as a browser saves it) and imported through the root CLI application against a real
data directory, full text only (``NOTOCHORD_EMBEDDER=none``). Covers K-DOC-02, K-DOC-03, K-DOC-05.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from cli_harness import Cli, initialised

from notochord.cli import app
from notochord.extraction import isolated as isolated_extraction
from pdf_files import pdf_file, slow_pdf

PAGE = b"""<!DOCTYPE html>
<html><head><title>Sourdough starter</title><script>track("x")</script></head>
<body><nav>Home | Recipes</nav><h1>Feeding the starter</h1>
<p>Feed the levain with rye flour and water every morning.</p></body></html>"""


def _pdf(lines: Sequence[str], *, title: str) -> bytes:
    """A one-page PDF with a Helvetica text layer; offsets in the xref table are the real ones."""
    text = "BT /F1 12 Tf 72 720 Td 14 TL " + " T* ".join(f"({line}) Tj" for line in lines) + " ET"
    content = text.encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        f"<< /Title ({title}) >>".encode("latin-1"),
    ]
    return pdf_file(objects, info=len(objects))


def _docx(title: str, paragraphs: Sequence[str]) -> bytes:
    import docx

    document = docx.Document()
    document.add_heading(title, level=0)
    for text in paragraphs:
        document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return initialised(tmp_path / "vault")


@pytest.fixture
def files(tmp_path: Path) -> Path:
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "page.html").write_bytes(PAGE)
    (folder / "budget.pdf").write_bytes(_pdf(["Budget 2027", "Travel: 1200 euro"], title="Budget plan"))
    (folder / "minutes.docx").write_bytes(_docx("Board minutes", ["We agreed to repaint the shed in June."]))
    return folder


def test_html_pdf_and_docx_are_imported_with_the_extraction_of_the_kb_service(cli: Cli, files: Path) -> None:
    """The three files once answered "skipped"; now each becomes a searchable
    document titled as the extraction finds it, with the extracted text as body."""
    summary = cli.json("docs", "import", str(files))
    assert (summary["created"], summary["skipped"], summary["failed"]) == (3, 0, 0)
    listed = {d["title"]: d for d in cli.json("docs", "list")}
    assert set(listed) == {"Sourdough starter", "Budget plan", "Board minutes"}
    assert listed["Budget plan"]["meta"] == {"path": "budget.pdf"}

    page = cli.json("docs", "show", str(listed["Sourdough starter"]["id"]))["body"]
    assert page == "# Feeding the starter\n\nFeed the levain with rye flour and water every morning."
    assert "track(" not in page and "Recipes" not in page
    assert "Travel: 1200 euro" in cli.json("docs", "show", str(listed["Budget plan"]["id"]))["body"]

    assert [h["title"] for h in cli.json("search", "levain")] == ["Sourdough starter"]
    assert [h["title"] for h in cli.json("search", "travel")] == ["Budget plan"]
    assert [h["title"] for h in cli.json("search", "repaint shed")] == ["Board minutes"]


def test_a_file_named_directly_is_imported_whatever_its_kind(cli: Cli, files: Path) -> None:
    """``docs import budget.pdf`` imports it."""
    result = cli.run("docs", "import", str(files / "budget.pdf"))
    assert f"created   {files / 'budget.pdf'}" in result.stdout
    assert "imported 1 file into keep: 1 created" in result.stdout


def test_importing_again_updates_a_changed_file_and_leaves_the_others_unchanged(
    cli: Cli, files: Path, tmp_path: Path
) -> None:
    """K-DOC-03: the path relative to the folder named identifies a file within
    the collection, so importing again never duplicates; the changed file keeps its document id."""
    first = {d["path"]: d["id"] for d in cli.json("docs", "import", str(files))["documents"]}
    (files / "minutes.docx").write_bytes(_docx("Board minutes", ["We agreed to paint the shed green."]))

    again = cli.json("docs", "import", str(files))
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 1, 2)
    statuses = {d["path"]: (d["status"], d["id"]) for d in again["documents"]}
    assert statuses[str(files / "minutes.docx")] == ("updated", first[str(files / "minutes.docx")])
    assert statuses[str(files / "page.html")] == ("unchanged", first[str(files / "page.html")])
    assert len(cli.json("docs", "list")) == 3
    assert [h["title"] for h in cli.json("search", "green")] == ["Board minutes"]
    assert cli.json("search", "repaint") == []

    # the same file named directly has the same relative path: its name
    direct = cli.json("docs", "import", str(files / "page.html"))
    assert direct["documents"][0]["status"] == "unchanged"
    assert len(cli.json("docs", "list")) == 3

    human = cli.run("docs", "import", str(files)).stdout
    assert f"unchanged {files / 'budget.pdf'}" in human
    assert "imported 3 files into keep: 0 created, 0 updated, 3 unchanged" in human


def test_imported_documents_stay_movable_and_as_new_creates_copies(cli: Cli, files: Path) -> None:
    """Deduplication needs no key, so ``docs move`` still works (K-DOC-19);
    ``--as-new`` imports a second copy on purpose."""
    [doc] = cli.json("docs", "import", str(files / "page.html"))["documents"]
    cli.run("collections", "create", "Baking")
    cli.run("docs", "move", str(doc["id"]), "Baking")
    copies = cli.json("docs", "import", str(files / "page.html"), "--as-new")
    assert copies["created"] == 1
    cli.json("docs", "import", str(files / "page.html"), "--as-new")
    assert len(cli.json("docs", "list", "keep")) == 2


def test_two_files_with_the_same_relative_path_in_one_import_are_not_merged(cli: Cli, tmp_path: Path) -> None:
    """The second file would overwrite the first, so it is refused with what to do."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "todo.txt").write_text(f"list {name}\n", encoding="utf-8")
    summary = cli.json("docs", "import", str(tmp_path / "a"), str(tmp_path / "b"), code=2)
    assert (summary["created"], summary["failed"]) == (1, 1)
    [failure] = summary["failures"]
    assert failure["path"] == str(tmp_path / "b" / "todo.txt")
    assert "same relative path 'todo.txt'" in failure["error"]
    assert "another collection" in failure["error"]


def test_unsupported_hidden_and_empty_files_are_listed_as_skipped_with_the_reason(cli: Cli, tmp_path: Path) -> None:
    """An unsupported file is named with the supported kinds, an empty file is
    skipped with a note, and nothing is written for either."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n\nkeep this\n", encoding="utf-8")
    (folder / "empty.md").write_text("", encoding="utf-8")
    (folder / "blank.txt").write_text("  \n\n", encoding="utf-8")
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n")
    (folder / ".secret.md").write_text("# hidden\n", encoding="utf-8")

    summary = cli.json("docs", "import", str(folder))
    assert summary["created"] == 1
    reasons = {Path(s["path"]).name: s["reason"] for s in summary["skippedFiles"]}
    assert set(reasons) == {"empty.md", "blank.txt", "empty.pdf", "photo.png", ".secret.md"}
    assert reasons[".secret.md"] == "hidden"
    assert reasons["empty.md"].startswith("empty")
    assert reasons["empty.pdf"].startswith("empty")
    assert ".png files are not supported" in reasons["photo.png"]
    for kind in ("Markdown", "text", "HTML", "PDF", "Word (.docx)"):
        assert kind in reasons["photo.png"]
    assert [d["title"] for d in cli.json("docs", "list")] == ["Notes"]

    alone = cli.run("docs", "import", str(folder / "photo.png"), code=2)
    assert f"skipped   {folder / 'photo.png'}: not imported: .png files are not supported" in alone.stdout
    assert "nothing was imported; skipped 1" in alone.stdout
    assert "empty" in cli.run("docs", "import", str(folder / "empty.md"), code=2).stdout


def test_a_pipe_or_a_link_to_nothing_is_skipped_for_what_it_is(cli: Cli, tmp_path: Path) -> None:
    """K-DOC-02: a named pipe is skipped without waiting on it, and a link whose target is gone is
    called that; both used to read ".md files are not supported", and a pipe named on the command
    line "no such file or folder"."""
    folder = tmp_path / "odd"
    folder.mkdir()
    (folder / "notes.md").write_text("# Notes\n", encoding="utf-8")
    os.mkfifo(folder / "pipe.md")
    (folder / "gone.md").symlink_to(folder / "deleted.md")

    summary = cli.json("docs", "import", str(folder), str(folder / "pipe.md"))
    assert summary["created"] == 1
    reasons = [(Path(s["path"]).name, s["reason"]) for s in summary["skippedFiles"]]
    assert sorted(reasons) == [
        ("gone.md", "not imported: a link to nothing (its target does not exist)"),
        ("pipe.md", "not imported: not a file but a pipe, socket or device"),
        ("pipe.md", "not imported: not a file but a pipe, socket or device"),
    ]


def test_a_link_to_a_file_outside_the_folder_is_not_followed_K_DOC_02(cli: Cli, tmp_path: Path) -> None:
    """A folder from elsewhere (an unpacked archive) cannot import a private file through a link named
    like a note; a link to a file inside the folder is imported, and so is a link named directly."""
    secret = tmp_path / "id_key"
    secret.write_text("-----BEGIN PRIVATE KEY-----\nsecret\n", encoding="utf-8")
    folder = tmp_path / "unpacked"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "real.md").write_text("# Real\n\ninside the folder\n", encoding="utf-8")
    (folder / "notes.md").symlink_to(secret)
    (folder / "alias.md").symlink_to(folder / "sub" / "real.md")

    summary = cli.json("docs", "import", str(folder))
    assert summary["created"] == 2
    assert [(Path(s["path"]).name, s["reason"]) for s in summary["skippedFiles"]] == [
        ("notes.md", f"not imported: a link to a file outside the folder ({secret}), not followed")
    ]
    assert "secret" not in cli.run("search", "PRIVATE KEY secret", "--json").stdout

    named = cli.json("docs", "import", str(folder / "notes.md"))
    assert named["created"] == 1


def test_a_pdf_built_to_be_slow_fails_at_the_deadline_and_the_other_files_are_imported(
    cli: Cli, files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """K-DOC-02: a file that would keep the reader busy for minutes is stopped and named as failed."""
    monkeypatch.setattr(isolated_extraction, "EXTRACT_SECONDS", 1.0)
    (files / "slow.pdf").write_bytes(slow_pdf(pages=20, stream_bytes=1_000_000))
    result = cli.run("docs", "import", str(files), code=2)
    assert f"failed: {files / 'slow.pdf'}: cannot extract text from slow.pdf: reading it took longer than 1 s" in (
        result.stderr
    )
    assert "imported 3 files" in result.stdout


def test_a_damaged_pdf_fails_with_the_reason_and_the_other_files_are_imported(cli: Cli, files: Path) -> None:
    """Extraction errors are the project's clear messages, one file at a time."""
    (files / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not a pdf at all")
    result = cli.run("docs", "import", str(files), code=2)  # one file failed
    assert f"failed: {files / 'broken.pdf'}: cannot extract text from broken.pdf: the PDF is damaged" in result.stderr
    assert "imported 3 files" in result.stdout
    assert "1 failed" in result.stdout


def test_help_says_which_kinds_are_imported_and_how_a_file_is_recognised_again(cli: Cli) -> None:
    """The deduplication key is documented where people look."""
    text = " ".join(cli.runner.invoke(app, ["docs", "import", "--help"]).stdout.split())
    for kind in ("Markdown", "HTML", "PDF", "Word"):
        assert kind in text
    assert "relative to the folder" in text
    assert "--as-new" in text
