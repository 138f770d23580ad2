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


@pytest.mark.timeout(60)  # reading a FIFO would wait for ever
@pytest.mark.parametrize("name", ["README.txt", f"{DOCKET}/export.json", f"{DOCKET}/comments.csv",
                                  f"{DOCKET}/comments.parquet", DOCKET])
@pytest.mark.parametrize("kind", ["fifo", "folder", "file_for_folder"])
def test_a_fifo_or_other_non_file_where_export_writes_is_refused_in_one_line(one_docket, tmp_path, capsys, name, kind):
    import os

    dest = tmp_path / "dest"
    (dest / DOCKET).mkdir(parents=True)
    target = dest / name
    if name == DOCKET:
        if kind != "file_for_folder":
            pytest.skip("the docket's folder is a folder")
        target.rmdir()
        target.write_text("not a folder")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    else:
        pytest.skip("a file where a file goes is fine")
    with pytest.raises(ExportError, match="is not a"):
        export(one_docket, dest)
    assert cli.main(["export", str(dest)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a" in err[0], err


def test_a_killed_exports_temporary_files_are_removed_by_the_next_and_a_running_ones_kept(one_docket, tmp_path):
    import os
    import subprocess

    dest = tmp_path / "dest"
    export(one_docket, dest)
    gone = subprocess.Popen(["true"])
    gone.wait()  # a process that has ended: an export it ran was killed
    folder = dest / DOCKET
    killed = [folder / f".comments.parquet.{gone.pid}-abc123.partial", folder / f".export.json.{gone.pid}-x.partial",
              dest / f".README.txt.{gone.pid}-q.partial"]
    running = folder / f".comments.csv.{os.getpid()}-def456.partial"
    foreign = folder / f".notes.txt.{gone.pid}-zzz.partial"  # not a file export writes: never touched
    for path in [*killed, running, foreign]:
        path.write_bytes(b"half")
    (folder / "export.json").unlink()  # the docket is written again
    export(one_docket, dest)
    assert not any(p.exists() for p in killed)
    assert running.exists() and foreign.exists()
    assert not [p for p in folder.iterdir() if p.name.endswith(".partial") and p not in (running, foreign)]
