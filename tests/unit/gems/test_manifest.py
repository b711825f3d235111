"""Gem manifests in both forms: parsing into one model and listing every problem at once.

Covers K-MAN-01…14, P-KVAL-02…05/07, OD-K12, OD-K13, OD-K49, OD-K50, OD-P09, OD-P10, EX-01, EX-02,
EX-16 and AS-09.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from notochord.access.permissions import Permission
from notochord.access.sentences import sentence
from notochord.errors import ManifestError
from notochord.gems.manifest import (
    PredicateDeclaration,
    ResourceSpec,
    ToolSpec,
    load_manifest,
    parse_manifest,
)

Json = dict[str, Any]
Mutation = Callable[[Json], None]

_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _walk(data: Json, path: str) -> tuple[Any, str | int]:
    """The container holding ``path``'s last step, and that step (``a.b[0].c`` style)."""
    steps: list[str | int] = [name if name else int(index) for name, index in _STEP.findall(path)]
    node: Any = data
    for step in steps[:-1]:
        node = node[step]
    return node, steps[-1]


def put(path: str, value: Any) -> Mutation:
    def apply(data: Json) -> None:
        container, last = _walk(data, path)
        container[last] = value

    return apply


def drop(path: str) -> Mutation:
    def apply(data: Json) -> None:
        container, last = _walk(data, path)
        del container[last]

    return apply


def append(path: str, value: Any) -> Mutation:
    def apply(data: Json) -> None:
        container, last = _walk(data, path)
        container[last].append(value)

    return apply


def both(*mutations: Mutation) -> Mutation:
    def apply(data: Json) -> None:
        for mutation in mutations:
            mutation(data)

    return apply


def unchanged(data: Json) -> None:
    return None


def problem_paths(error: ManifestError) -> list[str]:
    return [problem.split(": ", 1)[0] for problem in error.problems]


DECLARATION = "knowledge.predicates[0]"
SHA = "sha256:" + "ab" * 32
NETWORK = {"hosts": ["api.open-meteo.com"], "reason": "Look up weather forecasts"}  # EX-16
OK = "ok"

