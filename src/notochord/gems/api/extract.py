"""``ctx.extract``: document text for gems, from bytes they hold or a URL fetched through ``ctx.http``.

Rules (P-GEN-02, P-NET-10):

- Extraction itself is not a permission: every tool of every gem has ``ctx.extract``. Downloading a
  document (``from_url``) is a network request like any other: it goes through the very same
  ``ctx.http`` facade, so the gem's network permission, the user's rules, the per-hop redirect
  checks and the size and time bounds all apply.
- What is supported, the bounds and the output are those of :mod:`notochord.extraction`; the parsing
  runs in a reader process with a deadline and a memory ceiling (:mod:`notochord.extraction.isolated`),
  so a file built to be slow costs the host neither its responsiveness nor more than those bounds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import anyio.to_thread

from notochord.errors import KnowledgeValidationError, NetworkRequestError
from notochord.extraction.isolated import extract_isolated
from notochord.extraction.text import ExtractedDocument, url_filename
from notochord.knowledge.arguments import shown, text_or_none

if TYPE_CHECKING:
    from notochord.gems.api.http import HttpApi
    from notochord.gems.context import CapabilityRequest

__all__ = ["ExtractApi", "extract_isolated", "make_extract", "url_filename"]


class ExtractApi:
    """``ctx.extract`` of one run: document text from a URL (through ``ctx.http``) or from bytes."""

    def __init__(self, *, http: HttpApi) -> None:
        self._http = http

    async def from_url(self, url: str) -> ExtractedDocument:
        """Download a document with the gem's own network permission and extract its text.

        Raises:
            NetworkPermissionError: the download was refused (see ``ctx.http.fetch``).
            NetworkRequestError: the download failed or answered with a non-2xx status.
            KnowledgeValidationError: the document is unsupported, corrupt or has no text.
        """
        response = await self._http.fetch(url)
        if not response.ok:
            raise NetworkRequestError(
                f"{response.url} answered HTTP {response.status}; there is no document to extract"
            )
        body = response.bytes()
        document = await anyio.to_thread.run_sync(
            lambda: extract_isolated(
                body, filename=url_filename(response.url), content_type=response.header("content-type")
            )
        )
        return document.model_copy(update={"url": response.url})

    async def fromUrl(self, url: str) -> ExtractedDocument:  # noqa: N802  (the seed's name)
        return await self.from_url(url)

    async def from_bytes(
        self, data: bytes, *, filename: str | None = None, content_type: str | None = None
    ) -> ExtractedDocument:
        """Extract the text of a document the gem already holds (see :func:`extract_isolated`)."""
        named, typed = text_or_none("filename", filename), text_or_none("contentType", content_type)
        return await anyio.to_thread.run_sync(lambda: extract_isolated(data, filename=named, content_type=typed))

    async def fromBytes(  # noqa: N802  (the seed's style)
        self, data: bytes, options: dict[str, str | None] | None = None
    ) -> ExtractedDocument:
        given = options or {}
        if not isinstance(given, Mapping):
            raise KnowledgeValidationError(f"the options of fromBytes are an object, not {shown(given)}")
        return await self.from_bytes(data, filename=given.get("filename"), content_type=given.get("contentType"))

    def __repr__(self) -> str:
        return "<ctx.extract>"


def make_extract(request: CapabilityRequest) -> ExtractApi:
    """The capability factory of ``ctx.extract`` (register as ``space.gems.factories["extract"]``).

    Downloads use a ``ctx.http`` built exactly as :func:`~notochord.gems.api.http.make_http` builds
    the gem's own, so both are checked against the same permission and rules (P-NET-10).
    """
    from notochord.gems.api.http import make_http

    return ExtractApi(http=make_http(request))
