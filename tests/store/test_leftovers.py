"""Scratch of dead runs (blob part files, extract scratch folders) is removed by the next
run, only when no live process owns it, and `docketeer verify` reports it meanwhile."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from pipeline.engine.progress import KILL_HOOK
from pipeline.ops import verify
from pipeline.store import leftovers
from tests.fixtures.backfill_runs import dump
from tests.fixtures.chain_runs import KEY, _env_of, chain
from tests.fixtures.paths import ROOT

# A process that writes a part file and a scratch folder the way the pipeline does, says so,
# and waits to be killed.
OWNER = textwrap.dedent("""
    import sys, tempfile, time
    from pathlib import Path
    from pipeline.store import leftovers
    folder = Path(sys.argv[1])
    Path(leftovers.part_path(folder)).write_bytes(b"half a download")
    tempfile.mkdtemp(dir=folder, prefix=leftovers.scratch_prefix(folder))
    print("ready", flush=True)
    time.sleep(600)
""")


def _start_owner(folder: Path) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", OWNER, str(folder)], cwd=ROOT,
                               env={**os.environ, "PYTHONPATH": str(ROOT)},
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "ready"
    return process


def test_a_live_owners_scratch_is_kept_and_a_killed_ones_removed(tmp_path):
    folder = tmp_path / "tmp"
    process = _start_owner(folder)
    try:
        mine = Path(leftovers.part_path(folder))  # this process's own, live too
        mine.write_bytes(b"x")
        assert leftovers.find(folder).entries == []
        assert leftovers.remove(folder) == []
        assert len(list(folder.glob("*.part"))) == 2
    finally:
        process.kill()
        process.wait()
    found = leftovers.find(folder).entries
    assert len(found) == 2 and any(n.endswith(".part") for n in found)
    assert any(n.startswith("tmp") for n in found)
    assert sorted(leftovers.remove(folder)) == sorted(found)
    assert sorted(p.name for p in folder.iterdir() if not p.name.endswith(".owner")) == [mine.name]
    assert len(list(folder.glob("*.owner"))) == 1  # the dead owner's file went too; ours stays


def test_unowned_scratch_is_removed_only_past_its_age(tmp_path):
    folder = tmp_path / "tmp"
    folder.mkdir()
    (folder / "0123456789abcdef0123456789abcdef.part").write_bytes(b"old style")
    (folder / "tmpab12cd").mkdir()
    assert leftovers.find(folder).entries == []
    assert len(leftovers.remove(folder, unowned_max_age=-1)) == 2
    assert list(folder.iterdir()) == []


def _luigi(runtime, server, docket, tmp_path, **env) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LUIGI_CONFIG_PATH": str(ROOT / "luigi.cfg"),
           **_env_of(runtime, server, docket), **env}
    return subprocess.run([sys.executable, "-m", "luigi", "--module", "pipeline", "IndexAll",
                           "--local-scheduler", "--log-level", "WARNING"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)


def _store(runtime) -> tuple[dict, str]:
    runtime.state  # noqa: B018 - bind the models to this runtime's DB
    return dump(stable=True), runtime.index_db().dump_chunks()


def test_a_run_killed_mid_extract_leaves_scratch_the_next_run_removes(tmp_path, pg_server):
    with chain(tmp_path / "clean", pg_server, comments=12) as (runtime, server, docket, _root):
        assert _luigi(runtime, server, docket, tmp_path).returncode == 0
        expected = _store(runtime)
    with chain(tmp_path / "killed", pg_server, comments=12) as (runtime, server, docket, _root):
        killed = _luigi(runtime, server, docket, tmp_path, **{KILL_HOOK: "extract:4"})
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
        scratch = leftovers.find(runtime.data_dir / "tmp").entries
        assert scratch and all(name.startswith("tmp") for name in scratch)
        report = verify.run_checks(runtime)
        check = next(c for c in report.checks if c.name == "leftovers")
        assert check.label == "warn" and len(check.problems) == len(scratch)

        rerun = _luigi(runtime, server, docket, tmp_path)
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        assert leftovers.find(runtime.data_dir / "tmp").entries == []
        assert not any((runtime.data_dir / "tmp").glob("tmp*"))
        assert not any(Path(runtime.blobs.tmp_dir).glob("*.part"))
        assert _store(runtime) == expected
        assert KEY not in str(expected)


# A process that, like a `luigi` run, sends its temporary files to the data folder, then
# starts a forkserver worker (multiprocessing makes its socket folder in the temp folder)
# and a child program that writes where TMPDIR says; killed or not by its argument.
TEMPORARY = textwrap.dedent("""
    import multiprocessing, os, subprocess, sys, tempfile
    from pathlib import Path
    from pipeline.store import leftovers
    own = leftovers.temporary_files_in(Path(sys.argv[1]))
    assert own is not None, "the data folder is too deep for this test"
    worker = multiprocessing.get_context("forkserver").Process(target=print)
    worker.start(); worker.join()
    tempfile.mkstemp()
    subprocess.run(["sh", "-c", 'touch "$TMPDIR/child"'], check=True)
    print(own, flush=True)
    if sys.argv[2] == "kill":
        os.kill(os.getpid(), 9)
""")


def test_a_runs_temporary_files_stay_in_the_data_folder_and_go_with_it(tmp_path, tmp_path_factory):
    # A short data folder: a unix socket's path in it must fit the kernel's limit.
    data, outside = tmp_path_factory.mktemp("d"), tmp_path / "outside"
    outside.mkdir()
    for ending in ("exit", "kill"):
        done = subprocess.run([sys.executable, "-c", TEMPORARY, str(data), ending], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(outside)},
                              capture_output=True, text=True, timeout=120)
        own = Path(done.stdout.strip())
        assert own.parent == leftovers.scratch_dir(data), done.stderr
        assert list(outside.iterdir()) == []  # nothing in the system's temp folder
        if ending == "exit":
            assert not own.exists()  # removed at exit
        else:
            assert (own / "child").exists() and own.name in leftovers.find(own.parent).entries
            leftovers.remove(own.parent)
            assert not own.exists()