# (id, base, mutation, expected): base "draft" is EX-01, "packaged" is EX-02 completed with a
# name. Expected is "ok" or the exact list of problem paths, in order.
CASES: tuple[tuple[str, str, Mutation, str | list[str]], ...] = (
    # AS-09, on EX-01
    ("AS-09 EX-01 as given installs", "draft", unchanged, OK),
    (
        "AS-09 facts.read:self:pref.* in place of the first string fails",
        "draft",
        put("knowledge.permissions[0]", "facts.read:self:pref.*"),
        ["knowledge.permissions[0]", "knowledge.permissions[1]"],
    ),
    (
        "AS-09 facts.read removed fails: write not covered",
        "draft",
        drop("knowledge.permissions[0]"),
        ["knowledge.permissions[0]"],
    ),
    (
        "AS-09 collections.read:<collection ref> added fails",
        "draft",
        append("knowledge.permissions", "collections.read:col_3f2a9c0d1e2b4a5f6a7b8c"),
        ["knowledge.permissions[3]"],
    ),
    (
        "AS-09 a 201-character description fails",
        "draft",
        put(f"{DECLARATION}.description", "d" * 201),
        [f"{DECLARATION}.description"],
    ),
    (
        "K-MAN-12 a 200-character description is fine",
        "draft",
        put(f"{DECLARATION}.description", "d" * 200),
        OK,
    ),
    (
        "several problems are all listed at once",
        "draft",
        both(
            drop("name"),
            put("knowledge.permissions[0]", "facts.read:self:*"),
            put(f"{DECLARATION}.cardinality", "several"),
            put(f"{DECLARATION}.aliases", ["a" * 1001]),
            put("tools", [{"name": "rate", "entry": "tools/rate.js", "permissions": "knowledge"}]),
            put("resources", [{"url": "ftp://files.example.com/x", "sha256": "md5:1", "description": "x"}]),
        ),
        [
            "name",
            "knowledge.permissions[0]",
            "knowledge.permissions[1]",
            f"{DECLARATION}.cardinality",
            f"{DECLARATION}.aliases[0]",
            "tools[0].permissions",
            "resources[0].url",
            "resources[0].sha256",
        ],
    ),
    # P-KVAL-02…05 and OD-K12 coverage
    (
        "P-KVAL-02 repeated permission strings are accepted once",
        "draft",
        append("knowledge.permissions", "facts.read:self:pref.food.*"),
        OK,
    ),
    (
        "OD-K12 a full-predicate read does not cover a wildcard write",
        "draft",
        put("knowledge.permissions", ["facts.read:self:pref.food.rated", "facts.write:self:pref.food.*"]),
        ["knowledge.permissions[1]"],
    ),
    (
        "OD-K12 a wildcard read covers narrower writes",
        "draft",
        put(
            "knowledge.permissions",
            [
                "facts.read:self:pref.food.*",
                "facts.write:self:pref.food.rated",
                "facts.write:self:pref.food.rated.*",
                "facts.write:self:pref.food",
            ],
        ),
        OK,
    ),
    (
        "OD-K12 a read about self does not cover a write about people",
        "draft",
        put("knowledge.permissions", ["facts.read:self:pref.food.*", "facts.write:person:pref.food.*"]),
        ["knowledge.permissions[1]"],
    ),
    (
        "P-KVAL-02 entities without a kind (D-04 spelling) fails",
        "draft",
        append("knowledge.permissions", "entities.read:"),
        ["knowledge.permissions[3]"],
    ),
    (
        "P-KVAL-02 a scope on collections.create fails",
        "draft",
        append("knowledge.permissions", "collections.create:diary"),
        ["knowledge.permissions[3]"],
    ),
    (
        "P-KVAL-02 a permission that is not a string fails",
        "draft",
        append("knowledge.permissions", 42),
        ["knowledge.permissions[3]"],
    ),
    (
        "K-MAN-07 permissions must be a list",
        "draft",
        put("knowledge.permissions", "facts.read:self:pref.food.*"),
        ["knowledge.permissions"],
    ),
    # OD-K50 predicate declarations
    (
        "OD-K50 a one-level predicate fails",
        "draft",
        put(f"{DECLARATION}.predicate", "rated"),
        [f"{DECLARATION}.predicate"],
    ),
    (
        "OD-K50 an unknown first level fails",
        "draft",
        put(f"{DECLARATION}.predicate", "food.rated"),
        [f"{DECLARATION}.predicate"],
    ),
    (
        "K-MAN-11 cardinality is required",
        "draft",
        drop(f"{DECLARATION}.cardinality"),
        [f"{DECLARATION}.cardinality"],
    ),
    (
        "K-MAN-12 description is required",
        "draft",
        drop(f"{DECLARATION}.description"),
        [f"{DECLARATION}.description"],
    ),
    (
        "K-MAN-12 a blank description fails",
        "draft",
        put(f"{DECLARATION}.description", "   "),
        [f"{DECLARATION}.description"],
    ),
    (
        "K-MAN-10 aliases must be a list",
        "draft",
        put(f"{DECLARATION}.aliases", "top"),
        [f"{DECLARATION}.aliases"],
    ),
    ("OD-K50 a 1000-character alias is fine", "draft", put(f"{DECLARATION}.aliases", ["a" * 1000]), OK),
    (
        "OD-K50 the same predicate declared twice fails",
        "draft",
        lambda m: m["knowledge"]["predicates"].append(dict(m["knowledge"]["predicates"][0])),
        ["knowledge.predicates[1].predicate"],
    ),
    (
        "a misspelt key in a declaration fails",
        "draft",
        put(f"{DECLARATION}.example", "braised pork"),
        [f"{DECLARATION}.example"],
    ),
    (
        "a misspelt key in the knowledge section fails",
        "draft",
        put("knowledge.permision", ["entities.read:person"]),
        ["knowledge.permision"],
    ),
    ("K-MAN-14 reason must be a string", "draft", put("knowledge.reason", 3), ["knowledge.reason"]),
    ("K-MAN-01 knowledge must be an object", "draft", put("knowledge", []), ["knowledge"]),
    # Gem-level fields and form mix-ups
    ("unknown top-level keys are tolerated in drafts", "draft", put("studio", {"layout": 2}), OK),
    ("the name must be a string", "draft", put("name", 5), ["name"]),
    (
        "K-MAN-01 a draft keeps knowledge at the gem level",
        "draft",
        put("permissions", {"knowledge": {"permissions": ["collections.create"]}}),
        ["permissions.knowledge"],
    ),
    (
        "P-NET-17 a draft network section uses allow_local_network",
        "draft",
        put("permissions", {"network": {**NETWORK, "allow_local_network": False}}),
        OK,
    ),
    (
        "P-NET-17 a draft network section with the packaged flag fails",
        "draft",
        put("permissions", {"network": {**NETWORK, "allowLocalNetwork": True}}),
        ["permissions.network.allowLocalNetwork"],
    ),
    (
        "tool names are unique",
        "draft",
        put("tools", [{"name": "rate", "entry": "tools/rate.js"}, {"name": "rate", "entry": "tools/b.js"}]),
        ["tools[1].name"],
    ),
    ("tools must be a list", "draft", put("tools", {"rate": {}}), ["tools"]),
    # The packaged form, on EX-02
    ("EX-02 completed with a name installs", "packaged", unchanged, OK),
    ("EX-16 a network section installs", "packaged", put("permissions.network", NETWORK), OK),
    (
        "P-KVAL-04 packaged paths name permissions.knowledge",
        "packaged",
        append("permissions.knowledge.permissions", "facts.write:self:location.work.*"),
        ["permissions.knowledge.permissions[1]"],
    ),
    (
        "P-KVAL-05 a collection id in a packaged manifest fails",
        "packaged",
        append("permissions.knowledge.permissions", "collections.write:col_3f2a"),
        ["permissions.knowledge.permissions[1]"],
    ),
    (
        "K-MAN-04 packaged knowledge sits under permissions",
        "packaged",
        put("knowledge", {"permissions": ["collections.create"]}),
        ["knowledge"],
    ),
    (
        "K-MAN-05 a packaged tool's permissions is an object",
        "packaged",
        put("tools[0].permissions", ["knowledge"]),
        ["tools[0].permissions"],
    ),
    (
        "K-MAN-05 a packaged knowledge flag is a boolean",
        "packaged",
        put("tools[0].permissions.knowledge", "yes"),
        ["tools[0].permissions.knowledge"],
    ),
    ("the gem id is a slug", "packaged", put("id", "Home_Weather"), ["id"]),
    (
        "OD-P09 a resource with a checksum installs",
        "packaged",
        put(
            "resources",
            [{"url": "https://cdn.example.com/m.bin", "sha256": SHA, "description": "Model", "size": 9}],
        ),
        OK,
    ),
    (
        "OD-P09 every resource problem is listed",
        "packaged",
        put("resources", [{"url": "file:///etc/passwd", "sha256": "sha256:abc", "size": -1}]),
        ["resources[0].url", "resources[0].sha256", "resources[0].description", "resources[0].size"],
    ),
)


