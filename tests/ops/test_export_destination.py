"""Export writes only where it is told: never inside the store's folders, never through a
symbolic link inside DEST."""

from __future__ import annotations

import pytest

from pipeline.ops import cli
from pipeline.ops.export import ExportError, export
from pipeline.store import dockets

DOCKET = "CMS-2026-0401"


@pytest.fixture
def one_docket(sqlite_state):
    dockets.ensure_dockets([DOCKET], "list")
    return sqlite_state


@pytest.mark.parametrize("where", ["data", "blobs", "data_itself"])
def test_a_destination_inside_the_store_is_refused_before_anything_is_written(one_docket, where, capsys):
    data = one_docket.data_dir
    dest = {"data": data / "exports", "blobs": data / "blobs" / "out", "data_itself": data}[where]
    before = sorted(p for p in data.rglob("*"))
    with pytest.raises(ExportError, match="inside the store's folder"):
        export(one_docket, dest)
    assert sorted(p for p in data.rglob("*")) == before
    assert cli.main(["export", str(dest)]) == 2
    assert "inside the store's folder" in capsys.readouterr().err


def test_a_symlinked_docket_folder_or_file_is_never_written_through(one_docket, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / DOCKET).symlink_to(outside, target_is_directory=True)
    with pytest.raises(ExportError, match="is a symbolic link"):
        export(one_docket, dest)
    assert list(outside.iterdir()) == [] and not (dest / "README.txt").exists()
    (dest / DOCKET).unlink()
    (dest / DOCKET).mkdir()
    (dest / DOCKET / "comments.csv").symlink_to(outside / "comments.csv")
    with pytest.raises(ExportError, match="comments.csv is a symbolic link"):
        export(one_docket, dest)
    assert list(outside.iterdir()) == []
    (dest / DOCKET / "comments.csv").unlink()
    assert export(one_docket, dest).written == [DOCKET]  # a plain folder is written
    assert (dest / DOCKET / "comments.csv").is_file() and list(outside.iterdir()) == []
