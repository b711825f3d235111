"""Manifest fixtures: the verbatim examples EX-01 (draft) and EX-02 (packaged excerpt)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from postgres_server import BACKENDS

MANIFESTS = Path(__file__).resolve().parents[2] / "fixtures" / "manifests"

Json = dict[str, Any]


def _read(relative: str) -> Json:
    data: Json = json.loads((MANIFESTS / relative).read_text(encoding="utf-8"))
    return data


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The gem tests that open a space run over both backends: SQLite files and PostgreSQL."""
    return str(request.param)


@pytest.fixture
def manifests_dir() -> Path:
    return MANIFESTS


@pytest.fixture
def ex01() -> Json:
    """EX-01 exactly as the source gives it (a fresh copy per test)."""
    return _read("ex01/manifest.json")


@pytest.fixture
def ex02_excerpt() -> Json:
    """EX-02 exactly as the source gives it: an excerpt without a name."""
    return _read("ex02/notochord.json")


@pytest.fixture
def ex02() -> Json:
    """EX-02 completed with the gem-level fields a whole notochord.json carries."""
    data = _read("ex02/notochord.json")
    return {"id": "home-weather", "name": "Home weather", "version": "1.2.0", **data}


@pytest.fixture
def manifest_bases(ex01: Json, ex02: Json) -> Callable[[str], Json]:
    """Fresh deep copies of the named base manifest: ``draft`` (EX-01) or ``packaged`` (EX-02)."""
    bases = {"draft": ex01, "packaged": ex02}
    return lambda name: copy.deepcopy(bases[name])


# ---------------------------------------------------------------------- gem system fixtures
# (appended for the gem permission tests: anyio backend, a folder for manifests, the ref audit)

import inspect  # noqa: E402
from collections.abc import Awaitable, Iterator  # noqa: E402
from weakref import WeakKeyDictionary  # noqa: E402

import sqlalchemy as sa  # noqa: E402
from gem_fixtures import AuditRecord, audit_problems  # noqa: E402

from notochord.db.schema import gems as gems_table  # noqa: E402
from notochord.gems.api import knowledge as knowledge_api  # noqa: E402
from notochord.gems.refs import RefCodec  # noqa: E402
from notochord.gems.registry import GemRegistry  # noqa: E402
from notochord.knowledge.core import KnowledgeCore  # noqa: E402

_AUDITED_PARTS = (
    knowledge_api.ProfileApi,
    knowledge_api.FactsApi,
    knowledge_api.EntitiesApi,
    knowledge_api.ChangesApi,
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def gems_root(tmp_path: Path) -> Path:
    """Where a test writes the manifests it installs."""
    return tmp_path / "gem-folders"


@pytest.fixture(autouse=True)
def ref_audit(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[AuditRecord]]:
    """Records every value any ``ctx.knowledge`` method returns in this folder's tests and, at
    teardown, fails the test if one holds an internal id (a field ``id``, an integer other than a
    ``count``) or a ref that does not decode with the calling gem's key or also decodes with the key
    of another gem installed at the time of the call (K-CON-05/06).

    The calling gem's key is derived again through the space's registry (``space.gems.registry``),
    independently of the codec the facade holds, so a facade that used the wrong key is caught too.
    """
    records: list[AuditRecord] = []
    unaudited: list[str] = []
    # Each space's registry, found from the core a facade works on: independent of how a run's
    # ctx is opened (space.gems.context, the runner), so every facade is audited.
    registries: WeakKeyDictionary[KnowledgeCore, GemRegistry] = WeakKeyDictionary()
    original_init = GemRegistry.__init__

    def init(self: GemRegistry, core: KnowledgeCore, *args: Any, **kwargs: Any) -> None:
        original_init(self, core, *args, **kwargs)
        registries[core] = self

    cache: dict[tuple[int, str, str], RefCodec] = {}

    def codecs(
        registry: GemRegistry, api: knowledge_api.KnowledgeApi, gem_id: str
    ) -> tuple[RefCodec, dict[str, RefCodec]]:
        # Keyed by each installation's salt: a reinstalled gem has new keys, an upgraded one not.
        with api.core.store.read() as conn:
            rows = conn.execute(sa.select(gems_table.c.id, gems_table.c.key_salt)).all()
        salts: dict[str, str] = {row.id: row.key_salt for row in rows}

        def codec(installed: str) -> RefCodec:
            key = (id(registry), installed, salts[installed])
            if key not in cache:
                cache[key] = RefCodec(registry.key(installed, "refs"))
            return cache[key]

        # A ctx held past its gem's uninstall has no registry key left; its own codec is all there is.
        own = codec(gem_id) if gem_id in salts else api.refs
        return own, {other: codec(other) for other in salts if other != gem_id}

    def wrap(name: str, method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def audited(part: Any, *args: Any, **kwargs: Any) -> Any:
            result = await method(part, *args, **kwargs)
            api: knowledge_api.KnowledgeApi = part._api
            gem_id = str(api.actor.gem_id)
            registry = registries.get(api.core)
            if registry is None:
                unaudited.append(f"{gem_id} {name}: a facade over a store without a gem registry")
                return result
            own, others = codecs(registry, api, gem_id)
            records.append(AuditRecord(gem_id=gem_id, method=name, result=result, own=own, others=others))
            return result

        audited.__name__ = method.__name__
        audited.__doc__ = method.__doc__
        return audited

    monkeypatch.setattr(GemRegistry, "__init__", init)
    for part in _AUDITED_PARTS:
        for attribute, value in list(vars(part).items()):
            if inspect.iscoroutinefunction(value):
                label = f"{part.__name__.removesuffix('Api').lower()}.{attribute}"
                monkeypatch.setattr(part, attribute, wrap(label, value))
    yield records
    problems = unaudited + [p for record in records for p in audit_problems(record)]
    assert not problems, "ctx.knowledge returned internal ids or foreign refs:\n" + "\n".join(problems)
