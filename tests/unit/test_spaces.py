"""Data spaces, the data directory and the object lifecycle (K-CON-08, OD-K47)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

import notochord
from notochord import ClosedError, ConfigurationError
from notochord.settings import Settings


def test_each_space_is_its_own_sqlite_file_and_nothing_crosses(nc: notochord.Notochord) -> None:
    """K-CON-08: personal data and each organization's data are stored physically apart."""
    nc.personal.user.facts.put(predicate="work.company", value="Personal Co")
    nc.org("acme", create=True).user.facts.put(predicate="work.company", value="Acme")
    assert nc.personal.path != nc.org("acme").path
    assert nc.personal.path.name == "personal.db"
    assert nc.org("acme").path.name == "org-acme.db"
    assert [f.value for f in nc.personal.user.facts.lookup("self", "work")] == ["Personal Co"]
    assert [f.value for f in nc.org("acme").user.facts.lookup("self", "work")] == ["Acme"]
    assert nc.org("other", create=True).user.facts.lookup("self", "work") == []
    assert nc.spaces() == ["org:acme", "org:other", "personal"]


def test_spaces_persist_across_opens(tmp_path: Path) -> None:
    with notochord.open(tmp_path) as first:
        put = first.personal.user.facts.put(predicate="location.home.city", value="Utrecht")
    with notochord.open(tmp_path) as second:
        assert second.personal.user.facts.get(put.id).value == "Utrecht"


def test_master_key_is_created_once_with_owner_only_permissions(tmp_path: Path) -> None:
    with notochord.open(tmp_path):
        pass
    key_path = tmp_path / "master.key"
    mode = stat.S_IMODE(key_path.stat().st_mode)
    assert mode == 0o600
    first = key_path.read_bytes()
    with notochord.open(tmp_path):
        pass
    assert key_path.read_bytes() == first
    assert len(first) == 32


def test_database_is_in_wal_mode_with_foreign_keys(nc: notochord.Notochord) -> None:
    space = nc.personal
    with space.core.store.read() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


@pytest.mark.parametrize("org_id", ["", "Acme", "../etc", "a" * 64, "acme corp"])
def test_malformed_organization_ids_are_refused(nc: notochord.Notochord, org_id: str) -> None:
    with pytest.raises(ConfigurationError, match="organization id"):
        nc.org(org_id)


def test_a_closed_notochord_says_so_when_used(tmp_path: Path) -> None:
    opened = notochord.open(tmp_path)
    opened.close()
    with pytest.raises(ClosedError, match="was closed"):
        opened.personal  # noqa: B018


def test_settings_come_from_environment_and_file_and_mask_secrets(tmp_path: Path) -> None:
    config = tmp_path / "notochord.toml"
    config.write_text('timezone = "Asia/Shanghai"\njwt_secret = "s3cret"\n', encoding="utf-8")
    settings = Settings.load(
        environ={
            "NOTOCHORD_CONFIG": str(config),
            "NOTOCHORD_DATA_DIR": str(tmp_path / "d"),
            "NOTOCHORD_TRUST_GATEWAY_HEADERS": "yes",
        }
    )
    assert settings.timezone == "Asia/Shanghai"
    assert settings.data_dir == tmp_path / "d"
    assert settings.trust_gateway_headers is True
    assert "s3cret" not in repr(settings)
    assert settings.jwt_secret == "s3cret"


@pytest.mark.parametrize(
    ("environ", "fragment"),
    [
        ({"NOTOCHORD_SQLITE_BUSY_TIMEOUT_MS": "soon"}, "sqlite_busy_timeout_ms"),
        ({"NOTOCHORD_INDEX_IN_BACKGROUND": "maybe"}, "expected a boolean"),
        ({"NOTOCHORD_DATA_DIR": ""}, "data_dir: the path is empty"),
        ({"NOTOCHORD_DATA_DIR": "  "}, "data_dir: the path is empty"),
    ],
)
def test_malformed_settings_name_the_setting(environ: dict[str, str], fragment: str) -> None:
    with pytest.raises(ConfigurationError, match=fragment):
        Settings.load(environ=environ)


def test_unknown_keys_in_the_settings_file_are_refused(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('colour = "blue"\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match="unknown setting"):
        Settings.load(environ={}, config_file=config)
