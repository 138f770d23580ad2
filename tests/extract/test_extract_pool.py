"""The extract pool's fork server: what it does once so that each worker need not."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.fixtures.paths import ROOT as REPO

# A main script that logs each import of itself, then runs two pools of two workers.
# multiprocessing imports a parent's main script in every new worker; the fork server
# must do it once for them all (CPython gh-137996 broke "__main__" preloading).
MAIN_SCRIPT = '''
import os
import sys
from pathlib import Path

with open(os.environ["IMPORT_LOG"], "a") as log:
    log.write(f"{os.getpid()}\\n")

from pipeline.extract.pool import ExtractPool, FileJob, ItemJob
from pipeline.extract.readers import ExtractLimits

if __name__ == "__main__":
    letter = Path(sys.argv[1])
    for _ in range(2):
        with ExtractPool(ExtractLimits(), 2) as pool:
            jobs = [ItemJob(f"item-{n}", (FileJob(str(letter), "letter.txt"),)) for n in range(6)]
            results = list(pool.map(jobs))
        assert [r.texts[0].status for r in results] == ["ok"] * 6, results
    assert "DOCKETEER_EXTRACT_MAIN_PATH" not in os.environ  # only the server's start saw it
'''


def test_workers_do_not_import_the_main_script_again(tmp_path):
    script, log, letter = tmp_path / "main_script.py", tmp_path / "imports.log", tmp_path / "letter.txt"
    script.write_text(MAIN_SCRIPT)
    letter.write_text("A letter long enough to count as a comment of its own, not a stub.")
    env = {**os.environ, "IMPORT_LOG": str(log),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}

    done = subprocess.run([sys.executable, str(script), str(letter)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)

    assert done.returncode == 0, done.stderr
    importers = log.read_text().split()
    # The script itself, then the fork server once: not the four workers it forked.
    assert len(importers) == len(set(importers)) == 2


READ_ONE = '''
import sys
from pathlib import Path
from pipeline.extract.pool import ExtractPool, FileJob, ItemJob
from pipeline.extract.readers import ExtractLimits
import os

if __name__ == "__main__":
    assert os.environ["ORT_DISABLE_TELEMETRY"] == sys.argv[2]
    with ExtractPool(ExtractLimits(), 1) as pool:
        [result] = pool.map([ItemJob("item", (FileJob(sys.argv[1], "letter.pdf"),))])
    assert result.texts[0].status == "ok", result
'''


def test_reading_a_pdf_writes_nothing_outside_the_data_folder(tmp_path):
    """No library may leave files in HOME or TMPDIR (onnxruntime's telemetry, which pymupdf 2
    brings along, does unless ORT_DISABLE_TELEMETRY=1: pipeline/__init__ sets it)."""
    import pymupdf

    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    pdf = tmp_path / "data" / "letter.pdf"
    pdf.parent.mkdir()
    with pymupdf.open() as doc:
        doc.new_page().insert_text((72, 72), "A letter long enough to be a comment of its own, not a stub.")
        doc.save(pdf)
    script = tmp_path / "data" / "read_one.py"
    script.write_text(READ_ONE)
    base = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env = {**base, "HOME": str(home), "TMPDIR": str(tmp), "XDG_CACHE_HOME": str(home / ".cache"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}

    # Set by default; a user's own choice wins (and with pymupdf < 2 nothing brings
    # onnxruntime along, so even opting in writes nothing).
    for given, expected in ((None, "1"), ("0", "0")):
        run_env = env if given is None else {**env, "ORT_DISABLE_TELEMETRY": given}
        done = subprocess.run([sys.executable, str(script), str(pdf), expected], env=run_env,
                              cwd=pdf.parent, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    assert list(home.rglob("*")) == [] and list(tmp.rglob("*")) == []
