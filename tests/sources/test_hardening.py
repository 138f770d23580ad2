"""Hostile sources: the key goes to the API host only, files come from allowed hosts only,
and a mirror folder is read as data (regular files inside its root), never walked out of."""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pipeline.config import load_settings
from pipeline.errors import ConfigError, InputTooLarge, InvalidIdentifier, TransientHTTPError
from pipeline.sources.mirror import LocalMirror
from pipeline.sources.regulations_gov import RegulationsGovClient, allowed_origins, origin_of
from tests.fixtures.chain_runs import assert_all_indexed, chain, run_at, states
from tests.fixtures.loopback_recorder import Recorder

KEY = "sEcReT-kEy-42"


def _json(body: dict):
    return 200, {"Content-Type": "application/vnd.api+json"}, json.dumps(body).encode()


@pytest.fixture
def elsewhere():
    """Another host on loopback (127.0.0.2) that must never see the key or be fetched from."""
    server = Recorder("127.0.0.2", lambda path: _json({"data": {"id": "X-1", "attributes": {}}}))
    yield server
    server.shutdown()


@pytest.mark.parametrize("target_host", ["127.0.0.2", "127.0.0.1"])
def test_the_key_is_not_sent_on_a_redirect_to_another_host_or_port(elsewhere, target_host):
    other = elsewhere if target_host == "127.0.0.2" else Recorder("127.0.0.1", elsewhere.answer)
    api = Recorder("127.0.0.1", lambda path: (302, {"Location": other.base + path}, b""))
    try:
        client = RegulationsGovClient(api.base + "/v4", KEY, sleep=lambda _s: None)
        client.get_docket("X-1")
        assert api.seen[0][1].get("X-Api-Key") == KEY  # the API host gets it
        assert other.seen and all("X-Api-Key" not in headers for _, headers in other.seen)
        assert all(KEY not in path for path, _ in other.seen)
    finally:
        api.shutdown()
        if other is not elsewhere:
            other.shutdown()


@pytest.mark.parametrize("bad", ["KEY\n9999", "K EY", "KEY\t9", "K\x00EY", "KEY\x7f"])
def test_a_key_with_whitespace_or_control_characters_is_refused_without_showing_it(bad):
    with pytest.raises(ConfigError) as err:
        load_settings({"REGULATIONS_GOV_API_KEY": bad})
    assert "REGULATIONS_GOV_API_KEY" in str(err.value)
    assert "KEY" not in str(err.value).replace("REGULATIONS_GOV_API_KEY", "")
    with pytest.raises(ConfigError):
        RegulationsGovClient("https://api.regulations.gov/v4", bad)


def test_a_key_read_with_its_trailing_newline_is_used_without_it():
    assert load_settings({"REGULATIONS_GOV_API_KEY": "KEY9999\n"}).api_key == "KEY9999"


def test_allowed_download_origins():
    allowed = allowed_origins("http://127.0.0.1:8080/v4", ("downloads.regulations.gov", "http://mirror.local:81"))
    assert origin_of("https://downloads.regulations.gov/X-1/attachment_1.pdf") in allowed
    assert origin_of("http://downloads.regulations.gov/X-1/attachment_1.pdf") not in allowed  # https only
    assert origin_of("http://127.0.0.1:8080/downloads/X-1/attachment_1.pdf") in allowed  # the API's own
    assert origin_of("http://127.0.0.1:8081/x.pdf") not in allowed  # another port
    assert origin_of("http://mirror.local:81/x.pdf") in allowed
    assert origin_of("file:///etc/passwd") not in allowed


def test_a_download_redirected_to_another_host_is_refused_and_never_fetched(elsewhere, tmp_path):
    api = Recorder("127.0.0.1", lambda path: (302, {"Location": elsewhere.base + "/x.pdf"}, b""))
    try:
        client = RegulationsGovClient(api.base + "/v4", KEY, sleep=lambda _s: None)
        with open(tmp_path / "spool", "w+b") as spool, \
                pytest.raises(InvalidIdentifier, match="allowed download host"):
            client.download(api.base + "/downloads/X-1/attachment_1.pdf", spool, max_bytes=10_000)
        assert elsewhere.seen == []
    finally:
        api.shutdown()


