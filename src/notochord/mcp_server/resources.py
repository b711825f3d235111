"""Documents as MCP resources, collections as resource templates.

Listed and read through the connection's ``ctx.knowledge``, with the same checks as the tools:

- ``resources/list`` holds the documents of the collections the connection can read (at most
  :data:`MAX_LISTED`), as ``notochord://documents/<ref>`` in the connection's own refs (K-CON-06);
  a collection it cannot read is left out, as ``collections_list`` leaves it out;
- ``resources/templates/list`` has one template per readable collection,
  ``notochord://collections/<collection ref>/documents/{key}``: the document with that key
  (percent-encoded);
- ``resources/read`` of a document the connection may not read is refused naming the permission;
  a ref that is not its own, or no document, reads as "resource not found" (K-CON-06: a foreign
  ref tells nothing). The refusal repeats the uri cut short (:func:`~notochord.mcp_server.echo.echoed`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Final
from urllib.parse import unquote

import anyio.to_thread
import mcp_types as types
from mcp.shared.exceptions import MCPError

from notochord.errors import GemNotFoundError, KnowledgeNotFoundError, KnowledgePermissionError, NotochordError
from notochord.gems.api.knowledge import KnowledgeApi
from notochord.mcp_server.echo import echoed

__all__ = ["DOCUMENT_URI", "MAX_LISTED", "RESOURCE_NOT_FOUND", "list_resources", "list_templates", "read_resource"]

DOCUMENT_URI: Final = "notochord://documents/"
MAX_LISTED: Final = 1000
RESOURCE_NOT_FOUND: Final = -32002
"""The MCP specification's error code for a resource that does not exist."""
_MIME: Final = "text/markdown"
_DOCUMENT = re.compile(r"notochord://documents/(?P<ref>[A-Za-z0-9_.~-]{1,500})")
_BY_KEY = re.compile(r"notochord://collections/(?P<col>[A-Za-z0-9_.~-]{1,500})/documents/(?P<key>[^/]{1,500})")


def _collection_name(builtin: str | None, name: str) -> str:
    return builtin or name


async def list_resources(knowledge: KnowledgeApi) -> list[types.Resource]:
    found: list[types.Resource] = []
    for collection in await knowledge.collections.list():
        if len(found) >= MAX_LISTED:
            break
        try:
            documents = await knowledge.documents.list(collection.ref)
        except (KnowledgePermissionError, KnowledgeNotFoundError):
            continue  # a collection it may write but not read: nothing to list
        for d in documents[: MAX_LISTED - len(found)]:
            found.append(
                types.Resource(
                    uri=DOCUMENT_URI + d.ref,
                    name=d.title or d.key or d.ref,
                    description=f"document in {_collection_name(collection.builtin, collection.name)}",
                    mime_type=_MIME,
                )
            )
    return found


async def list_templates(knowledge: KnowledgeApi) -> list[types.ResourceTemplate]:
    return [
        types.ResourceTemplate(
            uri_template=f"notochord://collections/{c.ref}/documents/{{key}}",
            name=_collection_name(c.builtin, c.name),
            description=f"the document with this key in the collection {_collection_name(c.builtin, c.name)}",
            mime_type=_MIME,
        )
        for c in await knowledge.collections.list()
    ]


def _not_found(uri: str) -> MCPError:
    shown = echoed(uri)
    return MCPError(RESOURCE_NOT_FOUND, f"resource not found: {shown}", {"uri": shown})


def _refused(error: KnowledgePermissionError) -> str:
    return f"refused: {error.message}"


async def read_resource(
    knowledge: KnowledgeApi, uri: str, *, refused: Callable[[KnowledgePermissionError], str] = _refused
) -> list[types.TextResourceContents | types.BlobResourceContents]:
    """The document at ``uri``; ``refused`` words a missing permission (it may read the store)."""
    document = _DOCUMENT.fullmatch(uri)
    by_key = _BY_KEY.fullmatch(uri)
    try:
        if document is not None:
            view = await knowledge.documents.get(document["ref"])
        elif by_key is not None:
            found = await knowledge.documents.get_by_key(by_key["col"], unquote(by_key["key"]))
            if found is None:
                raise _not_found(uri)
            view = found
        else:
            raise _not_found(uri)
    except KnowledgeNotFoundError:
        raise _not_found(uri) from None
    except KnowledgePermissionError as error:
        said = await anyio.to_thread.run_sync(partial(refused, error))
        raise MCPError(types.INVALID_REQUEST, said, {"permission": error.permission}) from None
    except GemNotFoundError:
        raise  # the session's connection was removed: the caller words it
    except NotochordError as error:
        raise MCPError(types.INVALID_PARAMS, error.message) from None
    text = f"# {view.title}\n\n{view.body or ''}" if view.title else view.body or ""
    return [types.TextResourceContents(uri=DOCUMENT_URI + view.ref, text=text, mime_type=_MIME)]
