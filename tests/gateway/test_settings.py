"""SWITCHYARD_DB_TRANSACTION_POOLING (gateway/settings.py): behind a pooler in transaction
pooling mode the default database has no server-side cursors and no prepared statements;
without it the database's settings are Django's defaults. No database is asked: the
settings module is read again, under the environment given, as a module of its own."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from gateway import settings as loaded

POSTGRES = "postgres://postgres@127.0.0.1:6432/switchyard"


def _settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **env: str) -> ModuleType:
    monkeypatch.setenv("DATABASE_URL", POSTGRES)
    monkeypatch.setenv("SWITCHYARD_DATA_DIR", str(tmp_path))  # its dev secrets go there
    monkeypatch.delenv("SWITCHYARD_DB_TRANSACTION_POOLING", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    spec = importlib.util.spec_from_file_location("settings_under_test", loaded.__file__)
    assert spec
    assert spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_transaction_pooling_disables_server_side_cursors_and_prepared_statements(
    monkeypatch, tmp_path
):
    # given the flag on a PostgreSQL database
    settings = _settings(monkeypatch, tmp_path, SWITCHYARD_DB_TRANSACTION_POOLING="1")
    # then .iterator() fetches without a server-side cursor and psycopg never prepares
    database = settings.DATABASES["default"]
    assert database["DISABLE_SERVER_SIDE_CURSORS"] is True
    assert "prepare_threshold" in database["OPTIONS"]
    assert database["OPTIONS"]["prepare_threshold"] is None
    # and the rest of the database's settings are those it has without the flag
    assert database["CONN_MAX_AGE"] == 0
    assert database["OPTIONS"]["connect_timeout"] == 3


@pytest.mark.parametrize("flag", [None, "0", "false"])
def test_without_transaction_pooling_both_are_left_unset(monkeypatch, tmp_path, flag):
    # given the flag unset or off
    env = {} if flag is None else {"SWITCHYARD_DB_TRANSACTION_POOLING": flag}
    settings = _settings(monkeypatch, tmp_path, **env)
    # then neither option is set: Django's defaults hold
    database = settings.DATABASES["default"]
    assert "DISABLE_SERVER_SIDE_CURSORS" not in database
    assert "prepare_threshold" not in database["OPTIONS"]
