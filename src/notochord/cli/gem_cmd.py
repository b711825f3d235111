"""``notochord gem``: install gems and decide what they may do."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from notochord.cli.common import DataDir, JsonFlag, OrgOption, emit, given_path, open_space
from notochord.errors import GemNotFoundError
from notochord.knowledge.arguments import counted

if TYPE_CHECKING:
    import notochord
    from notochord.gems.registry import InstalledGem, PermissionSwitch

app = typer.Typer(help="Install gems and switch their permissions on or off.", no_args_is_help=True)

GemId = Annotated[str, typer.Argument(help="The gem's id.")]


def _gem_source(value: str | Path) -> Path:
    """The gem's folder or manifest file named on the command line, which must exist: the manifest
    reader would otherwise report a missing path as an invalid manifest."""
    path = given_path(value)
    try:
        missing = not path.exists()
    except OSError:  # a name too long, a folder it may not search: the manifest reader names why
        return path
    if missing:
        raise typer.BadParameter(
            f"{path} does not exist; give the gem's folder (the one with notochord.json or manifest.json)"
        )
    return path


@app.command("install")
def install(
    path: Annotated[
        Path, typer.Argument(help="The gem's folder (with notochord.json or manifest.json).", parser=_gem_source)
    ],
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Install a gem. Every permission it requests starts switched off."""
    with open_space(data_dir, org) as space:
        gem = space.gems.install(path)
        switches = space.gems.permissions(gem.id)
    result = {
        "id": gem.id,
        "name": gem.name,
        "version": gem.version,
        "permissions": [_switch_json(s) for s in switches],
        "leftOut": dict(gem.left_out),
    }
    lines = [f"installed {gem.name} ({gem.id}); every permission is off:"]
    lines += [f"  [ ] {s.permission:<40} {s.sentence_en}" for s in switches]
    if gem.manifest.knowledge.reason:
        lines.append(f"reason: {gem.manifest.knowledge.reason}")
    lines.append(f"switch them on with: notochord gem grant {gem.id} PERMISSION...")
    lines += _left_out_lines(gem)
    emit(result, as_json=as_json, text="\n".join(lines))


