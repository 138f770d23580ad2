"""The store in every task id: one digest per state DB, never of a password."""

from __future__ import annotations

import pytest

import pipeline
from pipeline.engine.store_scope import state_db_identity, store_of
from pipeline.runtime import set_runtime
from tests.fixtures.state_fixtures import make_runtime


def _settings(tmp_path, **values):
    return make_runtime(tmp_path, **values).settings


def test_two_data_folders_are_two_stores(tmp_path):
    assert store_of(_settings(tmp_path / "a")) != store_of(_settings(tmp_path / "b"))
    assert store_of(_settings(tmp_path / "a")) == store_of(_settings(tmp_path / "a"))


def test_hosts_of_one_postgresql_store_are_one_store_whatever_their_data_folders_and_logins(tmp_path):
    url = "postgresql://worker:{}@db.internal:5433/docketeer"
    one = _settings(tmp_path / "host-a", state_url=url.format("s3cret"), index_url="postgresql://db.internal/ix",
                    blob_url="s3://bucket/blobs")
    two = _settings(tmp_path / "host-b", state_url=url.format("other"), index_url="postgresql://db.internal/ix",
                    blob_url="s3://bucket/blobs")
    assert store_of(one) == store_of(two)
    assert "s3cret" not in state_db_identity(one) and "worker" not in state_db_identity(one)
    elsewhere = _settings(tmp_path / "host-a", state_url="postgresql://worker:x@db.internal:5433/other",
                          index_url="postgresql://db.internal/ix", blob_url="s3://bucket/blobs")
    assert store_of(elsewhere) != store_of(one)


def test_every_task_id_names_its_store_and_a_stage_task_and_its_wrapper_agree(tmp_path):
    set_runtime(make_runtime(tmp_path))
    store = store_of(make_runtime(tmp_path).settings)
    for task in (pipeline.IndexAll(), pipeline.FetchComments(docket="AB-2026-0001"), pipeline.DiscoverDockets()):
        assert task.store == store and store in task.task_id
        assert str(task).endswith(f"store={store})")  # last, after the docket and version


def test_a_task_built_for_another_store_is_refused(tmp_path, capsys):
    set_runtime(make_runtime(tmp_path))
    with pytest.raises(SystemExit) as stopped:
        pipeline.IndexDocket(docket="AB-2026-0001", store="0123456789")
    assert stopped.value.code == 2
    assert "names another store" in capsys.readouterr().err