@pytest.mark.parametrize(("base", "mutation", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_manifest_table(
    manifest_bases: Callable[[str], Json], base: str, mutation: Mutation, expected: str | list[str]
) -> None:
    """P-KVAL-02…05, OD-P10: a manifest either installs or fails listing exactly these paths."""
    data = manifest_bases(base)
    mutation(data)
    if expected == OK:
        parse_manifest(data, form=base)  # type: ignore[arg-type]
        return
    with pytest.raises(ManifestError) as caught:
        parse_manifest(data, form=base)  # type: ignore[arg-type]
    assert problem_paths(caught.value) == expected


def test_table_has_at_least_twenty_five_manifests() -> None:
    assert len(CASES) >= 25
    assert {base for _, base, _, _ in CASES} == {"draft", "packaged"}


def test_ex01_parses_into_the_typed_model(ex01: Json) -> None:
    """EX-01, K-MAN-01/07/10/14, OD-K49: one tool named after the entry file, with knowledge."""
    manifest = parse_manifest(ex01)
    assert manifest.form == "draft"
    assert (manifest.id, manifest.name, manifest.kind) == ("recipes", "recipes", "tool")
    assert manifest.description == "Save recipes the user has rated"
    assert manifest.tools == (ToolSpec("rate", "tools/rate.js", knowledge=True),)
    assert manifest.knowledge.permission_strings() == (
        "facts.read:self:pref.food.*",
        "facts.write:self:pref.food.*",
        "collections.create",
    )
    assert manifest.knowledge.predicates == (
        PredicateDeclaration(
            "pref.food.rated",
            "many",
            "Dishes you have rated highly, used to recommend similar dishes. Example: braised pork",
            ("top-rated dishes",),
        ),
    )
    assert manifest.knowledge.reason == "Remember the dishes you like, and save recipes into your knowledge base"
    assert manifest.network is None
    assert manifest.resources == ()


def test_ex02_parses_with_the_tool_flag(ex02: Json) -> None:
    """EX-02, K-MAN-04/05."""
    manifest = parse_manifest(ex02)
    assert manifest.form == "packaged"
    assert (manifest.id, manifest.version) == ("home-weather", "1.2.0")
    assert manifest.knowledge.permissions == (Permission.parse("facts.read:self:location.home.*"),)
    assert manifest.tools == (ToolSpec("home", "tools/home.mjs", knowledge=True, capabilities=("knowledge",)),)


def test_ex02_excerpt_as_given_lacks_only_the_name(ex02_excerpt: Json) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(ex02_excerpt, form="packaged")
    assert caught.value.problems == ("name: is required",)


def test_uncovered_write_is_reported_in_the_documented_words(ex02: Json) -> None:
    """OD-P10: the example problem line, word for word."""
    ex02["permissions"]["knowledge"]["permissions"] = ["collections.create", "facts.write:self:pref.food.*"]
    with pytest.raises(ManifestError) as caught:
        parse_manifest(ex02, form="packaged", source="notochord.json")
    assert caught.value.problems == (
        "permissions.knowledge.permissions[1]: facts.write:self:pref.food.* is not covered by any facts.read",
    )
    assert caught.value.code == "E_MANIFEST"
    assert "invalid manifest notochord.json (1 problem(s))" in caught.value.message


def test_collection_id_problem_says_specific_ids_cannot_be_requested(ex01: Json) -> None:
    """P-KVAL-05, X-05."""
    ex01["knowledge"]["permissions"].append("collections.read:col_3f2a9c0d1e2b4a5f6a7b8c")
    with pytest.raises(ManifestError) as caught:
        parse_manifest(ex01)
    (problem,) = caught.value.problems
    assert problem.startswith("knowledge.permissions[3]: collections.read:col_3f2a9c0d1e2b4a5f6a7b8c : ")
    assert "specific collection ids cannot be requested" in problem


def test_two_level_prefix_problem_names_the_rule(ex01: Json) -> None:
    """P-KVAL-03, AS-09."""
    ex01["knowledge"]["permissions"][0] = "facts.read:self:pref.*"
    with pytest.raises(ManifestError) as caught:
        parse_manifest(ex01)
    assert caught.value.problems[0] == (
        "knowledge.permissions[0]: facts.read:self:pref.* : a facts prefix needs at least two levels before .*"
    )


def test_description_problem_gives_the_length_and_the_limit(ex01: Json) -> None:
    """K-MAN-12."""
    ex01["knowledge"]["predicates"][0]["description"] = "d" * 201
    with pytest.raises(ManifestError) as caught:
        parse_manifest(ex01)
    assert caught.value.problems == ("knowledge.predicates[0].description: is 201 characters; the limit is 200",)


def test_repeated_permission_strings_are_kept_once(ex01: Json) -> None:
    """OD-K13: repeated strings are deduplicated."""
    ex01["knowledge"]["permissions"] += ["collections.create", "facts.read:self:pref.food.*"]
    manifest = parse_manifest(ex01)
    assert len(manifest.knowledge.permissions) == 3


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        ([{"name": "rate", "entry": "tools/rate.js"}], [("rate", True)]),
        ([{"name": "rate", "entry": "tools/rate.js", "permissions": ["network"]}], [("rate", False)]),
        (
            [{"name": "rate", "entry": "tools/rate.js", "permissions": ["network", "knowledge"]}],
            [("rate", True)],
        ),
        ([{"name": "rate", "entry": "tools/rate.js", "permissions": []}], [("rate", False)]),
        (
            [
                {"name": "a", "entry": "tools/a.js"},
                {"name": "b", "entry": "tools/b.js", "permissions": ["llm"]},
            ],
            [("a", True), ("b", False)],
        ),
    ],
    ids=["no-permissions", "network-only", "with-knowledge", "empty-list", "two-tools"],
)
def test_draft_tool_gets_knowledge_unless_its_permissions_leave_it_out(
    ex01: Json, tools: list[Json], expected: list[tuple[str, bool]]
) -> None:
    """K-MAN-02, OD-K49."""
    ex01["tools"] = tools
    manifest = parse_manifest(ex01, form="draft")
    assert [(t.name, t.knowledge) for t in manifest.tools] == expected


