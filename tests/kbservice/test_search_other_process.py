"""A write made by another process is seen by the very next search request.

The server keeps the full-text index and the candidate sets of
every search in memory, and a search now reads the knowledge base, the caller's grant and the
passages in one snapshot. Another process writing to the same store — a second server, the CLI —
must still be seen at once: a document it adds or removes, and a grant it gives or takes away,
count on the next request to this server, after caches were warmed by searches before. The other
process is a real one, over the same data directory (SQLite) or the same database (PostgreSQL).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from kb_harness import SECRET, World

_WRITER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import notochord
    from notochord.kbservice import KbService
    from notochord.kbservice.actors import actor_from_claims
    from notochord.kbservice.policy import ResourceType
    from notochord.kbservice.validation import JsonBody
    from notochord.settings import Settings

    job = json.loads(sys.argv[1])
    data = Path(job["data_dir"])
    settings = Settings(data_dir=data, index_in_background=False, jwt_secret=job["secret"],
                        database_url=job["database_url"])
    with notochord.open(data, settings, embedder=None) as nc:
        service = KbService(nc)
        owner = actor_from_claims({"sub": job["owner"], "org": job["org"], "org_role": "owner"})
        if job["do"] == "add":
            raw = json.dumps({"title": "Late news", "content": job["content"]}).encode()
            print(service.documents.add_json(actor=owner, kb_id=job["kb"], raw=raw).id)
        elif job["do"] == "remove":
            service.documents.delete(actor=owner, kb_id=job["kb"], document_id=job["document"])
        elif job["do"] == "grant":
            body = JsonBody.of({"permission": "view"})
            service.grants.put(actor=owner, type=ResourceType.KB, resource_id=job["kb"], user_id=job["user"], body=body)
        else:
            service.grants.delete(actor=owner, type=ResourceType.KB, resource_id=job["kb"], user_id=job["user"])
    """
)


def _other_process(world: World, **job: str) -> str:
    live = world.live
    payload = {
        "data_dir": str(live.nc.data_dir),
        "database_url": live.nc.settings.database_url,
        "secret": SECRET,
        "owner": world["owner"].user,
        "org": world.a,
        **job,
    }
    done = subprocess.run(
        [sys.executable, "-c", _WRITER, json.dumps(payload)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _search(world: World, kb: str, who: str, query: str) -> tuple[int, list[str]]:
    response = world.request("POST", f"/kb/{kb}/search", world[who], json={"query": query, "limit": 100})
    if response.status_code != 200:
        return response.status_code, []
    return 200, [p["title"] for p in response.json()["results"]]


def test_a_document_added_or_removed_elsewhere_is_found_or_gone_on_the_next_search(world: World) -> None:
    """Warmed caches of this server do not hide another process's add or delete."""
    kb = world.create_kb()["id"]
    added = world.request("POST", f"/kb/{kb}/documents", world["owner"], json={"title": "Old", "content": "Parcels."})
    assert added.status_code == 201, added.text
    for _ in range(2):  # the index and the candidates are now held in memory
        assert _search(world, kb, "viewer", "parcels") == (200, ["Old"])
    document = _other_process(world, do="add", kb=kb, content="Parcels now also leave on Fridays.")
    assert sorted(_search(world, kb, "viewer", "parcels")[1]) == ["Late news", "Old"]
    assert _search(world, kb, "viewer", "fridays") == (200, ["Late news"])
    _other_process(world, do="remove", kb=kb, document=document)
    assert _search(world, kb, "viewer", "parcels") == (200, ["Old"])
    assert _search(world, kb, "viewer", "fridays") == (200, [])


def test_a_grant_given_or_taken_elsewhere_counts_on_the_next_search(world: World) -> None:
    """Permissions are read on every request, in the search's snapshot, never remembered."""
    kb = world.create_kb()["id"]
    added = world.request("POST", f"/kb/{kb}/documents", world["owner"], json={"title": "Old", "content": "Parcels."})
    assert added.status_code == 201, added.text
    assert _search(world, kb, "roleless", "parcels")[0] == 403
    _other_process(world, do="grant", kb=kb, user=world["roleless"].user)
    assert _search(world, kb, "roleless", "parcels") == (200, ["Old"])
    _other_process(world, do="revoke", kb=kb, user=world["roleless"].user)
    assert _search(world, kb, "roleless", "parcels")[0] == 403