def test_a_file_url_on_another_host_fails_its_item_for_good_and_is_never_fetched(tmp_path, pg_server, elsewhere):
    with chain(tmp_path, pg_server) as (runtime, server, docket, root):
        key = sorted(p.stem for p in root.glob(f"raw-data/*/{docket}/text-{docket}/comments/*.json"))[0]
        record = json.loads(next(root.glob(f"raw-data/*/{docket}/text-{docket}/comments/{key}.json")).read_text())
        record["included"] = [{"id": "a1", "type": "attachments", "attributes": {"docOrder": 1, "fileFormats": [
            {"fileUrl": f"{elsewhere.base}/{key}/attachment_1.pdf", "format": "pdf", "size": 100}]}}]
        server.path_bodies[f"/v4/comments/{key}"] = json.dumps(record).encode()
        assert run_at(1)
        row = states("backfill.file", docket)[f"{key}/attachment_1.pdf"]
        assert (row.state, row.detail) == ("failed", "permanent") and "allowed download host" in row.reason
        assert elsewhere.seen == []
        assert_all_indexed(runtime, docket, but={key})


# --------------------------------------------------------------------------- the mirror as data


@pytest.fixture
def mirror_with_traps(tmp_path):
    root = tmp_path / "mirror"
    folder = root / "raw-data/AB/AB-2026-0001/binary-AB-2026-0001/comments_attachments"
    folder.mkdir(parents=True)
    (folder / "AB-2026-0001-0001_attachment_1.pdf").write_bytes(b"%PDF-1.4 real")
    secret = tmp_path / "outside.txt"
    secret.write_text("outside the mirror")
    (folder / "AB-2026-0001-0002_attachment_1.pdf").symlink_to(secret)
    os.mkfifo(folder / "AB-2026-0001-0003_attachment_1.pdf")
    outside_dir = tmp_path / "elsewhere"
    outside_dir.mkdir()
    (outside_dir / "AB-2026-0001-0004_attachment_1.pdf").write_text("outside too")
    (root / "raw-data/AB/AB-2026-0001/binary-AB-2026-0001/documents_attachments").symlink_to(outside_dir)
    return LocalMirror(root), folder


@pytest.mark.timeout(30)  # a FIFO opened for reading without O_NONBLOCK would wait for ever
def test_only_regular_files_inside_the_mirror_are_read(mirror_with_traps):
    mirror, _folder = mirror_with_traps
    base = "raw-data/AB/AB-2026-0001/binary-AB-2026-0001/"
    with mirror.open_binary(base + "comments_attachments/AB-2026-0001-0001_attachment_1.pdf") as f:
        assert f.read() == b"%PDF-1.4 real"
    with pytest.raises(InvalidIdentifier, match="symlink"):
        mirror.open_binary(base + "comments_attachments/AB-2026-0001-0002_attachment_1.pdf")
    with pytest.raises(InvalidIdentifier, match="not a regular file"):
        mirror.open_binary(base + "comments_attachments/AB-2026-0001-0003_attachment_1.pdf")
    with pytest.raises(InvalidIdentifier, match="symlinked folder"):
        mirror.open_binary(base + "documents_attachments/AB-2026-0001-0004_attachment_1.pdf")
    with pytest.raises(InvalidIdentifier):
        mirror.read_json(base + "comments_attachments/AB-2026-0001-0002_attachment_1.pdf")
    listed = {key for key, _size in mirror._list_objects("raw-data/AB/")}
    assert not any("documents_attachments" in key for key in listed)  # a symlinked folder is not walked
    # The walk backfill records as it goes (no key order, no directory held) finds the same.
    streamed = list(mirror.docket_entries("AB-2026-0001", "AB"))
    assert sorted(streamed, key=lambda e: e.key) == list(mirror._list_entries("raw-data/AB/AB-2026-0001/"))
    assert {e.key for e in streamed} == listed


