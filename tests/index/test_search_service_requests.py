"""The warm search service under hostile clients: a malformed request gets an error reply (no
traceback in its log), a request past the size cap is refused, an idle client is let go and
never holds another's search, and only the user it runs as may stop it."""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest

from pipeline.index import search_service
from pipeline.index.stage import embedder_from
from tests.fixtures.pipeline_fixtures import built_store

pytestmark = pytest.mark.postgres
NOBODY = 65534


@pytest.fixture(scope="module")
def store(tmp_path_factory, pg_server):
    with built_store(tmp_path_factory.mktemp("svc-requests"), pg_server) as built:
        yield built


@pytest.fixture
def service(store, monkeypatch):
    """The service in this process, on a socket in a folder any user may reach (so that
    another user can try it); stopped after the test."""
    monkeypatch.setattr(search_service, "REQUEST_SECONDS", 1, raising=False)  # raising: main had none
    monkeypatch.setattr(search_service._Handler, "timeout", 1, raising=False)
    folder = Path(tempfile.mkdtemp(prefix="svc-", dir="/tmp"))
    folder.chmod(0o755)
    server = search_service.SearchServer(folder / "search.sock", store.runtime)
    (folder / "search.sock").chmod(0o777)
    thread = threading.Thread(target=server.serve_until_idle, kwargs={"close_runtime": False}, daemon=True)
    thread.start()
    yield server
    server.stopping = True
    thread.join(10)
    folder.rmdir()


def _request(store, **changes) -> dict:
    rt = store.runtime
    return {"query": "hospital funding", "k": 3, "embedder": embedder_from(rt.settings).id,
            "index": search_service.index_key(rt.settings, rt.data_dir), **changes}


def _raw(path: Path, payload: bytes, seconds: float = 10) -> dict | None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(seconds)
        sock.connect(str(path))
        try:
            sock.sendall(payload)
        except BrokenPipeError:  # the service stopped reading a request past its cap: its reply is read
            pass
        with sock.makefile("rb") as reply:
            line = reply.readline()
    return json.loads(line) if line else None


@pytest.mark.parametrize("payload", [
    b"[]\n", b"null\n", b"5\n", b'"text"\n', b"{not json\n", b"\xff\xfe\n", b"[" * 100_000 + b"]" * 100_000 + b"\n",
    b'{"query": 5}\n', b'{"query": "a\\u0000b"}\n', b'{"query": "x", "k": "many"}\n', b'{"query": "x", "k": 1e300}\n',
    b'{"query": "x", "items": 7}\n', b'{"query": "x", "org_items": [1, 2]}\n',
], ids=["list", "null", "number", "string", "not-json", "not-utf8", "deep", "query-number", "nul", "k-text", "k-huge",
        "items-number", "org-items-numbers"])
def test_a_malformed_request_gets_an_error_reply_and_no_traceback(store, service, payload, capfd, caplog):
    started = time.monotonic()
    answer = _raw(service.path, payload)
    assert answer is not None and "error" in answer, answer
    assert time.monotonic() - started < 5
    assert "Traceback" not in capfd.readouterr().err and "Traceback" not in caplog.text
    # The malformed fields with the right settings are refused the same way, before any search.
    if payload.startswith(b'{"query"'):
        fixed = {**_request(store), **json.loads(payload)}
        assert "error" in _raw(service.path, json.dumps(fixed).encode() + b"\n")
    assert "text" in _raw(service.path, json.dumps(_request(store)).encode() + b"\n")  # still answering


def test_a_request_past_the_size_cap_is_refused_quickly(store, service):
    started = time.monotonic()
    answer = _raw(service.path, json.dumps(_request(store, query="word " * 1_000_000)).encode() + b"\n")
    assert "error" in answer and "longer than" in answer["error"]
    assert time.monotonic() - started < 5
    # The command never sends one: it searches in-process instead.
    assert search_service._send(service.path, _request(store, query="word " * 1_000_000)) is None


def test_an_idle_client_never_blocks_another_search_and_is_let_go(store, service):
    idle = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    idle.connect(str(service.path))  # connects, sends nothing
    try:
        started = time.monotonic()
        answer = _raw(service.path, json.dumps(_request(store)).encode() + b"\n")
        assert "text" in answer and time.monotonic() - started < 2
        idle.settimeout(10)
        assert idle.recv(100) == b""  # let go after REQUEST_SECONDS, without an answer
    finally:
        idle.close()


def test_only_the_services_user_may_stop_it(store, service):
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # another local user tries
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            answer = _raw(service.path, b'{"stop": true}\n')
            os.write(writer, json.dumps(answer).encode())
        finally:
            os._exit(0)
    os.close(writer)
    os.waitpid(child, 0)
    with os.fdopen(reader, "rb") as got:
        answer = json.loads(got.read() or b"null")
    assert answer and "refused" in answer, answer
    assert not service.stopping and "text" in _raw(service.path, json.dumps(_request(store)).encode() + b"\n")
    assert _raw(service.path, b'{"stop": true}\n')["stopped"]  # its own user may
    deadline = time.monotonic() + 5
    while service.path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not service.path.exists()
