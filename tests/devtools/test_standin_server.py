"""The stand-in server: faithful to the recorded real responses, and its fault switches work."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import yaml

from devtools.corpus_changes import add_comments, modify_comments, withdraw_comments
from devtools.mirror_builder import MirrorBuilder
from devtools.standin_server import StandinServer
from tests.fixtures.paths import ROOT

KEY = {"X-Api-Key": "test-key"}
REAL_DOCKET = "ACF-2025-0038"
REAL_DOCUMENT_OBJECT_ID = "09000064b8e95446"


def _recordings(realdata: Path, name: str) -> list[dict]:
    text = (realdata / "api-recordings" / name).read_text(encoding="utf-8")
    return yaml.safe_load(text)["http_interactions"]


def _recorded(realdata: Path, name: str, uri_part: str, status: int = 200) -> tuple[dict, dict]:
    """(headers, parsed body) of the first recorded exchange whose URI contains ``uri_part``."""
    for exchange in _recordings(realdata, name):
        response = exchange["response"]
        if uri_part in exchange["request"]["uri"] and response["status"]["code"] == status:
            headers = {k.lower(): v[0] for k, v in response["headers"].items()}
            return headers, json.loads(response["body"]["string"])
    raise LookupError(uri_part)


@pytest.fixture
def real_server(realdata):
    with StandinServer(realdata / "mirror") as server:
        yield server


@pytest.fixture
def small(tmp_path):
    builder = MirrorBuilder(tmp_path, "EPA-2026-0001")
    builder.docket()
    object_id = builder.document(1)
    builder.comments(object_id, [f"2026-01-0{d}T12:00:00Z" for d in range(1, 8)])
    builder.comment(
        "EPA-2026-0001-0050", object_id, "2026-01-09T12:00:00Z", attachments=[b"%PDF-1.4 tiny"]
    )
    builder.mark_unavailable("EPA-2026-0001-0051")
    with StandinServer(tmp_path, hourly_limit=1000) as server:
        server.object_id = object_id
        yield server


def _get(server: StandinServer, path: str, params=None, headers=KEY, **kwargs) -> requests.Response:
    return requests.get(server.url + path, params=params, headers=headers, timeout=10, **kwargs)


# --------------------------------------------------------------------------- against the recordings


def _assert_same_api_headers(recorded: dict, resp: requests.Response) -> None:
    assert (
        resp.headers["Content-Type"]
        == recorded["content-type"]
        == "application/vnd.api+json;charset=utf-8"
    )
    for name in ("x-ratelimit-limit", "x-ratelimit-remaining"):
        assert name in recorded and resp.headers[name].isdigit()


def test_comment_list_matches_the_recording(real_server, realdata):
    headers, body = _recorded(realdata, "v4_comments_list.yml", "filter%5BcommentOnId%5D")
    # The staging recording is the newest: its items carry lastModifiedDate and objectId.
    _, newest = _recorded(
        realdata, "v4_comments_list.yml", "api-staging.regulations.gov/v4/comments"
    )
    resp = _get(real_server, "/v4/comments", {"filter[commentOnId]": REAL_DOCUMENT_OBJECT_ID})
    ours = resp.json()
    assert resp.status_code == 200
    _assert_same_api_headers(headers, resp)
    assert ours.keys() == body.keys()
    assert ours["meta"].keys() == body["meta"].keys()
    assert ours["data"][0].keys() == body["data"][0].keys()
    assert list(ours["data"][0]["attributes"]) == list(newest["data"][0]["attributes"])
    assert ours["meta"]["pageSize"] == body["meta"]["pageSize"] == 25  # same default page size


def test_docket_and_document_list_match_the_recording(real_server, realdata):
    headers, docket = _recorded(realdata, "v4_docket_and_documents.yml", "/v4/dockets/")
    resp = _get(real_server, f"/v4/dockets/{REAL_DOCKET}")
    _assert_same_api_headers(headers, resp)
    assert resp.json().keys() == docket.keys()
    assert resp.json()["data"].keys() == docket["data"].keys()

    headers, documents = _recorded(realdata, "v4_docket_and_documents.yml", "/v4/documents?")
    resp = _get(real_server, "/v4/documents", {"filter[docketId]": REAL_DOCKET})
    _assert_same_api_headers(headers, resp)
    ours = resp.json()
    assert ours["meta"].keys() == documents["meta"].keys()
    assert ours["data"][0].keys() == documents["data"][0].keys()
    # Ours also carries objectId (needed for commentOnId) and lastModifiedDate, as today's API does.
    assert set(documents["data"][0]["attributes"]) <= set(ours["data"][0]["attributes"])


def test_wrong_filter_name_gives_the_recorded_400(real_server, realdata):
    headers, body = _recorded(
        realdata, "v4_comments_list.yml", "filter%5BSearchTerm%5D", status=400
    )
    resp = _get(real_server, "/v4/comments", {"filter[SearchTerm]": "1k5-9l2j-gnbc"})
    assert resp.status_code == 400
    assert resp.json() == body
    _assert_same_api_headers(headers, resp)


def test_comment_detail_is_the_mirror_file_with_links_pointing_here(real_server, realdata):
    mirror_file = (
        realdata
        / "mirror/raw-data/ACF/ACF-2025-0038/text-ACF-2025-0038/comments/ACF-2025-0038-0004.json"
    )
    original = json.loads(mirror_file.read_text())
    resp = _get(real_server, "/v4/comments/ACF-2025-0038-0004", {"include": "attachments"})
    ours = resp.json()
    assert ours["data"]["attributes"] == original["data"]["attributes"]
    file_url = ours["included"][0]["attributes"]["fileFormats"][0]["fileUrl"]
    assert file_url == f"{real_server.downloads_base}/ACF-2025-0038-0004/attachment_1.pdf"
    pdf = requests.get(file_url, timeout=10)
    assert pdf.content[:5] == b"%PDF-" and pdf.headers["Content-Type"] == "application/pdf"
    assert len(pdf.content) == ours["included"][0]["attributes"]["fileFormats"][0]["size"]
    assert "included" not in _get(real_server, "/v4/comments/ACF-2025-0038-0004").json()


def test_federal_register_search_from_the_real_docket(real_server):
    resp = requests.get(
        real_server.fr_base + "/documents.json",
        timeout=10,
        params=[
            ("conditions[agencies][]", "ACF"),
            ("conditions[type][]", "PRORULE"),
            ("fields[]", "regulations_dot_gov_info"),
            ("fields[]", "comments_close_on"),
            ("fields[]", "document_number"),
            ("per_page", "1000"),
        ],
    )
    body = resp.json()
    assert body["count"] == 1 and "next_page_url" not in body
    assert body["results"] == [
        {
            "regulations_dot_gov_info": {
                "agency_id": "ACF",
                "docket_id": REAL_DOCKET,
                "document_id": "ACF-2025-0038-0001",
            },
            "comments_close_on": "2025-09-22",  # commentEndDate 2025-09-23T03:59:59Z, Eastern
            "document_number": "2025-13790",
        }
    ]


# --------------------------------------------------------------------------- the API's rules


def test_page_caps(small):
    for params in (
        {"page[size]": 4},
        {"page[size]": 251},
        {"page[number]": 21},
        {"page[number]": 0},
        {"page[size]": "ten"},
    ):
        resp = _get(small, "/v4/comments", params)
        assert resp.status_code == 400, params
        error = resp.json()["errors"][0]
        assert error["status"] == "400" and error["title"]
    assert _get(small, "/v4/comments", {"page[size]": 250, "page[number]": 20}).status_code == 200


def test_list_meta_and_paging(small):
    params = {
        "filter[commentOnId]": small.object_id,
        "page[size]": 5,
        "sort": "lastModifiedDate,documentId",
    }
    first = _get(small, "/v4/comments", {**params, "page[number]": 1}).json()
    second = _get(small, "/v4/comments", {**params, "page[number]": 2}).json()
    assert first["meta"] | {"aggregations": None} == {
        "aggregations": None,
        "filters": {},
        "hasNextPage": True,
        "hasPreviousPage": False,
        "numberOfElements": 5,
        "pageNumber": 1,
        "pageSize": 5,
        "totalElements": 8,
        "totalPages": 2,
        "firstPage": True,
        "lastPage": False,
    }
    assert second["meta"]["numberOfElements"] == 3 and second["meta"]["lastPage"] is True
    ids = [c["id"] for c in first["data"] + second["data"]]
    assert ids == sorted(ids) and len(set(ids)) == 8


def test_descending_sort(small):
    data = _get(
        small, "/v4/comments", {"filter[commentOnId]": small.object_id, "sort": "-lastModifiedDate"}
    ).json()
    stamps = [c["attributes"]["lastModifiedDate"] for c in data["data"]]
    assert stamps == sorted(stamps, reverse=True)
    assert _get(small, "/v4/comments", {"sort": "colour"}).status_code == 400


def test_last_modified_filter_is_eastern_time(small):
    def ids_since(eastern: str) -> list[str]:
        params = {"filter[commentOnId]": small.object_id, "filter[lastModifiedDate][ge]": eastern}
        return [c["id"] for c in _get(small, "/v4/comments", params).json()["data"]]

    # 2026-01-05T12:00:00Z is 07:00 EST: a UTC reading of the filter would drop it.
    assert "EPA-2026-0001-0006" in ids_since("2026-01-05 07:00:00")
    assert "EPA-2026-0001-0006" not in ids_since("2026-01-05 07:00:01")
    assert (
        _get(
            small, "/v4/comments", {"filter[lastModifiedDate][ge]": "2026-01-05T07:00:00Z"}
        ).status_code
        == 400
    )


def test_ambiguous_dst_end_wall_time_follows_the_fold_switch(tmp_path):
    builder = MirrorBuilder(tmp_path, "EPA-2026-0009")
    object_id = builder.document(1)
    builder.comments(
        object_id, ["2025-11-02T05:30:00Z", "2025-11-02T06:30:00Z"]
    )  # 01:30 EDT, 01:30 EST
    with StandinServer(tmp_path) as server:
        params = {
            "filter[commentOnId]": object_id,
            "filter[lastModifiedDate][ge]": "2025-11-02 01:30:00",
        }
        assert _get(server, "/v4/comments", params).json()["meta"]["totalElements"] == 2
        server.dst_fold = 1
        assert _get(server, "/v4/comments", params).json()["meta"]["totalElements"] == 1


def test_keys_and_rate_limit(small):
    small.hourly_limit = 3
    missing = _get(small, "/v4/dockets/EPA-2026-0001", headers={})
    assert missing.status_code == 403 and missing.json()["error"]["code"] == "API_KEY_MISSING"
    bad = _get(small, "/v4/dockets/EPA-2026-0001", headers={"X-Api-Key": "nope"})
    assert bad.status_code == 403 and bad.json()["error"]["code"] == "API_KEY_INVALID"
    remaining = []
    for _ in range(3):
        resp = _get(
            small, "/v4/dockets/EPA-2026-0001", params={"api_key": "DEMO_KEY"}, headers={}
        )  # query key works too
        assert resp.status_code == 200
        remaining.append(resp.headers["X-Ratelimit-Remaining"])
    assert remaining == ["2", "1", "0"]
    over = _get(small, "/v4/dockets/EPA-2026-0001", params={"api_key": "DEMO_KEY"}, headers={})
    assert over.status_code == 429 and over.json()["error"]["code"] == "OVER_RATE_LIMIT"
    assert (
        _get(small, "/v4/dockets/EPA-2026-0001").status_code == 200
    )  # other keys count separately
    assert all("api_key" not in q for _, _, q in small.request_log)


def test_downloads_and_unavailable_items(small):
    detail = _get(small, "/v4/comments/EPA-2026-0001-0050", {"include": "attachments"}).json()
    url = detail["included"][0]["attributes"]["fileFormats"][0]["fileUrl"]
    assert requests.get(url, timeout=10).content == b"%PDF-1.4 tiny"
    assert (
        requests.get(
            small.downloads_base + "/EPA-2026-0001-0050/attachment_2.pdf", timeout=10
        ).status_code
        == 404
    )
    assert requests.get(small.downloads_base + "/../../etc/passwd", timeout=10).status_code == 404
    assert _get(small, "/v4/comments/EPA-2026-0001-0051").status_code == 404  # _UNAVAILABLE
    small.gone.add("EPA-2026-0001-0050")
    assert _get(small, "/v4/comments/EPA-2026-0001-0050").status_code == 404
    assert requests.get(url, timeout=10).status_code == 404


# --------------------------------------------------------------------------- fault switches


def test_fault_switches_hit_exactly_the_next_n_requests(small):
    path = "/v4/dockets/EPA-2026-0001"
    small.fail_next_5xx = 2
    assert [_get(small, path).status_code for _ in range(3)] == [503, 503, 200]
    small.burst_429 = 1
    resp = _get(small, path)
    assert resp.status_code == 429 and resp.headers["Retry-After"] == "1"
    assert resp.json()["error"]["code"] == "OVER_RATE_LIMIT"
    small.html_error_next = 1
    resp = _get(small, path)
    assert resp.status_code == 200 and resp.text.startswith("<!DOCTYPE html>")
    assert _get(small, path).json()["data"]["id"] == "EPA-2026-0001"


def test_reset_and_truncate(small):
    path = "/v4/dockets/EPA-2026-0001"
    small.reset_next = 1
    with pytest.raises(requests.ConnectionError):
        _get(small, path)
    small.truncate_next = 1
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        _get(small, path)
    small.truncate_next = 1
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        requests.get(small.downloads_base + "/EPA-2026-0001-0050/attachment_1.pdf", timeout=10)
    assert _get(small, path).status_code == 200


def test_random_5xx_is_deterministic(tmp_path):
    MirrorBuilder(tmp_path, "EPA-2026-0001").docket()

    def statuses() -> list[int]:
        with StandinServer(tmp_path, seed=7) as server:
            server.fail_5xx_rate = 0.5
            return [_get(server, "/v4/dockets/EPA-2026-0001").status_code for _ in range(20)]

    first = statuses()
    assert first == statuses()
    assert 503 in first and 200 in first


def test_slow_answers(small):
    small.slow_seconds = 0.3
    started = time.monotonic()
    _get(small, "/v4/dockets/EPA-2026-0001")
    assert time.monotonic() - started >= 0.3


# --------------------------------------------------------------------------- corpus changes


def test_corpus_changes_show_after_reload(small):
    root = small.root
    added = add_comments(root, "EPA-2026-0001", 3, "2026-02-01T10:00:00Z")
    modify_comments(root, ["EPA-2026-0001-0002"], "2026-02-02T10:00:00Z")
    withdraw_comments(root, ["EPA-2026-0001-0003"], "2026-02-03T10:00:00Z")
    small.reload()
    params = {
        "filter[commentOnId]": small.object_id,
        "filter[lastModifiedDate][ge]": "2026-02-01 00:00:00",
        "sort": "lastModifiedDate,documentId",
    }
    data = _get(small, "/v4/comments", params).json()["data"]
    assert [c["id"] for c in data] == [*added, "EPA-2026-0001-0002", "EPA-2026-0001-0003"]
    assert added == ["EPA-2026-0001-0051", "EPA-2026-0001-0052", "EPA-2026-0001-0053"]
    assert data[-1]["attributes"]["withdrawn"] is True
    assert data[-2]["attributes"]["lastModifiedDate"] == "2026-02-02T10:00:00Z"
    detail = _get(small, "/v4/comments/EPA-2026-0001-0002").json()
    assert "revised" in detail["data"]["attributes"]["comment"]


def test_large_folder_is_indexed_once_and_served_fast(tmp_path):
    builder = MirrorBuilder(tmp_path, "CMS-2026-0007")
    object_id = builder.document(1)
    builder.comments(
        object_id, [f"2026-01-01T00:{m:02d}:{s:02d}Z" for m in range(60) for s in range(0, 60, 2)]
    )
    with StandinServer(tmp_path) as server:
        started = time.monotonic()
        params = {
            "filter[commentOnId]": object_id,
            "page[size]": 250,
            "sort": "lastModifiedDate,documentId",
        }
        for page in range(1, 8):
            assert (
                len(_get(server, "/v4/comments", {**params, "page[number]": page}).json()["data"])
                == 250
            )
        assert time.monotonic() - started < 2.0


# --------------------------------------------------------------------------- the CLI


def test_cli_serves_until_killed(tmp_path):
    MirrorBuilder(tmp_path, "EPA-2026-0001").docket()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "devtools.standin_server",
            "--root",
            str(tmp_path),
            "--port",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        line = proc.stdout.readline()
        url = line.split(" at ")[1].split()[0]
        resp = requests.get(url + "/v4/dockets/EPA-2026-0001", headers=KEY, timeout=10)
        assert resp.json()["data"]["id"] == "EPA-2026-0001"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)


def test_the_highest_copy_of_a_re_downloaded_record_is_served(realdata, tmp_path):
    root = tmp_path / "mirror"
    shutil.copytree(realdata / "mirror", root)
    folder = root / f"raw-data/ACF/{REAL_DOCKET}/text-{REAL_DOCKET}/comments"
    body = json.loads((folder / f"{REAL_DOCKET}-0004.json").read_text())
    for n in (2, 10, 1):  # written out of order: the number decides, not the file system
        body["data"]["attributes"]["title"] = f"copy {n}"
        (folder / f"{REAL_DOCKET}-0004({n}).json").write_text(json.dumps(body))
    with StandinServer(root) as server:
        detail = _get(server, f"/v4/comments/{REAL_DOCKET}-0004").json()
        listed = _get(server, "/v4/comments", {"filter[docketId]": REAL_DOCKET}).json()
    assert detail["data"]["attributes"]["title"] == "copy 10"
    titles = {c["id"]: c["attributes"]["title"] for c in listed["data"]}
    assert titles[f"{REAL_DOCKET}-0004"] == "copy 10"
