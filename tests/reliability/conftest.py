"""The reliability suite's table: each scenario adds one row, printed at the end of the run
(the rows of docs/RELIABILITY.md come from this output)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.reliability import harness


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/reliability/" in str(item.fspath):
            item.add_marker(pytest.mark.reliability)


def pytest_terminal_summary(terminalreporter):
    if not harness.ROWS:
        return
    terminalreporter.write_sep("-", "reliability")
    terminalreporter.write_line(harness.HEADER)
    for row in harness.ROWS:
        terminalreporter.write_line(row)
    table = os.environ.get("DOCKETEER_RELIABILITY_TABLE")  # a file for docs/RELIABILITY.md's figures
    if table:
        Path(table).write_text("\n".join([harness.HEADER, *harness.ROWS]) + "\n")


@pytest.fixture(autouse=True, scope="session")
def _short_data_folders(tmp_path_factory):
    harness.DATA_ROOT = tmp_path_factory.getbasetemp()


@pytest.fixture(scope="session")
def reference(tmp_path_factory, pg_server) -> dict:
    """The store after one uninterrupted run (every scenario compares with it)."""
    with harness.world(tmp_path_factory.mktemp("reference"), pg_server) as w:
        code, output = w.luigi()
        assert code == 0, output[-2000:]
        return harness.snapshot(w)
