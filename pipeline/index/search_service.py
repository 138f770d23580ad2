"""A warm search service: the embedding model loaded once, asked over a unix socket.

`docketeer search` with the MiniLM embedder spends nearly all its time importing
sentence-transformers and loading the model (15-30 s), not searching. The first search
starts this service in the background (``python -m pipeline.index.search_service``); it
loads the model and the index DB once, listens on ``<data_dir>/search.sock`` and answers
every later search in well under a second, until it has been idle ``IDLE_SECONDS``, is
asked to stop (``docketeer stop`` or ``search --stop``) or gets SIGTERM, SIGINT or SIGHUP: each ends it
the same way, its socket removed and the embedded index server it started stopped.

One request per connection, one JSON line each way. The service answers only requests made
under its own settings (embedder and index): a request with others is refused, and the
command searches in-process instead. Each connection is served on a thread of its own and
given ``REQUEST_SECONDS`` to send its request of at most ``MAX_REQUEST_BYTES`` (the searches
themselves take turns on the one index DB connection), so an idle or slow client never holds
the others; a request that is not one (not JSON, not an object, a query that is not text, a
NUL) gets an error reply, never a traceback; and only the user the service runs as (or
root) may stop it, as the socket's peer credentials say. Whatever goes wrong with the service (it cannot start,
the socket path is too long, it died), the command falls back to searching in-process.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import DocketeerError

SOCKET_NAME = "search.sock"
IDLE_SECONDS = 900
STOP_LOOK_SECONDS = 0.5  # a stop asked on a handler's thread is seen within this
START_SECONDS = 180  # the model's first load on a slow disk
MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux
REQUEST_SECONDS = 10  # for a client to send its request (the command sends it at once)
# A request's line: a query (500 characters), filters and the lists of comment keys an
# attribute or organisation filter narrows to. A longer one is searched in-process.
MAX_REQUEST_BYTES = 4 * 1024 * 1024
log = logging.getLogger("docketeer")


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
    line = json.dumps(request).encode() + b"\n"
    if len(line) > MAX_REQUEST_BYTES:  # the service would refuse it: search in-process
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(60)
            sock.connect(str(path))
            sock.sendall(line)
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


@dataclass(frozen=True)
class ServiceStop:
    """What ``stop`` found and did."""
    pid: int | None  # the process answering on the socket (None: nothing answers there)
    stopped: bool  # it has exited
    refused: str = ""  # why it would not stop (docketeer serve's socket, another user)


def stop(data_dir: Path, seconds: float = 60) -> ServiceStop:
    """Ask the warm search service of this data folder to stop and wait until it has exited
    (the embedded index server stopped with it, unless another process still uses that
    server)."""
    path = socket_path(data_dir)
    answer = _send(path, {"stop": True}) if path is not None else None
    if answer is None:
        return ServiceStop(None, False)
    pid = int(answer["pid"]) if isinstance(answer.get("pid"), int) else None
    if "refused" in answer:
        return ServiceStop(pid, False, str(answer["refused"]))
    deadline = time.monotonic() + seconds
    while pid is not None and _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return ServiceStop(pid, pid is not None and not _alive(pid))


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


# --- the service -----------------------------------------------------------------------------


class BadRequest(ValueError):
    """A request the service cannot read: answered with its reason, never a traceback."""


class _Handler(socketserver.StreamRequestHandler):
    timeout = REQUEST_SECONDS  # a client that connects and sends nothing is let go

    def handle(self) -> None:
        try:
            line = self.rfile.readline(MAX_REQUEST_BYTES + 1)
        except OSError:  # timed out or gone: nobody to answer
            return
        try:
            answer = self.server.answer(_parsed(line), _peer_uid(self.connection))
        except BadRequest as exc:
            answer = {"error": f"search service: {exc}"}
        except Exception as exc:  # noqa: BLE001 - one line in the log, an answer to the client
            log.warning("search service: a request failed: %s: %s", type(exc).__name__, str(exc)[:200])
            answer = {"error": f"search service: the search failed ({type(exc).__name__})"}
        try:
            self.wfile.write(json.dumps(answer).encode() + b"\n")
            self.wfile.flush()
        except OSError:
            pass
        if answer.get("stopped"):  # after the answer: the process may end as soon as this is set
            self.server.stopping = True

    def finish(self) -> None:
        super().finish()
        _close_thread_connection()


def _close_thread_connection() -> None:
    """The state DB connection this connection's thread opened (peewee's are per thread),
    closed with the thread rather than left to the garbage collector."""
    from pipeline.store.models import database

    try:
        if database.obj is not None and not database.is_closed():
            database.close()
    except Exception as exc:  # noqa: BLE001 - a connection that cannot close is one line, not a traceback
        log.warning("search service: closing a state DB connection: %s", exc)


def _parsed(line: bytes) -> dict:
    """The request of one line: a JSON object of at most MAX_REQUEST_BYTES whose values are
    of the types a search takes, with no control character in its text."""
    from pipeline.text_validity import SEARCH_CONTROL as CONTROL

    if len(line) > MAX_REQUEST_BYTES:
        raise BadRequest(f"request longer than {MAX_REQUEST_BYTES:,} bytes")
    try:
        request = json.loads(line or b"{}")
    except (ValueError, RecursionError) as exc:  # RecursionError: JSON nested thousands deep
        raise BadRequest(f"not a JSON request: {str(exc)[:80]}") from None
    if not isinstance(request, dict):
        raise BadRequest(f"a request is a JSON object, not {type(request).__name__}")
    for name in ("query", "collection", "docket", "from", "to", "org", "embedder", "index"):
        value = request.get(name)
        if value is not None and not isinstance(value, str):
            raise BadRequest(f"{name} is {type(value).__name__}, not text")
        if value and CONTROL.search(value):
            raise BadRequest(f"{name} holds a control character (such as NUL)")
    for name in ("items", "excluded", "org_items"):
        value = request.get(name)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise BadRequest(f"{name} is not a list of comment keys")
    k = request.get("k", 10)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 10_000:
        raise BadRequest(f"k is not a number of results from 1 to 10,000: {str(k)[:20]}")
    return request


def _peer_uid(connection) -> int | None:
    """The user id of the process at the other end of a unix socket (Linux's SO_PEERCRED)."""
    try:
        _, uid, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                               struct.calcsize("3i")))
    except (AttributeError, OSError):  # not Linux: nobody is taken for the owner
        return None
    return uid


class SearchServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True  # a client still sending never keeps the service from exiting
    block_on_close = False

    def __init__(self, path: Path, runtime, engine=None) -> None:
        """``engine``: ``docketeer serve``'s warm search (its loaded model and lock), shared."""
        from pipeline.index.stage import embedder_from

        self.runtime = runtime
        self.engine = engine
        self.lock = engine.lock if engine is not None else threading.Lock()  # one index DB connection
        self.embedder = engine.embedder if engine is not None else embedder_from(runtime.settings)
        if engine is None and hasattr(self.embedder, "load"):
            self.embedder.load()
        self.index_db = runtime.index_db()
        self.stopping = False
        self.timeout = STOP_LOOK_SECONDS  # how long a wait for a connection lasts
        self.idle_seconds: float | None = IDLE_SECONDS
        self.last_request = time.monotonic()
        # Bound under a private name and renamed when ready: a client never meets a socket
        # whose model is still loading, and a stale socket of a dead service is replaced.
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        super().__init__(str(temporary), _Handler)
        os.replace(temporary, path)
        self.path, self.inode = path, path.stat().st_ino

    def handle_error(self, request, client_address) -> None:
        # The handler answers every request it can read; what is left (a client gone) is one line.
        log.warning("search service: a connection failed: %s", sys.exc_info()[1])

    def answer(self, request: dict, peer_uid: int | None = None) -> dict:
        from pipeline.index.search import answer_fields, answer_text, filters_of, search_answer
        from pipeline.index.search_results import hit_records

        if request.get("stop"):
            if peer_uid not in (os.geteuid(), 0):  # only the store's owner ends its service
                return {"refused": "only the user the search service runs as may stop it", "pid": os.getpid()}
            if self.engine is not None:  # docketeer serve's socket: the page goes on
                return {"refused": "docketeer serve answers here: stop it where it runs (Ctrl-C)",
                        "pid": os.getpid()}
            return {"stopped": True, "pid": os.getpid()}  # the handler stops it once answered
        if request.get("embedder") != self.embedder.id or request.get("index") != index_key(self.runtime.settings, self.runtime.data_dir):
            return {"refused": "other settings"}
        try:
            with self.lock:
                answer = search_answer(self.index_db, self.embedder, request["query"],
                                       collection=request.get("collection"), docket=request.get("docket"),
                                       k=request.get("k", 10), filters=filters_of(request),
                                       per_item=not request.get("passages"))
        except DocketeerError as exc:
            return {"error": str(exc)}
        # Both outputs of the command: it prints one without importing what made them.
        # "filtered": it read the date and organisation filters (an older service ignores them);
        # "folded": one result per comment unless every passage is asked; "narrowed": it read
        # the list of comments an attribute filter allows; "org_items": it read the comments
        # the organisation filter matches through their resolved organisation; "floor": only
        # results that match (search.relevant), with the best similarity seen.
        return {"text": answer_text(answer), "records": hit_records(answer.hits), **answer_fields(answer),
                "filtered": True, "folded": True, "narrowed": True, "org_items": True}

    def process_request(self, request, client_address) -> None:
        self.last_request = time.monotonic()
        super().process_request(request, client_address)

    def serve_until_idle(self, close_runtime: bool = True) -> None:
        """Answer until asked to stop (a handler's thread sets ``stopping``) or idle for
        ``idle_seconds`` (None: never idle out), looking at both every ``timeout``."""
        from pipeline.stop_signals import uninterrupted

        try:
            while not self.stopping:
                self.handle_request()  # each connection on a thread of its own
                if self.idle_seconds is not None and time.monotonic() - self.last_request > self.idle_seconds:
                    self.stopping = True  # free the memory and the index DB
        finally:
            with uninterrupted():  # a second signal must not cut the index server's stop short
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


def main() -> None:
    from pipeline.runtime import get_runtime
    from pipeline.stop_signals import exiting_on, uninterrupted

    # A signal raises inside the wait for a request: serve_until_idle's cleanup runs (the
    # socket removed, the index server stopped) instead of the process vanishing with it.
    with exiting_on():
        runtime = get_runtime()
        try:  # a signal while the model loads stops the index server too
            path = socket_path(runtime.data_dir)
            if path is None:
                raise SystemExit(f"docketeer: data_dir too long for a unix socket: {runtime.data_dir}")
            SearchServer(path, runtime).serve_until_idle()
        finally:
            with uninterrupted():
                runtime.close()


if __name__ == "__main__":
    main()