@pytest.mark.parametrize(
    ("permissions", "knowledge"),
    [({"knowledge": True}, True), ({"knowledge": False}, False), ({"network": True}, False), (None, False)],
    ids=["true", "false", "absent", "no-permissions"],
)
def test_packaged_tool_gets_knowledge_only_with_the_flag(ex02: Json, permissions: Json | None, knowledge: bool) -> None:
    """K-MAN-05/06, OD-K49."""
    if permissions is None:
        del ex02["tools"][0]["permissions"]
    else:
        ex02["tools"][0]["permissions"] = permissions
    manifest = parse_manifest(ex02, form="packaged")
    assert manifest.tools[0].knowledge is knowledge
    assert manifest.knowledge_tools() == (("home",) if knowledge else ())


@pytest.mark.parametrize(
    ("name", "gem_id"),
    [("recipes", "recipes"), ("My Recipes!", "my-recipes"), ("Café Crème 2", "cafe-creme-2")],
)
def test_gem_id_is_derived_from_the_name_when_absent(ex01: Json, name: str, gem_id: str) -> None:
    ex01["name"] = name
    assert parse_manifest(ex01).id == gem_id


def test_a_name_without_latin_letters_needs_an_explicit_id(ex01: Json) -> None:
    ex01["name"] = "菜谱"
    with pytest.raises(ManifestError) as caught:
        parse_manifest(ex01)
    assert problem_paths(caught.value) == ["name"]
    ex01["id"] = "recipes-zh"
    assert parse_manifest(ex01).id == "recipes-zh"


