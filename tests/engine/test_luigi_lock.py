"""Luigi's process lock lives in the data folder: the same command on two data folders runs
both, and nothing is written to the system's temporary folder (Luigi's default lock place)."""

from __future__ import annotations

import os
import subprocess
import sys

from pipeline.config import LUIGI_LOCK_FOLDER
from pipeline.runtime import set_runtime
from tests.fixtures.chain_runs import _env_of, assert_all_indexed, chain
from tests.fixtures.paths import ROOT


def test_the_same_command_on_two_data_folders_at_once_runs_both(tmp_path, pg_server):
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    command = [sys.executable, "-m", "luigi", "--module", "pipeline", "IndexAll",
               "--local-scheduler", "--log-level", "WARNING"]
    with chain(tmp_path / "a", pg_server, comments=8) as (rt_a, server_a, docket_a, _), \
            chain(tmp_path / "b", pg_server, comments=8) as (rt_b, server_b, docket_b, _):
        runs = []
        for runtime, server, docket in ((rt_a, server_a, docket_a), (rt_b, server_b, docket_b)):
            env = {**os.environ, "PYTHONPATH": str(ROOT), "LUIGI_CONFIG_PATH": str(ROOT / "luigi.cfg"),
                   "TMPDIR": str(system_tmp), **_env_of(runtime, server, docket)}
            runs.append(subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True))
        outcomes = [(p.wait(timeout=300), *p.communicate()) for p in runs]
        for code, out, err in outcomes:
            assert code == 0, (out + err)[-2000:]
        for runtime, docket in ((rt_a, docket_a), (rt_b, docket_b)):
            set_runtime(runtime)
            runtime.state  # noqa: B018 - bind the models to this runtime's DB
            assert_all_indexed(runtime, docket)
            assert (runtime.data_dir / LUIGI_LOCK_FOLDER).is_dir()
        set_runtime(rt_b)
    assert not (system_tmp / "luigi").exists()
