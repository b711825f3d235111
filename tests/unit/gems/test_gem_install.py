"""Installing, upgrading and switching: the permission record a gem runs under.

Covers K-MAN-01…14 (as seen through install and ``ctx``), K-PERM-01…04, K-PERM-25, P-GEN-04/06,
P-KVAL-01…10, OD-K49, OD-K50, OD-K51 and OD-P11.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from gem_fixtures import (
    ALL,
    RECIPE_PERMISSIONS,
    WEATHER_PERMISSIONS,
    declaration,
    ex01_manifest,
    install_gem,
    packaged_manifest,
    switch,
    write_manifest,
)

from notochord import GemError, KnowledgePermissionError, KnowledgeValidationError, ManifestError, Space
from notochord.access.permissions import Permission
from notochord.clock import FixedClock

pytestmark = pytest.mark.anyio

EVERY_KIND_OF_PERMISSION = (
    "facts.read:self:location.home.*",
    "facts.write:self:location.home.city",
    "facts.read:person:relation.colleague",
    "entities.resolve:person",
    "entities.read:org",
    "entities.write:place",
    "collections.read:diary",
    "collections.write:keep",
    "collections.read:user-selected",
    "collections.create",
    "collections.bulk",
    "changes.manage",
    "origin.override",
)


def test_every_requestable_permission_installs_and_starts_off(space: Space, gems_root: Path) -> None:
    """P-KVAL-01, K-PERM-01, K-PERM-03, K-CON-03: each string of K-PERM-06…19 is accepted; all off."""
    install_gem(space, gems_root, "everything", EVERY_KIND_OF_PERMISSION)
    switches = space.gems.permissions("everything")
    assert [s.permission for s in switches] == list(EVERY_KIND_OF_PERMISSION)
    assert not any(s.on for s in switches)
    assert space.gems.registry.granted("everything").strings() == []


@pytest.mark.parametrize(
    "bad",
    [
        "facts.read:self:*",
        "facts.read:self:location.*",
        "facts.read:self:nowhere.home.*",
        "facts.read:self",
        "facts.peek:self:location.home.*",
        "entities.read",
        "entities.read:self",
        "collections.read:col_AAAAAAAAAAAAAAAAAAAAAA",
        "collections.read:42",
        "changes.manage:all",
        "Facts.read:self:location.home.*",
        "facts.read:self: location.home.*",
        "knowledge.everything",
    ],
)
def test_a_malformed_permission_fails_install_and_leaves_nothing(space: Space, gems_root: Path, bad: str) -> None:
    """P-KVAL-02, P-KVAL-03, P-KVAL-05, P-KVAL-06, K-PERM-07, OD-K13."""
    folder = write_manifest(
        gems_root,
        packaged_manifest("bad", ["facts.read:self:pref.food.*", bad], predicates=[declaration("pref.food.new")]),
    )
    with pytest.raises(ManifestError, match=r"permissions\.knowledge\.permissions\[1\]"):
        space.gems.install(folder)
    assert space.gems.list() == []
    with pytest.raises(GemError):
        space.gems.permissions("bad")
    with space.core.store.read() as conn:
        assert space.core.vocabulary.get(conn, "pref.food.new") is None


@pytest.mark.parametrize(
    ("reads", "write"),
    [
        ([], "facts.write:self:pref.food.*"),
        (["facts.read:self:pref.food.like"], "facts.write:self:pref.food.*"),
        (["facts.read:person:pref.food.*"], "facts.write:self:pref.food.*"),
        (["facts.read:self:pref.food.like"], "facts.write:self:pref.food.dislike"),
    ],
)
def test_a_write_no_single_read_covers_fails_install(
    space: Space, gems_root: Path, reads: list[str], write: str
) -> None:
    """P-KVAL-04, K-PERM-08, OD-K12: same subject, and a read whose range holds the whole write."""
    with pytest.raises(ManifestError, match=re.escape("facts.read")):
        space.gems.install(write_manifest(gems_root, packaged_manifest("w", [*reads, write])))
    assert space.gems.list() == []


@pytest.mark.parametrize(
    "write", ["facts.write:self:pref.food.*", "facts.write:self:pref.food.like.*", "facts.write:self:pref.food"]
)
def test_a_write_inside_a_wildcard_read_installs(space: Space, gems_root: Path, write: str) -> None:
    """P-KVAL-04, OD-K12: read ``a.b.*`` covers writes ``a.b.*``, ``a.b.c.*`` and ``a.b``."""
    install_gem(space, gems_root, "w", ["facts.read:self:pref.food.*", write])
    assert [s.permission for s in space.gems.permissions("w")][1] == write


def test_reinstalling_an_installed_gem_is_refused(space: Space, gems_root: Path) -> None:
    install_gem(space, gems_root, "twice", WEATHER_PERMISSIONS, on=ALL)
    with pytest.raises(GemError, match="already installed"):
        install_gem(space, gems_root, "twice", WEATHER_PERMISSIONS)
    assert [s.on for s in space.gems.permissions("twice")] == [True]


def test_only_requested_permissions_can_be_switched_on(space: Space, gems_root: Path) -> None:
    """K-PERM-25, P-GEN-04: a permission not in the manifest raises GemError and grants nothing."""
    install_gem(space, gems_root, "narrow", WEATHER_PERMISSIONS)
    for unrequested in ("facts.read:self:location.work.*", "changes.manage", "facts.read:self:location.home.city"):
        with pytest.raises(GemError, match="did not request"):
            space.gems.set_permission("narrow", unrequested, True)
    assert space.gems.registry.granted("narrow").strings() == []


def test_switching_a_permission_of_an_unknown_gem_is_refused(space: Space) -> None:
    with pytest.raises(GemError, match="no gem"):
        space.gems.set_permission("ghost", "changes.manage", True)


def test_switching_a_malformed_permission_is_refused(space: Space, gems_root: Path) -> None:
    install_gem(space, gems_root, "narrow", WEATHER_PERMISSIONS)
    with pytest.raises(KnowledgeValidationError):
        space.gems.set_permission("narrow", "facts.read:self:*", True)


async def test_switching_takes_effect_on_the_next_call_of_the_same_ctx(space: Space, gems_root: Path) -> None:
    """K-PERM-04, P-KVAL-08, P-KVAL-09: no reinstall, no new ctx, no caching."""
    space.user.facts.put(predicate="location.home.city", value="Utrecht")
    install_gem(space, gems_root, "weather", WEATHER_PERMISSIONS)
    ctx = space.gems.context("weather")
    assert ctx.knowledge is not None
    assert await ctx.knowledge.profile.get() == []
    switch(space, "weather", WEATHER_PERMISSIONS)
    assert [f.value for f in await ctx.knowledge.profile.get()] == ["Utrecht"]
    switch(space, "weather", WEATHER_PERMISSIONS, on=False)
    assert await ctx.knowledge.profile.get() == []


async def test_revoking_write_refuses_the_very_next_write(space: Space, gems_root: Path) -> None:
    """P-KVAL-09, P-KVAL-10: a single-object call throws as soon as the switch is off."""
    install_gem(space, gems_root, "recipes", RECIPE_PERMISSIONS, on=ALL)
    ctx = space.gems.context("recipes")
    assert ctx.knowledge is not None
    assert (await ctx.knowledge.facts.put(predicate_hint="pref.food.like", value="stew")).status == "applied"
    space.gems.set_permission("recipes", "facts.write:self:pref.food.*", False)
    with pytest.raises(KnowledgePermissionError, match=re.escape("facts.write:self:pref.food.like")):
        await ctx.knowledge.facts.put(predicate_hint="pref.food.like", value="soup")


async def test_the_manifest_file_is_not_read_again_after_install(space: Space, gems_root: Path) -> None:
    """P-GEN-04: editing the installed folder's manifest changes nothing at run time."""
    folder = write_manifest(gems_root, packaged_manifest("frozen", WEATHER_PERMISSIONS))
    space.gems.install(folder)
    (folder / "notochord.json").write_text(
        json.dumps(packaged_manifest("frozen", ["facts.read:self:location.*.*", "changes.manage"])),
        encoding="utf-8",
    )
    assert [s.permission for s in space.gems.permissions("frozen")] == list(WEATHER_PERMISSIONS)
    with pytest.raises(GemError):
        space.gems.set_permission("frozen", "changes.manage", True)
    ctx = space.gems.context("frozen", tool="main")
    assert ctx.knowledge is not None


