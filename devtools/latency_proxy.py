"""A loopback reverse proxy in front of an S3 endpoint (a moto server) that makes every
request cost what a real one does: a fixed delay, as S3 answers in tens of milliseconds.

It counts what passed through (requests, and the most ever in flight at once: the proof
that readers overlap; ``GET /__traffic__`` answers them as JSON) and can refuse unsigned requests
(or any whose path holds a given text, e.g. a listing's later pages) with S3's own 403 AccessDenied, as
a private bucket does (moto does not refuse an unsigned listing). Requests and answers
are forwarded as they are, Host header included, so signatures stay whatever they were.

    python -m devtools.latency_proxy --upstream http://127.0.0.1:5000 --port 5001 --delay-ms 20

Written on the standard library's ``http.server``: a thread per client connection (boto3
keeps its connections open), each with its own kept-open connection to the upstream.
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
              "trailers", "transfer-encoding", "upgrade"}
TRAFFIC_PATH = "/__traffic__"  # GET: the counts so far as JSON (``?reset``: then from 0); not forwarded
ACCESS_DENIED = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
                 b"<Message>Access Denied</Message></Error>")


class Traffic:
    """What went through the proxy; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests = self.in_flight = self.max_in_flight = self.refused = 0

    def started(self) -> None:
        with self._lock:
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def finished(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def as_json(self) -> bytes:
        with self._lock:
            return json.dumps({"requests": self.requests, "max_in_flight": self.max_in_flight,
                               "refused": self.refused}).encode()

    def reset(self) -> None:
        with self._lock:
            self.requests = self.max_in_flight = self.refused = 0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as S3 does
    disable_nagle_algorithm = True  # headers and body go out as they are written
    server: LatencyProxyServer

    def log_message(self, format, *args) -> None:  # noqa: A002 - the stdlib's name
        pass

    def _forward(self) -> None:
        if self.path.startswith(TRAFFIC_PATH):
            answer = self.server.traffic.as_json()
            if self.path.endswith("?reset"):
                self.server.traffic.reset()
            self._answer(200, [("Content-Type", "application/json")], answer)
            return
        traffic = self.server.traffic
        traffic.started()
        try:
            time.sleep(self.server.delay_seconds)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if (self.server.refuse_unsigned and not _signed(self)) or self.server.refuses(self.path):
                with traffic._lock:
                    traffic.refused += 1
                self._answer(403, [("Content-Type", "application/xml")], ACCESS_DENIED)
                return
            status, headers, answer = self.server.upstream(self.command, self.path, body, self.headers)
            self._answer(status, headers, answer)
        finally:
            traffic.finished()

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward  # noqa: N815 - http.server's names

    def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.send_response_only(status)
        for name, value in headers:
            if name.lower() not in HOP_BY_HOP and (self.command == "HEAD" or name.lower() != "content-length"):
                self.send_header(name, value)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def _signed(handler: BaseHTTPRequestHandler) -> bool:
    return "Authorization" in handler.headers or "X-Amz-Signature=" in handler.path


class LatencyProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address, upstream_url: str, delay_seconds: float, refuse_unsigned: bool,
                 refuse_containing: str | None = None) -> None:
        super().__init__(address, _Handler)
        # Requests whose path holds this text are refused too, signed or not: e.g.
        # "continuation-token" refuses a listing's later pages and only those.
        self.refuse_containing = refuse_containing
        parsed = urlparse(upstream_url)
        self.upstream_host, self.upstream_port = parsed.hostname, parsed.port or 80
        self.delay_seconds, self.refuse_unsigned = delay_seconds, refuse_unsigned
        self.traffic = Traffic()
        self._connections = threading.local()

    def refuses(self, path: str) -> bool:
        return bool(self.refuse_containing) and self.refuse_containing in path

    def upstream(self, method: str, path: str, body: bytes, headers) -> tuple[int, list, bytes]:
        """The upstream's answer; a kept-open connection the upstream closed is reopened once."""
        forwarded = {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP}
        for attempt in (1, 2):
            connection = self._connection(fresh=attempt == 2)
            try:
                connection.request(method, path, body=body or None, headers=forwarded)
                response = connection.getresponse()
                return response.status, response.getheaders(), response.read()
            except (http.client.HTTPException, OSError):
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _connection(self, fresh: bool) -> http.client.HTTPConnection:
        connection = getattr(self._connections, "connection", None)
        if connection is None or fresh:
            if connection is not None:
                connection.close()
            connection = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=60)
            connection.connect()
            connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._connections.connection = connection
        return connection


class LatencyProxy:
    """The proxy on 127.0.0.1 and a free port, served from a thread: ``with LatencyProxy(...)``."""

    def __init__(self, upstream_url: str, *, delay_seconds: float = 0.02, refuse_unsigned: bool = False,
                 port: int = 0, refuse_containing: str | None = None) -> None:
        self.server = LatencyProxyServer(("127.0.0.1", port), upstream_url, delay_seconds, refuse_unsigned,
                                         refuse_containing)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.traffic = self.server.traffic
        self._thread = threading.Thread(target=self.server.serve_forever, name="latency-proxy", daemon=True)

    def __enter__(self) -> LatencyProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.latency_proxy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", required=True, help="the S3 endpoint to forward to, e.g. http://127.0.0.1:5000")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: a free one, printed)")
    parser.add_argument("--delay-ms", type=float, default=20.0, help="added to every request")
    parser.add_argument("--refuse-unsigned", action="store_true", help="answer 403 to unsigned requests")
    parser.add_argument("--refuse-containing", metavar="TEXT",
                        help="answer 403 to requests whose path holds TEXT (e.g. continuation-token)")
    args = parser.parse_args(argv)
    proxy = LatencyProxy(args.upstream, delay_seconds=args.delay_ms / 1000, refuse_unsigned=args.refuse_unsigned,
                         port=args.port, refuse_containing=args.refuse_containing)
    print(proxy.url, flush=True)
    try:
        proxy.server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