def _name_gem(manifest: Json, name: str) -> None:
    manifest["name"] = name


def _name_tool(manifest: Json, name: str) -> None:
    manifest["tools"][0]["name"] = name


@pytest.mark.parametrize(("rename", "path"), [(_name_gem, "name"), (_name_tool, "tools[0].name")])
def test_a_gem_or_tool_name_longer_than_200_characters_is_refused(
    ex02: Json, rename: Callable[[Json, str], None], path: str
) -> None:
    """K-MAN-01: names are shown on one line in every list of gems and tools; a manifest of
    megabytes must not put a name of megabytes there."""
    rename(ex02, "n" * 201)
    with pytest.raises(ManifestError) as caught:
        parse_manifest(ex02, form="packaged")
    assert caught.value.problems == (f"{path}: is 201 characters; the limit is 200",)


def test_a_draft_tool_named_after_an_entry_with_a_stem_over_200_characters_is_refused(ex01: Json) -> None:
    """K-MAN-06: the single tool of a draft takes the entry file's stem as its name, within the same limit."""
    ex01.pop("tools", None)
    ex01["entry"] = "tools/" + "r" * 201 + ".js"
    with pytest.raises(ManifestError) as caught:
        parse_manifest(ex01, form="draft")
    assert problem_paths(caught.value) == ["entry"]