# ---------------------------------------------------------------------- manifests (K-MAN)


async def test_ex01_draft_installs_with_its_declared_predicate_in_the_vocabulary(space: Space, gems_root: Path) -> None:
    """K-MAN-01, K-MAN-07, K-MAN-08, K-MAN-10, K-MAN-11, K-MAN-14, EX-01."""
    installed = space.gems.install(write_manifest(gems_root, ex01_manifest(), form="draft"))
    assert (installed.id, installed.name) == ("recipes", "recipes")
    assert installed.manifest.knowledge.reason == (
        "Remember the dishes you like, and save recipes into your knowledge base"
    )
    with space.core.store.read() as conn:
        rated = space.core.vocabulary.get(conn, "pref.food.rated")
    assert rated is not None
    assert rated.cardinality == "many"
    assert rated.declared_by == "gem:recipes"
    assert "top-rated dishes" in rated.aliases
    assert rated.description is not None and rated.description.startswith("Dishes you have rated highly")


async def test_a_declared_alias_resolves_to_the_declared_predicate(space: Space, gems_root: Path) -> None:
    """K-MAN-10, K-FACT-13, OD-K09: ``top-rated dishes`` is an alias of ``pref.food.rated``."""
    space.gems.install(write_manifest(gems_root, ex01_manifest(), form="draft"))
    switch(space, "recipes", ALL)
    ctx = space.gems.context("recipes")
    assert ctx.knowledge is not None
    result = await ctx.knowledge.facts.put(predicate_hint="Top-Rated  Dishes", value="Tomato beef stew")
    assert (result.status, result.predicate) == ("applied", "pref.food.rated")


