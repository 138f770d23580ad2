"""pyarrow is an extra (``docketeer[export]``): without it, export says so in one line and
exits 2, before anything is written."""

from __future__ import annotations

import sys

import pytest

from pipeline.ops import cli
from pipeline.ops.export import ExportError, export
from pipeline.store import dockets


@pytest.mark.parametrize("chosen", [[], ["--format", "parquet"], ["--format", "csv"]])
def test_export_without_pyarrow_names_the_extra_in_one_line(sqlite_state, tmp_path, monkeypatch, capsys, chosen):
    dockets.ensure_dockets(["CMS-2026-0401"], "list")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if it were not installed
    dest = tmp_path / "dest"
    assert cli.main(["export", str(dest), *chosen]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ("docketeer: export needs pyarrow, which is not installed: "
                            "pip install 'docketeer[export]'\n")
    assert not dest.exists()
    with pytest.raises(ExportError, match=r"docketeer\[export\]"):
        export(sqlite_state, dest)
