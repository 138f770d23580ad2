"""``docketeer serve`` answers only to the names it listens under (DNS rebinding: a page
elsewhere pointing a name of its own at 127.0.0.1 gets 400, never the store)."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from pipeline.web.app import make_app
from pipeline.web.hosts import allowed_hosts, host_name


def status(app, host: str) -> int:
    with TestClient(app, base_url="http://127.0.0.1") as client:
        # Filters without a query: a redirect to browsing, answered before any store is read
        # (a filter by an id would be checked against the store: this one is a choice).
        return client.get("/search?attachments=yes", headers={"Host": host}, follow_redirects=False).status_code


@pytest.mark.parametrize(("host", "code"), [
    ("127.0.0.1:8080", 302), ("localhost:8080", 302), ("LOCALHOST.", 302), ("[::1]:8080", 302),
    ("evil.example", 400), ("evil.example:8080", 400), ("127.0.0.1.evil.example", 400), ("", 400),
    ("localhost@evil.example", 400)])
def test_only_loopback_names_are_answered_by_default(host, code):
    assert status(make_app(None, None), host) == code  # 400 comes before any store is read


def test_host_adds_its_own_name_and_every_interface_adds_this_machines():
    app = make_app(None, None, allowed_hosts("docs.lan"))
    assert status(app, "docs.lan:8080") == 302 and status(app, "localhost") == 302
    assert status(app, "evil.example") == 400
    assert "docs.lan" not in allowed_hosts("127.0.0.1")
    import socket

    assert host_name(socket.gethostname()) in allowed_hosts("0.0.0.0")
    assert host_name("[fe80::1]:80") == "fe80::1" and host_name("Example.ORG.:443") == "example.org"


def test_the_refusal_says_what_to_do():
    with TestClient(make_app(None, None), base_url="http://127.0.0.1") as client:
        answer = client.get("/search?q=x", headers={"Host": "evil.example"})
    assert answer.status_code == 400 and "--host" in answer.text and "evil.example" in answer.text