async def test_declaring_a_predicate_grants_no_access_to_it(space: Space, gems_root: Path) -> None:
    """K-MAN-09: the gem declares ``x.garden.plant`` but requested no facts permission over it."""
    space.user.facts.put(predicate="x.garden.plant", value="tomato", pin=True)
    install_gem(
        space,
        gems_root,
        "garden",
        ["facts.read:self:pref.food.*"],
        on=ALL,
        predicates=[declaration("x.garden.plant", description="Plants in your garden")],
    )
    ctx = space.gems.context("garden")
    assert ctx.knowledge is not None
    assert await ctx.knowledge.profile.get() == []
    assert await ctx.knowledge.facts.lookup("self", "x.garden") == []
    with pytest.raises(KnowledgePermissionError, match=re.escape("facts.write:self:x.garden.plant")):
        await ctx.knowledge.facts.put(predicate_hint="x.garden.plant", value="basil")


@pytest.mark.parametrize("length", [200, 201])
def test_a_declaration_description_is_at_most_200_characters(space: Space, gems_root: Path, length: int) -> None:
    """K-MAN-12, K-QUOTA-15, OD-K50: 200 installs, 201 fails and nothing is installed."""
    data = packaged_manifest("desc", [], predicates=[declaration("x.long.text", description="d" * length)])
    folder = write_manifest(gems_root, data)
    if length == 200:
        space.gems.install(folder)
        assert [g.id for g in space.gems.list()] == ["desc"]
    else:
        with pytest.raises(ManifestError, match=r"predicates\[0\]\.description"):
            space.gems.install(folder)
        assert space.gems.list() == []


def test_a_declaration_without_description_fails_install(space: Space, gems_root: Path) -> None:
    """K-MAN-12: the description is required."""
    data = packaged_manifest("nodesc", [], predicates=[{"predicate": "x.a.b", "cardinality": "many"}])
    with pytest.raises(ManifestError, match="description"):
        space.gems.install(write_manifest(gems_root, data))