def test_names_of_200_characters_are_fine(ex02: Json) -> None:
    ex02["name"] = "n" * 200
    ex02["tools"][0]["name"] = "t" * 200
    manifest = parse_manifest(ex02, form="packaged")
    assert (len(manifest.name), len(manifest.tools[0].name)) == (200, 200)


@pytest.mark.parametrize("gem_id", ["con", "prn", "aux", "nul", "com1", "com9", "lpt1", "lpt9", "com0", "lpt0"])
def test_a_gem_id_windows_reserves_for_a_device_is_refused(ex02: Json, gem_id: str) -> None:
    """K-MAN-01: a gem id names the folders of the installation (its code, its private storage); on
    Windows a folder named ``CON`` or ``com1`` (any case, any extension) cannot exist, so a vault or
    backup carried there would break."""
    ex02["id"] = gem_id
    with pytest.raises(ManifestError) as caught:
        parse_manifest(ex02, form="packaged")
    [problem] = caught.value.problems
    assert problem.startswith(f"id: {gem_id!r} is a name Windows reserves for a device")
    assert "choose another id" in problem


@pytest.mark.parametrize(("name", "slug"), [("CON", "con"), ("Com1", "com1"), ("nul!", "nul")])
def test_a_gem_id_derived_from_the_name_is_never_a_reserved_device_name(ex01: Json, name: str, slug: str) -> None:
    """K-MAN-01: without an ``id`` the name gives one; when that one is reserved, the user is told
    to add an ``id``."""
    ex01["name"] = name
    with pytest.raises(ManifestError) as caught:
        parse_manifest(ex01)
    [problem] = caught.value.problems
    assert problem.startswith(f"name: the gem id derived from it, {slug!r}, is a name Windows reserves")
    assert 'add an "id"' in problem


@pytest.mark.parametrize("gem_id", ["CON", "con.txt", "nul.", "aux "])
def test_a_device_name_in_another_case_or_with_a_dot_or_space_is_no_id(ex02: Json, gem_id: str) -> None:
    """K-MAN-01: upper case, dots and spaces are never in an id, so no such variant gets through."""
    ex02["id"] = gem_id
    with pytest.raises(ManifestError) as caught:
        parse_manifest(ex02, form="packaged")
    assert problem_paths(caught.value) == ["id"]


@pytest.mark.parametrize("gem_id", ["console", "com10", "lpt-1", "prn2", "nul-gem"])
def test_ids_that_only_start_like_a_device_name_are_fine(ex02: Json, gem_id: str) -> None:
    ex02["id"] = gem_id
    assert parse_manifest(ex02, form="packaged").id == gem_id


def test_network_section_is_parsed_for_the_packaged_form(ex02: Json) -> None:
    """EX-16, P-NET-01."""
    ex02["permissions"]["network"] = NETWORK
    network = parse_manifest(ex02).network
    assert network is not None
    assert [str(h) for h in network.hosts] == ["api.open-meteo.com"]
    assert network.reason == "Look up weather forecasts"
    assert network.allow_local_network is False


def test_resources_are_parsed_with_the_digest(ex02: Json) -> None:
    """OD-P09."""
    digest = "AB" * 32
    ex02["resources"] = [{"url": "https://cdn.example.com/m.bin", "sha256": f"sha256:{digest}", "description": "M"}]
    assert parse_manifest(ex02).resources == (ResourceSpec("https://cdn.example.com/m.bin", digest.lower(), "M", None),)


def test_declared_descriptions_feed_the_permission_sentences(ex01: Json) -> None:
    """K-MAN-13, OD-K51."""
    ex01["knowledge"]["permissions"] += ["facts.write:self:pref.food.rated"]
    manifest = parse_manifest(ex01)
    written = Permission.parse("facts.write:self:pref.food.rated")
    text = sentence(written, lang="en", describe_predicate=manifest.knowledge.describe_predicate)
    assert text == "Record “Dishes you have rated highly, used to recommend similar dishes. Example: braised pork”"


