"""Screenshots of luigid's visualiser after a run a spent budget stopped and after one that
finished: what docs/OPERATING.md ("What a run left undone looks like") describes.

Each run gets a fresh luigid (state under the scratch folder, reading the clone's luigi.cfg
as docs/OPERATING.md starts it), a fresh store over a small generated corpus served by the
stand-in API, and `luigi --module pipeline IndexAll` against it; headless Chromium then
photographs the visualiser's task list.

    python -m devtools.visualiser_screenshots            # writes docs/visualiser-{partial,done}.png
    python -m devtools.visualiser_screenshots --scratch /tmp/shots --out /tmp/shots
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from devtools.make_corpus import make_corpus
from devtools.standin_server import StandinServer

ROOT = Path(__file__).resolve().parent.parent
LUIGID = Path(sys.executable).with_name("luigid")
SHOTS = (("visualiser-partial.png", ("--request-budget", "6")), ("visualiser-done.png", ()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="where the PNGs go")
    parser.add_argument("--scratch", type=Path, default=None,
                        help="a scratch folder under /tmp (default: a new one, removed after)")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    args = parser.parse_args(argv)
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="docketeer-shots-", dir="/tmp"))
    try:
        manifest = make_corpus(scratch / "mirror", dockets=2, comments_per_docket=12, overwrite=True)
        dockets = [d.id for d in manifest.dockets]
        with StandinServer(scratch / "mirror") as server:
            for name, extra in SHOTS:
                folder = scratch / Path(name).stem
                shutil.rmtree(folder, ignore_errors=True)
                (folder / "luigid").mkdir(parents=True)
                with luigid(folder / "luigid") as port:
                    done = run_index_all(folder / "data", server, dockets, port, *extra)
                    print(f"{name}: IndexAll {' '.join(extra) or '(no budget)'} exited {done.returncode}")
                    screenshot(args.chromium, port, args.out / name, dockets[0])
    finally:
        if args.scratch is None:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


@contextlib.contextmanager
def luigid(folder: Path):
    """luigid on a free loopback port, its state and log in ``folder``; stopped after."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "LUIGI_CONFIG_PATH": str(ROOT / "luigi.cfg")}
    daemon = subprocess.Popen([str(LUIGID), "--address", "127.0.0.1", "--port", str(port),
                               "--state-path", str(folder / "state.pickle"), "--logdir", str(folder)],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                query = urllib.parse.urlencode({"data": json.dumps({"status": "DONE"})})
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/task_list?{query}", timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline or daemon.poll() is not None:
                    raise RuntimeError("luigid did not start") from None
                time.sleep(0.2)
        yield port
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


def run_index_all(data: Path, server: StandinServer, dockets: list[str], port: int,
                  *extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
    env.update(PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"),
               DOCKETEER_DATA_DIR=str(data), DOCKETEER_API_BASE=server.api_base,
               DOCKETEER_FR_BASE=server.fr_base, REGULATIONS_GOV_API_KEY="DEMO_KEY",
               DOCKETEER_DISCOVER="list", DOCKETEER_DOCKETS=",".join(dockets),
               DOCKETEER_EMBEDDER="hashing", DOCKETEER_PACE_SECONDS="0",
               DOCKETEER_EXTRACT_WORKERS="1")
    return subprocess.run([sys.executable, "-m", "luigi", "--module", "pipeline", "IndexAll", *extra,
                           "--scheduler-host", "127.0.0.1", "--scheduler-port", str(port)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def screenshot(chromium: str, port: int, path: Path, docket: str) -> None:
    """The visualiser's task list (the status counts, and every task of one docket: after a
    budget stop, the stopped stage and the usual later tasks PENDING, the continuing ones
    DONE), once its scripts have asked luigid (virtual time)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fragment = urllib.parse.urlencode({"tab": "tasks", "search__search": docket, "length": "25",
                                       "order": "1,asc"})
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--virtual-time-budget=8000", f"--screenshot={path}", "--window-size=1400,1500",
                    f"http://127.0.0.1:{port}/static/visualiser/index.html#{fragment}"],
                   # The page shows times in the browser's zone: Washington's, as docketeer does.
                   env={**os.environ, "TZ": "America/New_York"},
                   check=True, capture_output=True, timeout=120)
    print(f"wrote {path}")

if __name__ == "__main__":
    sys.exit(main())
