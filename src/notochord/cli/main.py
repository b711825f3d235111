"""The root command: global options, ``init`` and ``status``, and the sub-command groups."""

from __future__ import annotations

from pathlib import Path

import typer

from notochord.cli import (
    changes_cmd,
    collections_cmd,
    console_cmd,
    docs_cmd,
    entities_cmd,
    facts_cmd,
    files_cmd,
    gem_cmd,
    network_cmd,
    runs_cmd,
    search_cmd,
    serve_cmd,
)
from notochord.cli.common import DataDir, JsonFlag, emit, opened, state

__all__ = ["app", "main"]

app = typer.Typer(
    name="notochord",
    help="A knowledge vault you own: facts, entities, documents, and the gems allowed to use them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(facts_cmd.app, name="facts")
app.add_typer(entities_cmd.app, name="entities")
app.add_typer(changes_cmd.app, name="changes")
gem_cmd.app.command("run")(runs_cmd.run)
app.add_typer(gem_cmd.app, name="gem")
app.add_typer(runs_cmd.app, name="runs")
app.add_typer(files_cmd.app, name="files")
app.add_typer(network_cmd.app, name="network")
app.add_typer(docs_cmd.app, name="docs")
app.add_typer(collections_cmd.app, name="collections")
app.command()(search_cmd.search)
app.command()(search_cmd.reindex)
app.command("serve")(serve_cmd.serve)
app.command("token")(serve_cmd.token)
app.command("console-url")(console_cmd.console_url)


@app.callback()
def _root(data_dir: DataDir = None) -> None:
    state.data_dir = data_dir


@app.command()
def init(data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Create the data directory, its master key and the personal space (idempotent)."""
    with opened(data_dir) as nc:
        space = nc.personal
        result = {
            "dataDir": str(Path(nc.data_dir).resolve()),
            "spaces": nc.spaces(),
            "personal": str(space.path),
        }
    emit(result, as_json=as_json, text=f"notochord data directory ready at {result['dataDir']}")


@app.command()
def status(data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Show every space with its counts of current facts, entities and changes."""
    with opened(data_dir) as nc:
        nc.personal  # noqa: B018  (make sure the personal space exists before listing)
        rows = [
            (nc.personal if name == "personal" else nc.org(name.removeprefix("org:"))).status() for name in nc.spaces()
        ]
        data_dir_text = str(Path(nc.data_dir).resolve())
    if as_json:
        emit({"dataDir": data_dir_text, "spaces": rows}, as_json=True)
        return
    lines = [f"data directory: {data_dir_text}"]
    lines += [
        f"  {r['space']:<20} facts {r['facts']:>7}   entities {r['entities']:>6}   "
        f"documents {r['documents']:>6}   collections {r['collections']:>4}   changes {r['changes']:>7}"
        for r in rows
    ]
    emit(None, as_json=False, text="\n".join(lines))


def main() -> None:
    app()