@pytest.mark.parametrize(
    ("data", "form"),
    [
        ({"name": "g", "knowledge": {}}, "draft"),
        ({"name": "g", "permissions": {"knowledge": {}}}, "packaged"),
        (
            {
                "name": "g",
                "permissions": {"network": {"hosts": [], "allow_local_network": True, "reason": "r"}},
            },
            "draft",
        ),
        (
            {
                "name": "g",
                "permissions": {"network": {"hosts": [], "allowLocalNetwork": True, "reason": "r"}},
            },
            "packaged",
        ),
        ({"name": "g", "tools": [{"name": "t", "permissions": {"knowledge": True}}]}, "packaged"),
        ({"name": "g", "tools": [{"name": "t", "permissions": ["knowledge"]}]}, "draft"),
        ({"name": "g", "entry": "tools/t.js"}, "draft"),
        ({"name": "g", "id": "g", "version": "1.0.0"}, "packaged"),
        ({"name": "g"}, "draft"),
    ],
)
def test_form_is_guessed_from_the_content_when_not_given(data: Json, form: str) -> None:
    """K-MAN-01/04: where the knowledge section sits decides first."""
    assert parse_manifest(data).form == form


def test_a_manifest_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(["name"])
    assert caught.value.problems == ("$: a manifest must be a JSON object",)


# --- load_manifest ------------------------------------------------------------------------------


def test_loads_ex01_from_its_folder(manifests_dir: Path) -> None:
    manifest = load_manifest(manifests_dir / "ex01")
    assert manifest.form == "draft"
    assert manifest.source == str(manifests_dir / "ex01" / "manifest.json")


def test_packaged_file_is_preferred_over_the_draft(tmp_path: Path, ex01: Json, ex02: Json) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps(ex01), encoding="utf-8")
    (tmp_path / "notochord.json").write_text(json.dumps(ex02), encoding="utf-8")
    manifest = load_manifest(tmp_path)
    assert (manifest.form, manifest.id) == ("packaged", "home-weather")
    assert load_manifest(tmp_path / "manifest.json").form == "draft"


def test_file_name_decides_the_form(tmp_path: Path, ex01: Json) -> None:
    """A draft saved as notochord.json is read as packaged, and its misplaced section is reported."""
    (tmp_path / "notochord.json").write_text(json.dumps(ex01), encoding="utf-8")
    with pytest.raises(ManifestError) as caught:
        load_manifest(tmp_path)
    assert problem_paths(caught.value) == ["knowledge"]
    assert caught.value.message.startswith(f"invalid manifest {tmp_path / 'notochord.json'}")


def test_folder_without_a_manifest_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"no notochord\.json or manifest\.json"):
        load_manifest(tmp_path)