def test_redeclaring_a_core_predicate_with_another_cardinality_fails_and_leaves_nothing(
    space: Space, gems_root: Path
) -> None:
    """K-MAN-11, OD-K50, P-KVAL-06: ``location.home.city`` is ``one``; the new ``x.`` entry is not kept."""
    data = packaged_manifest(
        "clash",
        [],
        predicates=[declaration("x.clash.first"), declaration("location.home.city", cardinality="many")],
    )
    with pytest.raises(ManifestError, match="cardinality"):
        space.gems.install(write_manifest(gems_root, data))
    assert space.gems.list() == []
    with space.core.store.read() as conn:
        assert space.core.vocabulary.get(conn, "x.clash.first") is None


def test_redeclaring_with_the_same_cardinality_merges_aliases(space: Space, gems_root: Path) -> None:
    """OD-K50: a second gem may declare an existing predicate with the same cardinality."""
    space.gems.install(write_manifest(gems_root, ex01_manifest(), form="draft"))
    data = packaged_manifest("ratings", [], predicates=[declaration("pref.food.rated", aliases=["favourite dishes"])])
    space.gems.install(write_manifest(gems_root, data))
    with space.core.store.read() as conn:
        rated = space.core.vocabulary.get(conn, "pref.food.rated")
    assert rated is not None
    assert {"top-rated dishes", "favourite dishes"} <= set(rated.aliases)


def test_packaged_ex02_installs_with_its_tool_flag(space: Space, gems_root: Path) -> None:
    """K-MAN-04, K-MAN-05, EX-02."""
    data = {
        "id": "home-weather",
        "name": "Home weather",
        "version": "1.2.0",
        "permissions": {"knowledge": {"permissions": ["facts.read:self:location.home.*"]}},
        "tools": [{"name": "home", "entry": "tools/home.mjs", "permissions": {"knowledge": True}, "...": "..."}],
    }
    installed = space.gems.install(write_manifest(gems_root, data))
    assert installed.manifest.knowledge_tools() == ("home",)
    assert space.gems.context("home-weather", tool="home").knowledge is not None


def test_a_packaged_tool_without_the_knowledge_flag_gets_no_knowledge(space: Space, gems_root: Path) -> None:
    """K-MAN-06, OD-K49: ``ctx.knowledge is None`` for a tool lacking ``"knowledge": true``."""
    tools: list[dict[str, Any]] = [
        {"name": "reader", "entry": "tools/reader.mjs", "permissions": {"knowledge": True}},
        {"name": "plain", "entry": "tools/plain.mjs", "permissions": {"network": True}},
        {"name": "bare", "entry": "tools/bare.mjs"},
        {"name": "off", "entry": "tools/off.mjs", "permissions": {"knowledge": False}},
    ]
    install_gem(space, gems_root, "split", WEATHER_PERMISSIONS, on=ALL, tools=tools)
    assert space.gems.context("split", tool="reader").knowledge is not None
    for tool in ("plain", "bare", "off"):
        ctx = space.gems.context("split", tool=tool)
        assert ctx.knowledge is None, tool
        assert ctx.tool == tool


def test_a_draft_tool_gets_knowledge_unless_its_permission_list_leaves_it_out(space: Space, gems_root: Path) -> None:
    """K-MAN-02, OD-K49: no ``permissions`` → knowledge; a list → only if it names ``knowledge``."""
    data = ex01_manifest()
    del data["entry"]
    data["tools"] = [
        {"name": "default", "entry": "tools/default.js"},
        {"name": "listed", "entry": "tools/listed.js", "permissions": ["knowledge", "network"]},
        {"name": "without", "entry": "tools/without.js", "permissions": ["network"]},
    ]
    space.gems.install(write_manifest(gems_root, data, form="draft"))
    assert space.gems.context("recipes", tool="default").knowledge is not None
    assert space.gems.context("recipes", tool="listed").knowledge is not None
    assert space.gems.context("recipes", tool="without").knowledge is None


def test_a_context_for_an_unknown_tool_is_refused(space: Space, gems_root: Path) -> None:
    install_gem(space, gems_root, "one-tool", WEATHER_PERMISSIONS)
    with pytest.raises(GemError, match="no tool 'other'"):
        space.gems.context("one-tool", tool="other")


