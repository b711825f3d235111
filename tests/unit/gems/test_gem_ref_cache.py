"""A gem's refs are sealed and opened once per installation, and stay exactly as strict.

Opening a ref with AES-SIV
was a large part of the gem path's extra cost. The cipher is deterministic, so a codec remembers
what it sealed and what it opened; these cases count the cipher's calls and check that forged,
foreign and mistyped refs are still "not found" every time (K-CON-05, K-CON-06, OD-K08).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESSIV
from gem_fixtures import install_gem

from notochord import KnowledgeNotFoundError, Space
from notochord.gems import refs as refs_module
from notochord.gems.refs import RefCodec

pytestmark = pytest.mark.anyio


_REAL_SIV = AESSIV


@pytest.fixture
def cipher_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every sealing and opening of AES-SIV by the codecs made in the test, in order."""
    calls: list[str] = []

    class CountingSiv:
        def __init__(self, key: bytes) -> None:
            self._inner = _REAL_SIV(key)

        def encrypt(self, data: bytes, associated: list[bytes]) -> bytes:
            calls.append("seal")
            return self._inner.encrypt(data, associated)

        def decrypt(self, data: bytes, associated: list[bytes]) -> bytes:
            calls.append("open")
            return self._inner.decrypt(data, associated)

    monkeypatch.setattr(refs_module, "AESSIV", CountingSiv)
    return calls


def test_a_ref_is_sealed_once_and_opens_without_the_cipher(cipher_calls: list[str]) -> None:
    """The same id gives the same ref (K-CON-05) and the ref opens to it, with the
    cipher run once for all of it."""
    codec = RefCodec(os.urandom(32))
    ref = codec.encode("ent", 42)
    assert [codec.encode("ent", 42) for _ in range(3)] == [ref] * 3
    assert [codec.decode("ent", ref) for _ in range(3)] == [42] * 3
    assert cipher_calls == ["seal"]


def test_a_ref_from_elsewhere_is_opened_once(cipher_calls: list[str]) -> None:
    """A ref this codec did not make (an earlier run's) is authenticated the first
    time and remembered after."""
    key = os.urandom(32)
    ref = RefCodec(key).encode("fact", 7)
    codec = RefCodec(key)
    assert [codec.decode("fact", ref) for _ in range(3)] == [7] * 3
    assert cipher_calls == ["seal", "open"]


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(lambda ref, _other: ref[:-2], id="truncated"),
        pytest.param(lambda ref, _other: ref[:-1] + ("A" if ref[-1] != "A" else "B"), id="altered"),
        pytest.param(lambda _ref, other: other, id="another gem's"),
        pytest.param(lambda ref, _other: "fact_" + ref.removeprefix("ent_"), id="another type"),
        pytest.param(lambda _ref, _other: 42, id="not a string"),
    ],
)
def test_a_ref_that_fails_is_refused_every_time_and_never_remembered(cipher_calls: list[str], forge: Any) -> None:
    """OD-K08, K-CON-06: whatever was opened before, a forged, foreign or
    mistyped ref reads as "not found" on every try, and does not spoil the real one."""
    codec = RefCodec(os.urandom(32))
    ref = codec.encode("ent", 42)
    codec.decode("ent", ref)
    forged = forge(ref, RefCodec(os.urandom(32)).encode("ent", 42))
    wanted = "fact" if isinstance(forged, str) and forged.startswith("fact_") else "ent"
    for _ in range(2):
        with pytest.raises(KnowledgeNotFoundError):
            codec.decode(wanted, forged)  # type: ignore[arg-type]
    assert codec.decode("ent", ref) == 42


def test_a_ref_opens_only_as_the_type_it_was_made_for(cipher_calls: list[str]) -> None:
    """OD-K08: a remembered entity ref is no fact ref."""
    codec = RefCodec(os.urandom(32))
    ref = codec.encode("ent", 5)
    with pytest.raises(KnowledgeNotFoundError, match="no fact"):
        codec.decode("fact", ref)


def test_the_codec_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A gem going through many objects does not grow the codec without end."""
    monkeypatch.setattr(refs_module, "_KEPT", 16)
    codec = RefCodec(os.urandom(32))
    made = {i: codec.encode("doc", i) for i in range(100)}
    assert all(codec.decode("doc", ref) == i for i, ref in made.items())
    assert len(codec._refs) <= 16 and len(codec._ids) <= 16


def test_runs_of_one_installation_share_a_codec_and_a_reinstall_has_a_new_one(space: Space, gems_root: Path) -> None:
    """K-UNINST, K-CON-05: what one run sealed the next run of the same
    installation reuses; an uninstall forgets it, and the reinstalled gem's refs are new."""
    install_gem(space, gems_root, "recipes", ["facts.read:self:pref.food.*"])
    first = space.gems.context("recipes").knowledge
    second = space.gems.context("recipes").knowledge
    assert first is not None and second is not None
    assert first.refs is second.refs
    old = first.refs.encode("fact", 1)
    space.gems.uninstall("recipes")
    install_gem(space, gems_root, "recipes", ["facts.read:self:pref.food.*"])
    again = space.gems.context("recipes").knowledge
    assert again is not None
    assert again.refs is not first.refs
    assert again.refs.encode("fact", 1) != old
    with pytest.raises(KnowledgeNotFoundError):
        again.refs.decode("fact", old)
