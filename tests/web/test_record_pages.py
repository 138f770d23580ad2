"""What the real records say, as people read it: the comment page's declared attachments
("1 attachment: 1 waiting for the mirror"; "attachments not listed in this record" for an
older record without ``included``), the kept attributes, and docket totals that count the
submissions a mass-mail record stands for (``duplicateComments``), on the page and in
``docketeer dockets``. The USTR docket is re-laid with one comment's record given the shape of
a mass-mail campaign's (``duplicateComments`` 15851, subtype "Mass Mail Campaign")."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from starlette.testclient import TestClient

from devtools.standin_server import StandinServer
from pipeline.ops import cli
from pipeline.web import pages
from pipeline.web.app import make_app
from tests.fixtures.chain_runs import KEY, run_at
from tests.fixtures.state_fixtures import installed, make_runtime, new_pg_database

pytestmark = pytest.mark.postgres

DOCKETS = ("DOS-2022-0004", "USTR-2015-0010")
MASS_MAIL = "USTR-2015-0010-0004"


@pytest.fixture(scope="module")
def client(tmp_path_factory, pg_server, realdata):
    tmp_path = tmp_path_factory.mktemp("record_pages")
    mirror = tmp_path / "mirror"
    for docket in DOCKETS:
        agency = docket.split("-")[0]
        shutil.copytree(realdata / f"mirror/raw-data/{agency}/{docket}", mirror / f"raw-data/{agency}/{docket}")
    record = mirror / f"raw-data/USTR/USTR-2015-0010/text-USTR-2015-0010/comments/{MASS_MAIL}.json"
    body = json.loads(record.read_text())
    body["data"]["attributes"].update(duplicateComments=15851, subtype="Mass Mail Campaign")
    record.write_text(json.dumps(body))
    with StandinServer(mirror, api_keys=(KEY,)) as server, installed(make_runtime(
            tmp_path, index_url=new_pg_database(pg_server), api_base=server.api_base, api_key=KEY,
            discover="list", dockets=",".join(DOCKETS), source="mirror", mirror_url=str(mirror),
            extract_workers=1, ocr="false", http_attempts=1)) as runtime:
        runtime.state  # noqa: B018
        assert run_at(1)
        with TestClient(make_app(runtime, pages.WarmSearch(runtime)), base_url="http://127.0.0.1") as test_client:
            yield test_client


def test_a_comment_whose_file_waits_shows_its_record_and_the_file_waiting(client):
    page = client.get("/comment/DOS-2022-0004-0003").text
    assert "1 attachment: 1 waiting for the mirror" in page
    assert "Raytheon Technologies Corp. Comments re DOS-2022-0004" in page  # the declared file's title
    assert "235,577 bytes declared" in page
    assert "See attached file(s)" in page and "Raytheon Technologies Corporation" in page
    assert "<dt>tracking number</dt><dd>l2z-02tq-bsbu</dd>" in page


def test_unknown_is_not_zero(client):
    unlisted = client.get("/comment/USTR-2015-0010-0005").text  # no `included`, no file in the mirror
    assert "attachments not listed in this record" in unlisted and "no attachments" not in unlisted
    found = client.get("/comment/USTR-2015-0010-0003").text  # no `included`; the binary folder has it
    assert "1 attachment: 1 read" in found


def test_a_mass_mail_record_counts_its_submissions(client, capsys, tmp_path):
    page = client.get(f"/comment/{MASS_MAIL}").text
    assert "<dt>duplicates</dt><dd>15851</dd>" in page and "<dt>subtype</dt><dd>Mass Mail Campaign</dd>" in page
    docket = client.get("/docket/USTR-2015-0010").text
    assert "4 records, 15,855 submissions represented" in docket
    assert cli.main(["dockets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split()
    row = next(line.split() for line in lines if line.startswith("USTR-2015-0010"))
    assert (row[header.index("comments")], row[header.index("submissions")]) == ("4", "15855")
    assert cli.main(["export", str(tmp_path), "--docket", "USTR-2015-0010", "--format", "parquet"]) == 0
    import pyarrow.parquet as pq

    exported = {r["comment_id"]: r for r in pq.read_table(tmp_path / "USTR-2015-0010/comments.parquet").to_pylist()}
    assert (exported[MASS_MAIL]["duplicate_comments"], exported[MASS_MAIL]["submissions"],
            exported[MASS_MAIL]["subtype"]) == (15851, 15852, "Mass Mail Campaign")
    assert sum(r["submissions"] for r in exported.values()) == 15855


def test_the_real_documents_read_on_their_pages_and_are_found_by_the_search(client):
    notice = client.get("/document/USTR-2015-0010-0001").text
    assert "Public Hearing: China" in notice and '<dd class="document-type">Notice</dd>' in notice
    assert '<dd class="posted">2015-08-10</dd>' in notice  # 04:00Z: midnight in Washington (EDT)
    # Its record holds no text of its own: its content file's text, section by section (the
    # sections stage), each with the page its heading is on.
    headings = re.findall(r'<h2 class="section-heading">([^<]+) <code class="section-id">([^<]+)</code>', notice)
    assert headings[-3:] == [("1. Background", "q1"), ("2. Public Comment and Hearing", "q2"),
                             ("3. Requirements for Submissions", "q3")]
    assert '<code class="section-id">q2</code> <span class="meta">page 2</span>' in notice
    assert "no document text" not in notice
    withdrawn = client.get("/document/USTR-2015-0010-0015").text
    assert '<strong class="withdrawn">withdrawn</strong> (Upddate to agenda)' in withdrawn  # the record's words
    assert '<dd class="posted">2015-10-04</dd>' in withdrawn  # 2015-10-05T00:00:00Z is the 4th in Washington
    found = client.get("/search", params={"q": "hearing transcript China compliance", "kind": "documents"}).text
    assert re.findall(r'class="document-link" href="/document/([^"]+)"', found)[0] == "USTR-2015-0010-0017"
    docket = client.get("/docket/USTR-2015-0010").text
    listed = re.findall(r'<li><a class="document-link" href="/document/([^"]+)"', docket)
    assert listed == ["USTR-2015-0010-0001", "USTR-2015-0010-0015", "USTR-2015-0010-0016", "USTR-2015-0010-0017"]
