"""benchmarks/bench_extract.py runs end to end on a tiny corpus (its figures are not checked:
speed is measured by running the script, never asserted in a test)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.fixtures.paths import ROOT as REPO


def test_bench_extract_runs_and_reports_both_targets(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "bench_extract", "--pdfs", "4", "--pages", "2", "--rounds", "2"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)

    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "4 PDFs x 2 pages = 8 pages" in out
    for line in ("plain ", "plain+write ", "stage/1 ", "stage/2 ", "stage/1 over plain, wall: median",
                 "stage/1 over plain+write, CPU:  median",
                 "stage/2 speed-up over stage/1: median"):
        assert line in out, out
    assert list(tmp_path.iterdir()) == []  # its temporary folder is gone
