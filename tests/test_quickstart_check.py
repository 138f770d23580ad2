"""The quickstart's "nothing was redone" is read from Luigi's summary of the second run."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _quickstart():
    spec = importlib.util.spec_from_file_location("quickstart", ROOT / "scripts" / "quickstart.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NOTHING_RAN = """\
INFO: Informed scheduler that task   IndexAll__99914b932b   has status   DONE
===== Luigi Execution Summary =====

Scheduled 1 tasks of which:
* 1 complete ones were encountered:
    - 1 IndexAll(docket=, force=False)

Did not run any tasks
This progress looks :) because there were no failed tasks or missing dependencies

===== Luigi Execution Summary =====
"""

SOME_RAN = """\
===== Luigi Execution Summary =====

Scheduled 4 tasks of which:
* 2 complete ones were encountered:
    - 1 DiscoverDockets()
    - 1 FetchComments(docket=AB-2026-0001, version=None)
* 2 ran successfully:
    - 1 IndexAll(docket=, force=False)
    - 1 IndexDocket(docket=AB-2026-0001, version=None)

This progress looks :) because there were no failed tasks or missing dependencies

===== Luigi Execution Summary =====
"""


def test_a_run_with_only_complete_tasks_ran_nothing():
    assert _quickstart().tasks_that_ran(NOTHING_RAN) == []


def test_a_run_that_ran_tasks_names_them():
    assert _quickstart().tasks_that_ran(SOME_RAN) == [
        "* 2 ran successfully: 1 IndexAll(docket=, force=False)",
        "* 2 ran successfully: 1 IndexDocket(docket=AB-2026-0001, version=None)",
    ]
