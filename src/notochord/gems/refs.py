"""Opaque per-gem refs: deterministic authenticated encryption of internal ids (DESIGN §4).

``ref = "<type>_" + base64url(AES-SIV(key_gem, id as 8 bytes, associated data = type))``

- The same object gives the same ref to the same gem installation and a different ref to any other
  gem (K-CON-05/06). Nothing is stored and reads write nothing.
- A ref of another gem, a forged or truncated ref, or a ref of the wrong type fails authentication
  and reads as "not found" (OD-K08): a gem cannot tell a foreign ref from a deleted object.
- A codec remembers the refs it made and the refs it authenticated (the cipher is deterministic, so
  the answer can never change), which spares the cipher on every call of the same gem with the same
  refs. Only that installation's codec holds them; a ref that failed is never remembered.
"""

from __future__ import annotations

import base64
import binascii
from typing import Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESSIV

from notochord.errors import KnowledgeNotFoundError

__all__ = ["REF_TYPES", "RefCodec", "RefType"]

_KEPT = 8192

RefType = Literal["ent", "fact", "doc", "col", "chg"]
REF_TYPES: dict[RefType, str] = {
    "ent": "entity",
    "fact": "fact",
    "doc": "document",
    "col": "collection",
    "chg": "change",
}


class RefCodec:
    """Encodes and decodes the refs of one gem installation."""

    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError("a ref key is 32 bytes")
        self._siv = AESSIV(key)
        # (type, id) → ref and (type, ref) → id, emptied together when full, so both stay bounded
        self._refs: dict[tuple[str, int], str] = {}
        self._ids: dict[tuple[str, str], int] = {}

    def encode(self, ref_type: RefType, internal_id: int) -> str:
        key = (ref_type, internal_id)
        found = self._refs.get(key)
        if found is None:
            sealed = self._siv.encrypt(internal_id.to_bytes(8, "big", signed=False), [ref_type.encode()])
            found = f"{ref_type}_{base64.urlsafe_b64encode(sealed).rstrip(b'=').decode()}"
            self._make_room()
            self._refs[key] = found
            self._ids[(ref_type, found)] = internal_id
        return found

    def decode(self, ref_type: RefType, ref: object) -> int:
        """The internal id behind ``ref``; raises ``not found: no <object>`` for anything else."""
        if isinstance(ref, str):
            known = self._ids.get((ref_type, ref))
            if known is not None:
                return known
        internal_id = self._open(ref_type, ref)
        # only refs → ids: a ref spelt another way that opens to the same id must not become the
        # spelling encode hands out
        self._make_room()
        self._ids[(ref_type, str(ref))] = internal_id
        return internal_id

    def _make_room(self) -> None:
        if len(self._refs) >= _KEPT or len(self._ids) >= _KEPT:
            self._refs.clear()
            self._ids.clear()

    def _open(self, ref_type: RefType, ref: object) -> int:
        missing = KnowledgeNotFoundError(REF_TYPES[ref_type])
        if not isinstance(ref, str) or not ref.startswith(f"{ref_type}_") or len(ref) > 100:
            raise missing
        token = ref[len(ref_type) + 1 :]
        try:
            sealed = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            plain = self._siv.decrypt(sealed, [ref_type.encode()])
        except (InvalidTag, binascii.Error, ValueError):
            raise missing from None
        if len(plain) != 8:
            raise missing
        return int.from_bytes(plain, "big")