def test_a_symlinked_attachment_in_the_mirror_fails_its_item_and_is_never_indexed(tmp_path, pg_server):
    lagging = tmp_path / "copy"
    with chain(tmp_path, pg_server, mirror=lagging) as (runtime, _server, docket, root):
        binaries = sorted(lagging.glob(f"raw-data/*/{docket}/binary-{docket}/comments_attachments/*_attachment_1.pdf"))
        trap = binaries[0]
        victim = trap.name.split("_attachment_")[0]
        outside = tmp_path / "outside.pdf"
        outside.write_bytes(trap.read_bytes())
        trap.unlink()
        trap.symlink_to(outside)
        assert run_at(1)
        row = states("backfill.file", docket)[f"{victim}/attachment_1.pdf"]
        assert (row.state, row.detail) == ("failed", "permanent") and "symlink" in row.reason
        assert states("backfill", docket)[victim].state == "failed"
        assert_all_indexed(runtime, docket, but={victim})


# --------------------------------------------------------------------------- bounded reads


class _DripHandler(BaseHTTPRequestHandler):
    """Headers at once, then one byte of the promised body every 0.2 s (for 40 s)."""

    def do_GET(self) -> None:  # noqa: N802
        body = b'{"data": {"id": "X-1", "attributes": {}}}' + b" " * 160
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.api+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            for byte in body:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                threading.Event().wait(0.2)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up at its deadline, as it should

    def log_message(self, *args) -> None:
        pass


@pytest.mark.timeout(60)
def test_a_slow_drip_cannot_hold_a_request_past_its_deadline(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DripHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        client = RegulationsGovClient(base + "/v4", KEY, sleep=lambda _s: None, max_attempts=1,
                                      request_seconds=1.0)
        started = time.monotonic()
        with pytest.raises(TransientHTTPError, match="no whole answer within 1s"):
            client.get_docket("X-1")
        with open(tmp_path / "spool", "w+b") as spool, pytest.raises(TransientHTTPError, match="within 1s"):
            client.download(base + "/downloads/X-1/attachment_1.pdf", spool, max_bytes=10_000)
        assert time.monotonic() - started < 20  # the drip alone would take 40 s per request
    finally:
        server.shutdown()


def test_an_oversized_json_answer_is_refused_as_too_large(elsewhere):
    big = Recorder("127.0.0.1", lambda path: _json({"data": {"id": "X-1", "attributes": {"comment": "x" * 5000}}}))
    try:
        client = RegulationsGovClient(big.base + "/v4", KEY, sleep=lambda _s: None, max_json_bytes=2000)
        with pytest.raises(InputTooLarge, match="over the limit of 2000"):
            client.get_docket("X-1")
    finally:
        big.shutdown()


# --------------------------------------------------------------------------- leftovers


@pytest.mark.timeout(180)
def test_the_embedded_index_server_stops_when_its_last_live_holder_exits_even_after_a_kill(tmp_path):
    import signal
    import subprocess
    import sys

    from pipeline.index.database import IndexDB

    data = tmp_path / "data"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pipeline.index.database import IndexDB; "
         f"IndexDB.open(None, __import__('pathlib').Path({str(data)!r})); print('up', flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "up"
    holder.send_signal(signal.SIGKILL)  # dies holding the server: its pid stays in the handle file
    holder.wait()
    pgdata = data / "index-pg"
    assert holder.pid in json.loads((pgdata / ".handle_pids.json").read_text())
    db = IndexDB.open(None, data)  # a later run joins the still-running server
    pid = int((pgdata / "postmaster.pid").read_text().split()[0])
    db.close()  # ... and, its last live holder, stops it
    assert not (pgdata / "postmaster.pid").exists()
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    import psutil

    return psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE


@pytest.mark.timeout(180)
def test_a_process_whose_embedded_index_server_was_killed_exits_without_a_traceback(tmp_path):
    import subprocess
    import sys

    script = ("import os, signal, time; from pathlib import Path; from pipeline.index.database import IndexDB; "
              f"IndexDB.open(None, Path({str(tmp_path / 'data')!r})); "
              f"pid = int(Path({str(tmp_path / 'data' / 'index-pg' / 'postmaster.pid')!r}).read_text().split()[0]); "
              "os.kill(pid, signal.SIGKILL); time.sleep(1)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=170)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
