"""A warm search service: the embedding model loaded once, asked over a unix socket.

`docketeer search` with the MiniLM embedder spends nearly all its time importing
sentence-transformers and loading the model (15-30 s), not searching. The first search
starts this service in the background (``python -m pipeline.index.search_service``); it
loads the model and the index DB once, listens on ``<data_dir>/search.sock`` and answers
every later search in well under a second, until it has been idle ``IDLE_SECONDS``, is
asked to stop (``docketeer search --stop``) or gets SIGTERM, SIGINT or SIGHUP: each ends it
the same way, its socket removed and the embedded index server it started stopped.

One request per connection, one JSON line each way. The service answers only requests made
under its own settings (embedder and index): a request with others is refused, and the
command searches in-process instead. Whatever goes wrong with the service (it cannot start,
the socket path is too long, it died), the command falls back to searching in-process.
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path

from pipeline.errors import DocketeerError

SOCKET_NAME = "search.sock"
IDLE_SECONDS = 900
START_SECONDS = 180  # the model's first load on a slow disk
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux


def socket_path(data_dir: Path) -> Path | None:
    path = Path(data_dir).resolve() / SOCKET_NAME
    return path if len(str(path)) <= MAX_SOCKET_PATH else None


# --- the client ------------------------------------------------------------------------------


def ask(data_dir: Path, request: dict, *, start: bool = True) -> dict | None:
    """The service's answer, starting it when none listens; None: search in-process."""
    path = socket_path(data_dir)
    if path is None:
        return None
    answer = _send(path, request)
    if answer is None and start:
        child = _start(data_dir)
        deadline = time.monotonic() + START_SECONDS
        while answer is None and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
            answer = _send(path, request)
    if answer and "error" in answer:
        raise DocketeerError(answer["error"])
    return None if not answer or answer.get("refused") else answer


def _send(path: Path, request: dict) -> dict | None:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(60)
            sock.connect(str(path))
            sock.sendall(json.dumps(request).encode() + b"\n")
            with sock.makefile("rb") as reply:
                line = reply.readline()
    except (FileNotFoundError, ConnectionRefusedError, TimeoutError, OSError):
        return None
    return json.loads(line) if line else None


def _start(data_dir: Path) -> subprocess.Popen:
    log = open(Path(data_dir) / "search-service.log", "ab")  # noqa: SIM115 - the child keeps it
    return subprocess.Popen([sys.executable, "-m", "pipeline.index.search_service"],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            start_new_session=True)  # outlives the command that started it


def stop(data_dir: Path, seconds: float = 60) -> str:
    """Stop the warm search service of this data folder and wait until it has exited (its
    embedded index server stopped with it, unless a run still uses that server); what
    happened, as one line."""
    path = socket_path(data_dir)
    answer = _send(path, {"stop": True}) if path is not None else None
    if answer is None:
        return f"no search service is running for {Path(data_dir).resolve()}"
    if "refused" in answer:
        return f"not stopped: {answer['refused']}"
    pid, deadline = int(answer["pid"]), time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(pid):
        return f"the search service (pid {pid}) was asked to stop and is still stopping"
    return f"stopped the search service (pid {pid}) and the index server it started"


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


# --- the service -----------------------------------------------------------------------------


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        request = json.loads(self.rfile.readline() or b"{}")
        self.wfile.write(json.dumps(self.server.answer(request)).encode() + b"\n")


class SearchServer(socketserver.UnixStreamServer):
    def __init__(self, path: Path, runtime, engine=None) -> None:
        """``engine``: ``docketeer serve``'s warm search (its loaded model and lock), shared."""
        from pipeline.index.stage import embedder_from

        self.runtime = runtime
        self.engine = engine
        self.embedder = engine.embedder if engine is not None else embedder_from(runtime.settings)
        if engine is None and hasattr(self.embedder, "load"):
            self.embedder.load()
        self.index_db = runtime.index_db()
        self.stopping = False
        self.timeout = IDLE_SECONDS
        # Bound under a private name and renamed when ready: a client never meets a socket
        # whose model is still loading, and a stale socket of a dead service is replaced.
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        super().__init__(str(temporary), _Handler)
        os.replace(temporary, path)
        self.path, self.inode = path, path.stat().st_ino

    def answer(self, request: dict) -> dict:
        from pipeline.index.search import filters_of, format_hits, search
        from pipeline.index.search_results import hit_records

        if request.get("stop"):
            if self.engine is not None:  # docketeer serve's socket: the page goes on
                return {"refused": "docketeer serve answers here: stop it where it runs (Ctrl-C)"}
            self.stopping = True
            return {"stopped": True, "pid": os.getpid()}
        if request.get("embedder") != self.embedder.id or request.get("index") != index_key(self.runtime.settings, self.runtime.data_dir):
            return {"refused": "other settings"}
        try:
            with self.engine.lock if self.engine is not None else nullcontext():
                hits = search(self.index_db, self.embedder, request["query"], collection=request.get("collection"),
                              docket=request.get("docket"), k=int(request.get("k", 10)),
                              filters=filters_of(request), per_item=not request.get("passages"))
        except DocketeerError as exc:
            return {"error": str(exc)}
        # Both outputs of the command: it prints one without importing what made them.
        # "filtered": it read the date and organisation filters (an older service ignores them);
        # "folded": one result per comment unless every passage is asked; "narrowed": it read
        # the list of comments an attribute filter allows; "org_items": it read the comments
        # the organisation filter matches through their resolved organisation.
        return {"text": format_hits(hits).rstrip() if hits else "no results", "records": hit_records(hits),
                "filtered": True, "folded": True, "narrowed": True, "org_items": True}

    def handle_timeout(self) -> None:
        self.stopping = True  # idle for IDLE_SECONDS: free the memory and the index DB

    def serve_until_idle(self, close_runtime: bool = True) -> None:
        try:
            while not self.stopping:
                self.handle_request()
        finally:
            self.shutdown_socket()
            self.server_close()
            if close_runtime:
                self.runtime.close()

    def shutdown_socket(self) -> None:
        """Remove the socket file, unless a newer service has replaced it since."""
        if self.path.exists() and self.path.stat().st_ino == self.inode:
            self.path.unlink()


def index_key(settings, data_dir) -> str:
    """Which index a request means: its URL, or the data folder of the embedded one."""
    return settings.index_url or str(Path(data_dir).resolve())


def _stop_on_terminate(signum, _frame) -> None:
    # Raised inside the wait for a request: serve_until_idle's cleanup runs (the socket
    # removed, the index server stopped) instead of the process vanishing with its database.
    raise SystemExit(128 + signum)


def main() -> None:
    import signal

    from pipeline.runtime import get_runtime

    signal.signal(signal.SIGTERM, _stop_on_terminate)
    signal.signal(signal.SIGINT, _stop_on_terminate)
    signal.signal(signal.SIGHUP, _stop_on_terminate)
    runtime = get_runtime()
    try:  # a signal while the model loads stops the index server too
        path = socket_path(runtime.data_dir)
        if path is None:
            raise SystemExit(f"docketeer: data_dir too long for a unix socket: {runtime.data_dir}")
        SearchServer(path, runtime).serve_until_idle()
    finally:
        runtime.close()


if __name__ == "__main__":
    main()
