"""Per-gem keys, derived from the space's master key (HKDF-SHA256).

Each installation of a gem has a random salt stored with it; every key of that installation is
``HKDF(master key, salt, info = purpose ‖ gem id)``. Uninstall deletes the salt, so keys of an
earlier installation can never be derived again: its refs stop resolving and its private storage
cannot be decrypted (K-UNINST-03/11).
"""

from __future__ import annotations

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["derive_key"]


def derive_key(master_key: bytes, *, salt: bytes, gem_id: str, purpose: str, length: int = 32) -> bytes:
    """A key for one purpose (``"refs"``, ``"storage"``) of one gem installation."""
    return HKDF(
        algorithm=hashes.SHA256(),
        length=length,
        salt=salt,
        info=f"notochord/{purpose}/{gem_id}".encode(),
    ).derive(master_key)
