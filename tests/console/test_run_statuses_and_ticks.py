"""The console shows every run status the runner records, and refuses the ticks the runner's gem
service refuses.

- A run whose process ended without recording its end is listed ``interrupted``, with its label,
  never ``running``.
- The "Collections you choose" action exists only for gems that request a ``user-selected``
  collections permission (K-UI-10); a tick posted for any other gem is not found and records nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa
from console_harness import ConsoleServer, csrf_of

from notochord.console.i18n import LABELS
from notochord.db.schema import runs
from notochord.gems.runner import RUN_STATUSES
from notochord.knowledge.writes import USER


def test_every_run_status_the_runner_records_has_a_label_in_both_languages() -> None:
    missing = [status for status in RUN_STATUSES if f"run_status_{status}" not in LABELS]
    assert missing == []
    assert all(all(LABELS[f"run_status_{status}"]) for status in RUN_STATUSES)


def test_a_run_whose_process_is_gone_is_listed_interrupted(console: ConsoleServer) -> None:
    # recorded as a process that died before recording its end leaves it: running, no lease held
    with console.space.core.store.write(actor=USER, run_id=None) as tx:
        tx.conn.execute(
            sa.insert(runs).values(id="run-gone", gem_id="weather", tool="home", status="running", started_at=tx.now)
        )
    html = console.client().get("/runs").text
    assert 'class="change status-interrupted"' in html
    assert ">interrupted<" in html
    assert ">running<" not in html


def test_a_tick_for_a_gem_that_asks_for_no_chosen_collections_is_not_found(
    console: ConsoleServer, tmp_path: Path
) -> None:
    folder = tmp_path / "keeper"
    folder.mkdir()
    manifest = {
        "id": "keeper",
        "name": "keeper",
        "permissions": {"knowledge": {"permissions": ["collections.read:keep"], "reason": "Read keep"}},
    }
    (folder / "notochord.json").write_text(json.dumps(manifest), encoding="utf-8")
    console.space.gems.install(folder)
    travel = console.space.user.collections.create("Travel")
    client = console.client()
    page = client.get("/gems/keeper").text
    assert "Collections you choose" not in page
    answer = client.post("/gems/keeper/ticks", data={"csrf": csrf_of(page), "collection": str(travel.id), "on": "1"})
    assert answer.status_code == 404
    assert console.space.core.collections.ticked_now("keeper") == set()