def test_each_run_gets_its_own_run_id(space: Space, gems_root: Path) -> None:
    """OD-K45: ``run-<uuid4>`` unless the host passes one; exposed as ``ctx.runId``."""
    install_gem(space, gems_root, "runs", WEATHER_PERMISSIONS)
    first, second = space.gems.context("runs"), space.gems.context("runs")
    assert first.run_id != second.run_id
    assert first.runId.startswith("run-") and len(first.runId) == len("run-") + 36
    assert space.gems.context("runs", run_id="nightly").runId == "nightly"


# ---------------------------------------------------------------------- sentences (K-PERM-02, OD-K51)


def test_the_three_sample_sentences_come_out_of_the_gem_page(space: Space, gems_root: Path) -> None:
    """K-PERM-02, OD-K51: the sample scopes of §4 read exactly as the sources give them."""
    install_gem(
        space,
        gems_root,
        "samples",
        [
            "facts.read:self:location.home.*",
            "facts.read:self:pref.food.*",
            "facts.write:self:pref.food.*",
            "collections.read:diary",
        ],
    )
    sentences = {s.permission: (s.sentence_en, s.sentence_zh) for s in space.gems.permissions("samples")}
    assert sentences["facts.read:self:location.home.*"] == ("Read where you live", "读取你的居住地")
    assert sentences["facts.write:self:pref.food.*"] == ("Record your food preferences", "记录你的饮食偏好")
    assert sentences["collections.read:diary"] == ("Read your diary", "读取你的日记")


def test_every_unscoped_and_entity_sentence_matches_the_table(space: Space, gems_root: Path) -> None:
    """K-PERM-02: the table rows whose scope is fixed read word for word."""
    install_gem(
        space,
        gems_root,
        "table",
        [
            "entities.resolve:person",
            "entities.read:person",
            "entities.write:person",
            "collections.create",
            "changes.manage",
            "origin.override",
        ],
    )
    assert [(s.sentence_en, s.sentence_zh) for s in space.gems.permissions("table")] == [
        ("Look up a contact's name by email and the like", "根据邮箱等查询联系人的名字"),
        ("View your contact list", "查看你的联系人列表"),
        ("Add and edit contacts", "新增和编辑联系人"),
        ("Create its own collections", "创建自己的知识库"),
        ("View and undo all knowledge written by apps", "查看和撤销所有应用写入的知识"),
        ("Write data on behalf of other apps", "代表其他应用写入数据"),
    ]


def test_a_declared_predicate_scope_reads_with_its_description(space: Space, gems_root: Path) -> None:
    """K-MAN-13, OD-K51: a scope naming a gem's own predicate shows the gem's description."""
    install_gem(
        space,
        gems_root,
        "plants",
        ["facts.read:self:x.garden.plant"],
        predicates=[declaration("x.garden.plant", description="Plants in your garden")],
    )
    [switch_row] = space.gems.permissions("plants")
    assert "Plants in your garden" in switch_row.sentence_en


# ---------------------------------------------------------------------- upgrade (P-GEN-06, OD-P11)


def test_upgrade_keeps_switches_starts_new_ones_off_and_drops_the_rest(
    space: Space, gems_root: Path, clock: FixedClock
) -> None:
    """P-GEN-06, OD-P11."""
    install_gem(
        space,
        gems_root,
        "evolving",
        ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*", "changes.manage"],
        on=["facts.read:self:pref.food.*", "changes.manage"],
    )
    clock.advance(timedelta(days=1))
    upgraded = space.gems.upgrade(
        write_manifest(
            gems_root,
            packaged_manifest(
                "evolving",
                ["facts.read:self:pref.food.*", "facts.write:self:pref.food.*", "entities.read:person"],
                version="2.0.0",
            ),
        )
    )
    assert upgraded.version == "2.0.0"
    assert [(s.permission, s.on) for s in space.gems.permissions("evolving")] == [
        ("facts.read:self:pref.food.*", True),
        ("facts.write:self:pref.food.*", False),
        ("entities.read:person", False),
    ]
    assert space.gems.registry.granted("evolving").strings() == ["facts.read:self:pref.food.*"]
    with pytest.raises(GemError):
        space.gems.set_permission("evolving", "changes.manage", True)


