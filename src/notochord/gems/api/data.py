"""``ctx.data``: the gem's own documents and blobs (P-STOR-02, 09, 10).

- ``documents``: ``.md`` / ``.txt`` text files, stored as plain text so the user can read them
  (P-STOR-10). Names are ``/``-separated plain segments ending in ``.md`` or ``.txt``.
- ``blobs``: bytes, encrypted with the gem's key (AES-256-GCM, the name bound in as associated data,
  P-STOR-09).

Both live in the gem's private folder and are reached exactly as ``ctx.storage`` is (see
:mod:`notochord.gems.api.storage`): by the gem id of the run, checked against the installation.
Names that climb out (``..``), are absolute or hidden are refused with ``E_PERM_DENIED``; a missing
document or blob is ``E_NOT_FOUND``. ``list(prefix)`` names those starting with ``prefix`` (the
start of a name, folders and all, as ``ctx.storage.kv.list``), and is refused (``E_FILE``) once
their names pass what one answer may carry (32 MB), saying to list by longer prefixes.
"""

from __future__ import annotations

from notochord.errors import FileError
from notochord.gems.api.storage import StoreAccess
from notochord.gems.context import CapabilityRequest

__all__ = ["BlobsApi", "DataApi", "DocumentsApi", "make_data"]


class DocumentsApi:
    """``ctx.data.documents``: the gem's plain-text documents."""

    __slots__ = ("_access",)

    def __init__(self, access: StoreAccess) -> None:
        self._access = access

    async def write(self, name: str, text: str) -> None:
        if not isinstance(text, str):
            raise FileError(f"the document {name} takes text, not {type(text).__name__}")
        await self._access.run(lambda s: s.documents.write(name, text))

    async def read(self, name: str) -> str:
        return await self._access.run(lambda s: s.documents.read(name))

    async def list(self, prefix: str = "") -> list[str]:
        """Names of the documents starting with ``prefix``, sorted; refused in words when there are
        more than one answer may carry (list them by longer prefixes then)."""
        return await self._access.run(lambda s: s.documents.list(prefix))

    async def delete(self, name: str) -> bool:
        """Delete a document; returns whether it existed."""
        return await self._access.run(lambda s: s.documents.delete(name))


class BlobsApi:
    """``ctx.data.blobs``: the gem's encrypted binary values."""

    __slots__ = ("_access",)

    def __init__(self, access: StoreAccess) -> None:
        self._access = access

    async def put(self, name: str, data: bytes) -> None:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise FileError(f"the blob {name} takes bytes, not {type(data).__name__}")
        payload = bytes(data)
        await self._access.run(lambda s: s.blobs.put(name, payload))

    async def get(self, name: str) -> bytes:
        return await self._access.run(lambda s: s.blobs.get(name))

    async def delete(self, name: str) -> bool:
        """Delete a blob; returns whether it existed."""
        return await self._access.run(lambda s: s.blobs.delete(name))

    async def list(self, prefix: str = "") -> list[str]:
        """Names of the blobs starting with ``prefix``, sorted; refused in words when there are
        more than one answer may carry (list them by longer prefixes then)."""
        return await self._access.run(lambda s: s.blobs.list(prefix))


class DataApi:
    """``ctx.data``: ``documents`` and ``blobs``."""

    __slots__ = ("blobs", "documents")

    def __init__(self, access: StoreAccess) -> None:
        self.documents = DocumentsApi(access)
        self.blobs = BlobsApi(access)


def make_data(request: CapabilityRequest) -> DataApi:
    """The ``data`` capability factory: register as ``space.gems.factories["data"]``."""
    return DataApi(StoreAccess.of(request))