NOT_JSON = "$: the manifest is not valid JSON"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", f"{NOT_JSON}: the file is empty", id="empty"),
        pytest.param("\n  \n", f"{NOT_JSON}: the file is empty", id="only-blank-lines"),
        pytest.param(
            "name = x",
            f"{NOT_JSON} at line 1, column 1: a value is missing or is not JSON (text goes in double quotes)",
            id="not-json",
        ),
        pytest.param(
            "{\"name\": 'x'}",
            f"{NOT_JSON} at line 1, column 10: a value is missing or is not JSON (text goes in double quotes)",
            id="single-quotes",
        ),
        pytest.param(
            '{"name": "x",\n}',
            f"{NOT_JSON} at line 2, column 1: a key in double quotes is expected here "
            "(is there a comma after the last item?)",
            id="trailing-comma",
        ),
        pytest.param(
            '{name: "x"}',
            f"{NOT_JSON} at line 1, column 2: a key in double quotes is expected here "
            "(is there a comma after the last item?)",
            id="bare-key",
        ),
        pytest.param(
            '{"name" "x"}', f"{NOT_JSON} at line 1, column 9: a colon is expected after the key", id="no-colon"
        ),
        pytest.param(
            '{"name": "x"\n "kind": "app"}',
            f"{NOT_JSON} at line 2, column 2: a comma is expected between two items",
            id="no-comma",
        ),
        pytest.param(
            '{"name": "x',
            f"{NOT_JSON} at line 1, column 10: this text is never closed with a double quote",
            id="open-text",
        ),
        pytest.param(
            '{"name": "a\tb"}',
            f"{NOT_JSON} at line 1, column 12: text holds a raw line break, tab or other control character; "
            "write it as an escape such as \\n or \\t",
            id="raw-tab",
        ),
        pytest.param(
            '{"name": "a\\qb"}',
            f"{NOT_JSON} at line 1, column 12: a backslash starts no known escape; write \\\\ for a backslash",
            id="bad-escape",
        ),
        pytest.param(
            '{"name": "a\\u12"}',
            f"{NOT_JSON} at line 1, column 13: a \\u escape needs four hexadecimal digits",
            id="short-unicode-escape",
        ),
        pytest.param(
            '{"name": "x"} {}',
            f"{NOT_JSON} at line 1, column 15: more text follows the end of the manifest",
            id="extra",
        ),
        pytest.param(
            '{"name": ' + "[" * 100_000, f"{NOT_JSON}: it nests lists or objects too deeply to read", id="deep-nesting"
        ),
        pytest.param(
            '{"name": ' + "9" * 5_000 + "}", f"{NOT_JSON}: it holds a number too long to read", id="long-number"
        ),
    ],
)
def test_a_manifest_that_is_not_json_is_told_where_and_why_in_plain_words(
    tmp_path: Path, text: str, expected: str
) -> None:
    """OD-P10: one ``<json path>: <problem>`` line saying the manifest is not valid JSON, at which
    line and column and what is wrong there, with none of Python's JSON reader's wording."""
    (tmp_path / "manifest.json").write_text(text, encoding="utf-8")
    with pytest.raises(ManifestError) as caught:
        load_manifest(tmp_path)
    assert caught.value.problems == (expected,)
    for words in ("Expecting", "char ", "delimiter", "Extra data", "Unterminated", "Invalid", "property name"):
        assert words not in caught.value.message


def test_a_key_given_twice_is_refused(tmp_path: Path) -> None:
    """Two values for one key must never leave the choice of request to the JSON reader."""
    text = '{"name": "x", "knowledge": {"permissions": []}, "knowledge": {"permissions": ["changes.manage"]}}'
    (tmp_path / "manifest.json").write_text(text, encoding="utf-8")
    with pytest.raises(ManifestError) as caught:
        load_manifest(tmp_path)
    assert caught.value.problems == ('$: key "knowledge" appears twice in one object',)


def test_a_manifest_that_is_not_utf8_is_told_where_in_plain_words(tmp_path: Path) -> None:
    """OD-P10: a manifest saved in another encoding names the line and column of its first
    undecodable byte and the encoding to save it in, not the decoder's wording."""
    (tmp_path / "manifest.json").write_bytes('{\n  "name": "Caf\u00e9"\n}'.encode("latin-1"))
    with pytest.raises(ManifestError) as caught:
        load_manifest(tmp_path)
    assert caught.value.problems == (
        "$: the manifest is not UTF-8 text: the byte 0xE9 at line 2, column 15 is not UTF-8; save the file as UTF-8",
    )
    for words in ("codec", "can't decode", "position", "invalid continuation"):
        assert words not in caught.value.message


def test_a_manifest_that_cannot_be_read_says_so_without_the_system_s_wording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OD-P10: a manifest the system refuses to read is named as such, with the reason in plain words."""
    (tmp_path / "manifest.json").write_text('{"name": "x"}', encoding="utf-8")

    def refused(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", refused)
    with pytest.raises(ManifestError) as caught:
        load_manifest(tmp_path)
    assert caught.value.problems == (
        "$: the manifest file cannot be read: permission denied; check that you may read it",
    )
    assert "Errno" not in caught.value.message