async def test_upgrade_keeps_the_gem_refs(space: Space, gems_root: Path) -> None:
    """OD-K03, P-GEN-06: an upgrade is the same installation, so stored refs keep working."""
    install_gem(space, gems_root, "keeper", ["entities.read:person", "entities.write:person"], on=ALL)
    ctx = space.gems.context("keeper")
    assert ctx.knowledge is not None
    made = await ctx.knowledge.entities.resolve({"name": "Kim"}, create=True)
    assert made is not None
    space.gems.upgrade(
        write_manifest(
            gems_root,
            packaged_manifest("keeper", ["entities.read:person", "entities.write:person"], version="1.1.0"),
        )
    )
    later = space.gems.context("keeper")
    assert later.knowledge is not None
    assert (await later.knowledge.entities.get(made.ref)).display_name == "Kim"


def test_bug_upgrade_in_the_same_millisecond_as_install_still_serves_the_new_manifest(
    space: Space, gems_root: Path
) -> None:
    """P-GEN-04, P-GEN-06, OD-P11: the installed record, not a stale copy, answers after an upgrade.

    The clock does not move between install and upgrade here (as when both happen within one
    millisecond): the upgraded manifest's permissions and tools must be the ones in force.
    """
    install_gem(space, gems_root, "quick", [*WEATHER_PERMISSIONS, "changes.manage"])
    tools = [
        {"name": "main", "entry": "tools/main.mjs", "permissions": {"knowledge": True}},
        {"name": "added", "entry": "tools/added.mjs", "permissions": {"knowledge": True}},
    ]
    space.gems.upgrade(
        write_manifest(gems_root, packaged_manifest("quick", WEATHER_PERMISSIONS, version="1.0.1", tools=tools))
    )
    assert [s.permission for s in space.gems.permissions("quick")] == list(WEATHER_PERMISSIONS)
    assert space.gems.context("quick", tool="added").knowledge is not None


def test_upgrading_a_gem_that_is_not_installed_is_refused(space: Space, gems_root: Path) -> None:
    with pytest.raises(GemError, match="not installed"):
        space.gems.upgrade(write_manifest(gems_root, packaged_manifest("nobody", WEATHER_PERMISSIONS)))


def test_an_invalid_upgrade_changes_nothing(space: Space, gems_root: Path) -> None:
    """P-KVAL-06 on upgrade: switches and version stay as they were."""
    install_gem(space, gems_root, "stable", WEATHER_PERMISSIONS, on=ALL)
    with pytest.raises(ManifestError):
        space.gems.upgrade(
            write_manifest(gems_root, packaged_manifest("stable", ["facts.read:self:*"], version="9.0.0"))
        )
    assert space.gems.get("stable").version == "1.0.0"
    assert [(s.permission, s.on) for s in space.gems.permissions("stable")] == [(WEATHER_PERMISSIONS[0], True)]


def test_permission_strings_are_canonical_on_the_gem_page(space: Space, gems_root: Path) -> None:
    """K-PERM-01, OD-K13: repeated strings are kept once; each parses back to itself."""
    install_gem(space, gems_root, "dupes", [*WEATHER_PERMISSIONS, *WEATHER_PERMISSIONS, "changes.manage"])
    strings = [s.permission for s in space.gems.permissions("dupes")]
    assert strings == [WEATHER_PERMISSIONS[0], "changes.manage"]
    assert all(str(Permission.parse(s)) == s for s in strings)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("g" * 300, id="a name too long for the system"),
        pytest.param("a/" * 3000 + "g", id="a path too long"),
    ],
)
def test_an_install_path_the_system_cannot_read_is_a_manifest_error(space: Space, tmp_path: Path, name: str) -> None:
    """Whatever the path, installing answers with the manifest's error, and installs nothing."""
    with pytest.raises(ManifestError, match="this path cannot be read: file name too long"):
        space.gems.install(tmp_path / name)
    assert space.gems.list() == []
