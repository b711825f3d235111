"""Every 405 of the service names, in ``Allow``, exactly the methods its path serves (RFC 9110 §15.5.6).

OPTIONS, and any other method a path does not serve, is a 405 in the service's error shape whose
``Allow`` lists what the path takes, HEAD wherever GET is. The static files of ``/docs`` used to
answer a wrong method with an ``Allow`` naming every method, the refused one included, as the
console mounted beside them matches any method.
"""

from __future__ import annotations

import uuid

from kb_harness import API, LiveServer, World

from allowed_methods import allow_header, methods_by_path

_PROBES = ("OPTIONS", "PUT", "PATCH", "DELETE", "POST", "TRACE", "PROPFIND")


def _served(live: LiveServer) -> dict[str, set[str]]:
    """Every path of the service in its OpenAPI document (each parameter filled with one UUID) and
    the methods served there, by its own route and by any other whose pattern takes it
    (``/kb/{id}/documents/batch`` is also the path of a document called ``batch``)."""
    sample = str(uuid.uuid4())
    templates = [
        (path, {method.upper() for method in operations})
        for path, operations in live.client.get("/openapi.json").json()["paths"].items()
        if path.startswith(API)
    ]
    assert len(templates) > 10
    return methods_by_path(templates, sample)


def test_every_method_a_path_does_not_serve_is_405_naming_the_methods_it_does_OD_B01(
    live: LiveServer, world: World
) -> None:
    """OD-B01, OD-B03, OD-B04, KB-GEN-05: OPTIONS, TRACE, an unknown method, and each of PUT, PATCH,
    DELETE and POST where the path does not take it, are answered 405 with ``Allow`` naming exactly
    the path's methods (never the refused one) and a message naming the method."""
    for path, methods in sorted(_served(live).items()):
        for method in _PROBES:
            if method in methods:
                continue
            answer = live.client.request(method, path, headers=world["owner"].headers)
            assert answer.status_code == 405, (method, path, answer.status_code)
            assert answer.headers["allow"] == allow_header(methods), (method, path)
            body = answer.json()
            assert body["error"] == "Method Not Allowed"
            assert method in body["message"], body


def test_a_wrong_method_on_the_docs_static_files_names_get_and_head_KB_GEN_05(live: LiveServer) -> None:
    """KB-GEN-05: the files of the offline /docs page take GET and HEAD only, and say so."""
    for method in ("OPTIONS", "POST", "PUT", "DELETE"):
        answer = live.client.request(method, "/docs/static/swagger-ui.css")
        assert answer.status_code == 405, method
        assert answer.headers["allow"] == "GET, HEAD", method
        assert method in answer.json()["message"]
    assert live.client.get("/docs/static/swagger-ui.css").status_code == 200


def test_a_405_names_an_unprintable_or_very_long_path_without_echoing_it_OD_B23(live: LiveServer) -> None:
    """OD-B23, KB-GEN-05: the 405 message echoed the path as decoded, a NUL character or a path of
    thousands of characters included; such a path is now described, not repeated."""
    sample = str(uuid.uuid4())
    for path in (f"{API}/kb/%00{sample}", f"{API}/kb/{'9' * 5000}", f"{API}/kb/%ED%A0%80"):
        answer = live.client.post(path)
        assert answer.status_code == 405, path
        message = answer.json()["message"]
        assert message.isprintable() and "\ufffd" not in message, message
        assert len(message) < 300, len(message)
        assert "POST is not allowed on this path" in message and "use DELETE, GET, PATCH or PUT" in message
    readable = live.client.post(f"{API}/kb/{sample}").json()["message"]
    assert readable == f"POST is not allowed on {API}/kb/{sample}; use DELETE, GET, PATCH or PUT"
