"""The reliability suite's table: each scenario adds one row, printed at the end of the run
(the rows of docs/RELIABILITY.md come from this output)."""

from __future__ import annotations

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


@pytest.fixture(autouse=True, scope="session")
def _short_data_folders(tmp_path_factory):
    harness.DATA_ROOT = tmp_path_factory.getbasetemp()
