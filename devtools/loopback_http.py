"""A test server's life on loopback: an HTTP server in a daemon thread, started and stopped
(or used as a context manager), its handler reaching the server object as ``server.standin``.
The regulations.gov stand-in and the chat-completions stand-in both live this way."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackHttpServer:
    """Base of a stand-in: ``HANDLER`` serves, ``THREAD_NAME`` names its thread; a subclass
    sets ``host`` and ``port`` (0: any free one, read back once bound)."""

    HANDLER: type[BaseHTTPRequestHandler]
    THREAD_NAME = "standin"
    host: str
    port: int
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    def start(self):
        httpd = ThreadingHTTPServer((self.host, self.port), self.HANDLER)
        httpd.daemon_threads = True
        httpd.standin = self
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=self.THREAD_NAME, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"