@app.command("upgrade")
def upgrade(
    path: Annotated[Path, typer.Argument(help="The gem's folder with the new manifest.", parser=_gem_source)],
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Upgrade a gem: switches you turned on stay on, new permissions start off."""
    with open_space(data_dir, org) as space:
        before = _requested(space, path)
        gem = space.gems.upgrade(path)
        switches = space.gems.permissions(gem.id)
    added = [s for s in switches if s.permission not in before]
    dropped = sorted(before - {s.permission for s in switches})
    result = {
        "id": gem.id,
        "version": gem.version,
        "added": [_switch_json(s) for s in added],
        "dropped": dropped,
        "leftOut": dict(gem.left_out),
    }
    lines = [f"upgraded {gem.id} to {gem.version}"]
    if added:
        lines.append("new permissions, switched off:")
        lines += [f"  [ ] {s.permission:<40} {s.sentence_en}" for s in added]
        lines.append(f"switch them on with: notochord gem grant {gem.id} PERMISSION...")
    else:
        lines.append("no new permissions")
    if dropped:
        lines.append("no longer requested (their switches are gone): " + ", ".join(dropped))
    lines += _left_out_lines(gem)
    emit(result, as_json=as_json, text="\n".join(lines))


def _switch_json(switch: PermissionSwitch) -> dict[str, object]:
    return {
        "permission": switch.permission,
        "on": switch.on,
        "sentenceEn": switch.sentence_en,
        "sentenceZh": switch.sentence_zh,
    }


def _left_out_lines(gem: InstalledGem) -> list[str]:
    """What the copy kept with the installation left out of the folder, in words."""
    from notochord.gems.package import describe_left_out

    if not gem.left_out:
        return []
    return [f"left out of the copy, as never part of a gem: {describe_left_out(dict(gem.left_out))}"]


def _requested(space: notochord.Space, path: Path) -> set[str]:
    """What the installed version of the gem in ``path`` requests; the upgrade itself checks the rest."""
    from notochord.gems.manifest import read_manifest  # only when upgrading: keeps `--help` quick

    manifest, _ = read_manifest(path)
    try:
        return {s.permission for s in space.gems.permissions(manifest.id)}
    except GemNotFoundError:
        return set()  # the upgrade refuses it, with the words for an upgrade


@app.command("list")
def list_gems(org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """List installed gems."""
    with open_space(data_dir, org) as space:
        found = [{"id": g.id, "name": g.name, "version": g.version} for g in space.gems.list()]
    emit(
        found,
        as_json=as_json,
        text="\n".join(f"{g['id']:<24} {g['name']} {g['version'] or ''}" for g in found) or "(no gems)",
    )


@app.command("show")
def show(gem_id: GemId, org: OrgOption = None, data_dir: DataDir = None, as_json: JsonFlag = False) -> None:
    """Show a gem: its tools, what it requests, and what it contributed."""
    with open_space(data_dir, org) as space:
        gem = space.gems.get(gem_id)
        switches = space.gems.permissions(gem_id)
        counts = space.gems.contributions(gem_id)
    result = {
        "id": gem.id,
        "name": gem.name,
        "version": gem.version,
        "description": gem.description,
        "tools": [{"name": t.name, "entry": t.entry, "knowledge": t.knowledge} for t in gem.manifest.tools],
        "reason": gem.manifest.knowledge.reason,
        "permissions": [_switch_json(s) for s in switches],
        "contributed": counts,
    }
    lines = [f"{gem.name} ({gem.id}) {gem.version or ''}", gem.description or ""]
    lines += [
        f"  tool {t.name}: {t.entry or '-'}{'' if t.knowledge else ' (no knowledge)'}" for t in gem.manifest.tools
    ]
    lines += [f"  [{'x' if s.on else ' '}] {s.permission:<40} {s.sentence_en}" for s in switches]
    contributed = f"{counts['facts']} facts, {counts['documents']} documents, {counts['collections']} collections"
    lines.append(f"  contributed: {contributed}")
    emit(result, as_json=as_json, text="\n".join(line for line in lines if line))


@app.command("permissions")
def permissions(
    gem_id: GemId,
    lang: Annotated[str, typer.Option(help="Sentence language: en or zh.")] = "en",
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """List the gem's permission switches with the sentence shown to you."""
    if lang not in {"en", "zh"}:
        raise typer.BadParameter("use en or zh", param_hint="--lang")
    with open_space(data_dir, org) as space:
        switches = space.gems.permissions(gem_id)
    lines = [
        f"[{'x' if s.on else ' '}] {s.permission:<40} {s.sentence_en if lang == 'en' else s.sentence_zh}"
        for s in switches
    ]
    emit([_switch_json(s) for s in switches], as_json=as_json, text="\n".join(lines) or "(requests no permissions)")


Permissions = Annotated[
    list[str],
    typer.Argument(metavar="PERMISSION", help="Permissions the gem requested, as in its manifest.", show_default=False),
]


def _switch(
    gem_id: str, permissions: list[str], on: bool, org: str | None, data_dir: Path | None, as_json: bool
) -> None:
    with open_space(data_dir, org) as space:
        switched = space.gems.set_permissions(gem_id, permissions, on)
    state = "on" if on else "off"
    result: dict[str, object] = {"gem": gem_id, "permissions": switched, "on": on}
    if len(switched) == 1:
        result["permission"] = switched[0]
    emit(result, as_json=as_json, text="\n".join(f"{p} is now {state} for {gem_id}" for p in switched))


@app.command("grant")
def grant(
    gem_id: GemId,
    permissions: Permissions,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Switch requested permissions on (effective on the gem's next call); none if one was not requested."""
    _switch(gem_id, permissions, True, org, data_dir, as_json)


@app.command("revoke")
def revoke(
    gem_id: GemId,
    permissions: Permissions,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Switch permissions off (effective on the gem's next call)."""
    _switch(gem_id, permissions, False, org, data_dir, as_json)


@app.command("uninstall")
def uninstall(
    gem_id: GemId,
    delete_data: Annotated[
        bool, typer.Option("--delete-data", help="Also delete what the gem wrote (revertible as one batch).")
    ] = False,
    org: OrgOption = None,
    data_dir: DataDir = None,
    as_json: JsonFlag = False,
) -> None:
    """Uninstall a gem. Its knowledge is kept unless --delete-data; its private storage always goes."""
    with open_space(data_dir, org) as space:
        report = space.gems.uninstall(gem_id, delete_data=delete_data)
    counts = ", ".join(
        counted(n, noun)
        for n, noun in ((report.facts, "fact"), (report.documents, "document"), (report.collections, "collection"))
    )
    if delete_data and report.run_id is None:
        text = f"uninstalled {gem_id}; nothing it wrote was left to delete"
    elif delete_data:
        undo = f"notochord changes revert --run '{report.run_id}'"
        text = f"uninstalled {gem_id} and deleted {counts}; undo with: {undo}"
    else:
        text = f"uninstalled {gem_id}; kept {counts}"
    result = {
        "gemId": report.gem_id,
        "facts": report.facts,
        "documents": report.documents,
        "collections": report.collections,
        "deleted": report.deleted,
        "runId": report.run_id,
    }
    emit(result, as_json=as_json, text=text)
