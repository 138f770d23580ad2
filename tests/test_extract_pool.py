"""The extract pool's fork server: what it does once so that each worker need not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

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
