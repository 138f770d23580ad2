"""Who is told what: the API host gets the key and ``docketeer/<version>``; the download
hosts get a browser's headers (CloudFront there refuses anything else) and never the key,
on a redirect too."""

from __future__ import annotations

import importlib.metadata
import json

import pytest

from pipeline.config import load_settings
from pipeline.errors import ConfigError
from pipeline.sources import connect
from pipeline.sources.regulations_gov import BROWSER_HEADERS, RegulationsGovClient
from tests.fixtures.loopback_recorder import Recorder

KEY = "sEcReT-kEy-42"
PDF = b"%PDF-1.4 a file"


def _file(path):
    return 200, {"Content-Type": "application/pdf"}, PDF


@pytest.fixture
def hosts():
    """The API host (127.0.0.1), a download host (127.0.0.2) redirecting to a second one
    (127.0.0.3), each recording what it was sent."""
    api = Recorder("127.0.0.1", lambda path: (200, {"Content-Type": "application/vnd.api+json"},
                                                json.dumps({"data": {"id": "X-1", "attributes": {}}}).encode()))
    final = Recorder("127.0.0.3", _file)
    first = Recorder("127.0.0.2", lambda path: (302, {"Location": final.base + path}, b""))
    yield api, first, final
    for server in (api, first, final):
        server.shutdown()


def _sent(server) -> list[dict]:
    return [{name.lower(): value for name, value in headers.items()} for _path, headers in server.seen]


def _download(client, url, tmp_path) -> bytes:
    with open(tmp_path / "spool", "w+b") as spool:
        client.download(url, spool, max_bytes=10_000)
        spool.seek(0)
        return spool.read()


def test_the_api_host_gets_the_key_and_the_download_hosts_a_browsers_headers(hosts, tmp_path):
    api, first, final = hosts
    client = RegulationsGovClient(api.base + "/v4", KEY, sleep=lambda _s: None,
                                  download_hosts=(first.base, final.base))
    client.get_docket("X-1")
    assert _download(client, first.base + "/X-1/attachment_1.pdf", tmp_path) == PDF
    [to_api] = _sent(api)
    assert to_api["x-api-key"] == KEY
    assert to_api["user-agent"] == f"docketeer/{importlib.metadata.version('docketeer')}"
    downloads = _sent(first) + _sent(final)
    assert len(downloads) == 2  # the redirect and the file
    for sent in downloads:
        assert "x-api-key" not in sent and KEY not in json.dumps(sent)
        for name, value in BROWSER_HEADERS.items():
            assert sent[name.lower()] == value
    assert downloads[0]["user-agent"].startswith("Mozilla/5.0")


def test_download_headers_come_from_the_setting(hosts, tmp_path):
    api, first, final = hosts
    settings = load_settings({
        "REGULATIONS_GOV_API_KEY": KEY, "DOCKETEER_API_BASE": api.base + "/v4",
        "DOCKETEER_DOWNLOAD_HOSTS": f"{first.base},{final.base}",
        "DOCKETEER_DOWNLOAD_HEADERS": json.dumps({"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/139.0",
                                                  "Accept": "*/*"}),
    })
    client = connect.regulations_gov(settings, connect.request_budget(settings, None))
    assert _download(client, first.base + "/X-1/attachment_1.pdf", tmp_path) == PDF
    for sent in _sent(first) + _sent(final):
        assert sent["user-agent"] == "Mozilla/5.0 (X11; Linux x86_64) Firefox/139.0"
        assert sent["accept"] == "*/*" and "x-api-key" not in sent
    client.get_docket("X-1")
    assert _sent(api)[0]["user-agent"].startswith("docketeer/")


@pytest.mark.parametrize("value, reason", [
    ('{"X-Api-Key": "k"}', "may not carry X-Api-Key"),
    ('{" x-api-key ": "k"}', "may not carry X-Api-Key"),
    ('["User-Agent"]', "JSON object"),
    ('{"User-Agent": 5}', "JSON object"),
    ("User-Agent: Mozilla", "not a JSON object"),
])
def test_download_headers_that_are_no_headers_or_carry_the_key_are_refused(value, reason):
    settings = load_settings({"REGULATIONS_GOV_API_KEY": KEY, "DOCKETEER_DOWNLOAD_HEADERS": value})
    with pytest.raises(ConfigError, match=reason):
        connect.regulations_gov(settings, connect.request_budget(settings, None))
