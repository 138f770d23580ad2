"""``docketeer serve``: the web page with the embedding model loaded once and kept warm.

While it runs it also answers ``docketeer search`` on ``<data_dir>/search.sock`` (the warm
search service's socket and protocol, ``pipeline/index/search_service.py``), with the same
loaded model: one model in memory, not two.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import signal
import threading

log = logging.getLogger("docketeer")

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 8080


def serve(runtime, host: str = LOOPBACK, port: int = DEFAULT_PORT) -> None:
    import uvicorn

    from pipeline.web.app import make_app
    from pipeline.web.hosts import allowed_hosts
    from pipeline.web.pages import WarmSearch

    check_port(host, port)  # before the model loads and a URL is printed
    from pipeline.errors import DocketeerError
    from pipeline.runtime import index_exists

    if not index_exists(runtime.settings):  # the page never makes an index server to show nothing
        raise DocketeerError(f"serve: nothing is indexed yet in {runtime.settings.data_path}: run "
                             "`luigi --module pipeline IndexAll` first")
    print(f"docketeer serve: loading the {runtime.settings.embedder} embedder …", flush=True)
    engine = WarmSearch(runtime)
    runtime.index_db()  # start (or join) the index DB now, not on the first search
    read_only(runtime)
    socket_server = _answer_cli_searches(runtime, engine)
    if not _is_loopback(host):
        print(f"docketeer serve: listening on {host}: anyone who can reach it can read the comments",
              flush=True)
    print(f"docketeer serve: http://{host}:{port}/ (Ctrl-C stops)", flush=True)
    server = uvicorn.Server(uvicorn.Config(make_app(runtime, engine, allowed_hosts(host)), host=host, port=port,
                                          log_level="warning", server_header=False))
    try:
        with _hang_up_stops(server):
            server.run()  # SIGTERM and Ctrl-C: uvicorn's graceful stop, then the signal raised again
    finally:
        if socket_server is not None:
            socket_server.stopping = True
            socket_server.shutdown_socket()


@contextlib.contextmanager
def _hang_up_stops(server):
    """SIGHUP (its terminal closed) stops the page as SIGTERM and Ctrl-C do: uvicorn stops
    gracefully, then the process leaves through ``SystemExit`` (so the index server it started
    stops with it). uvicorn listens to those two only, and an exit raised inside its event loop
    would end it with a traceback."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    hung_up = []

    def hang_up(signum, _frame) -> None:
        hung_up.append(signum)
        server.should_exit = True

    previous = signal.signal(signal.SIGHUP, hang_up)
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, previous)
    if hung_up:
        raise SystemExit(128 + signal.SIGHUP)


def check_port(host: str, port: int) -> None:
    """The address is free to listen on, or one line saying why not (in use, not this
    machine's): said before anything loads, not as uvicorn's [Errno 98] after the URL."""
    import errno
    import socket

    from pipeline.errors import DocketeerError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise DocketeerError(f"serve: cannot listen on {host}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise DocketeerError(f"serve: port {port} on {host} is in use: stop what listens "
                                     "there, or pass --port with another") from None
            raise DocketeerError(f"serve: cannot listen on {host}:{port}: {exc.strerror}") from None


def read_only(runtime) -> None:
    """Make this process's connections refuse writes: the page only reads, and a mistake in
    it must not be able to change a store a cron run is writing.

    Done after the stores are opened (opening may upgrade a schema). The pages run on the
    thread that calls this (uvicorn's event loop is the main thread), whose connections these are.
    """
    import peewee

    state = runtime.state
    if isinstance(state, peewee.SqliteDatabase):
        state.execute_sql("PRAGMA query_only = ON")
    else:
        state.execute_sql("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    from pipeline.web.request_limits import STATEMENT_SECONDS

    runtime.index_db().read_only(STATEMENT_SECONDS)  # a search is bounded as the pages' statements are


def _answer_cli_searches(runtime, engine):
    """The search service's socket served from a thread with this process's model, or None."""
    from pipeline.index import search_service

    path = search_service.socket_path(runtime.data_dir)
    if path is None:
        return None
    try:
        server = search_service.SearchServer(path, runtime, engine=engine)
    except OSError as exc:
        log.warning("docketeer serve: not answering `docketeer search` on %s: %s", path, exc)
        return None
    server.idle_seconds = None  # no idle exit: it lives as long as the page does
    threading.Thread(target=server.serve_until_idle, kwargs={"close_runtime": False},
                     name="search-socket", daemon=True).start()
    return server


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
