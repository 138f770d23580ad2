"""`docketeer explain`: the whole story of one comment, as text (snapshots, times masked)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from pipeline.clock import eastern_instant
from pipeline.failures import RetryPolicy
from pipeline.ops import cli
from pipeline.store import item_states
from pipeline.store.models import ItemState
from tests.fixtures.pipeline_fixtures import built_store
from tests.fixtures.state_fixtures import real_mirror_runtime, run_invocation

THEN = datetime(2020, 1, 1, 5, 0, tzinfo=UTC)  # kept in the snapshots; times of the run are masked


@pytest.fixture(scope="module")
def store(tmp_path_factory, pg_server):
    with built_store(tmp_path_factory.mktemp("explain"), pg_server) as built:
        yield built


def explain(capsys, comment: str) -> str:
    """The output with the times of the store's build masked (same width: columns stay)."""
    assert cli.main(["explain", comment]) == 0
    out = capsys.readouterr().out
    built_on = eastern_instant(ItemState.get(ItemState.stage == "fetch").written_at)[:10]
    out = re.sub(r"127\.0\.0\.1:\d+/", "127.0.0.1:PORT/", out)  # the stand-in's port, in the last column
    return re.sub(re.escape(built_on) + r" \d\d:\d\d E[SD]T", "XXXX-XX-XX XX:XX EXT", out)


def _ocr_comment() -> str:
    return ItemState.get(ItemState.stage == "ocr").item.split("/")[0]


OCR_SNAPSHOT = """\
comment CMS-2026-0001-0003  docket CMS-2026-0001  posted 2026-01-05 00:00 EST  modified 2026-01-05 21:44 EST
title: National Nurses Forum
organisation: National Nurses Forum
organisation resolved: National Nurses Forum
record: subtype Public Comment  tracking number oxt-tjtl-yviz  pages 1
stage          state     failure  attempts  first failed  next attempt  at                    reason
fetch          ok                                                       XXXX-XX-XX XX:XX EXT
backfill       ok                                                       XXXX-XX-XX XX:XX EXT
extract        ocr_done                                                 XXXX-XX-XX XX:XX EXT  attachment_1.pdf: ocr_needed
ocr            ok                                                       XXXX-XX-XX XX:XX EXT  1 scan(s): 1 ok
index          indexed                                                  XXXX-XX-XX XX:XX EXT  3 chunk(s), hashing:unigram-bigram:256:hash-1
campaigns      ok                                                       XXXX-XX-XX XX:XX EXT
organisations  ok                                                       XXXX-XX-XX XX:XX EXT
lineage        ok                                                       XXXX-XX-XX XX:XX EXT
topics         ok                                                       XXXX-XX-XX XX:XX EXT
sections       ok                                                       XXXX-XX-XX XX:XX EXT
positions      skipped                                                  XXXX-XX-XX XX:XX EXT  not estimated yet: code 20 more (0 coded comment(s) with text; positions_min_codes 20, and two positions with 3 codes each)
1 attachment: 1 read
file              #  title                                        format  declared  bytes  sha256        download  extract   ocr  attempts  next attempt  reason         url
attachment_1.pdf  1  CMS-2026-0001 National Nurses Forum Comment  pdf     18576     18576  2de4d60bc78c  ok        ocr_done  ok                           no text layer  http://127.0.0.1:PORT/downloads/CMS-2026-0001-0003/attachment_1.pdf
"""


def test_explain_a_comment_that_went_through_ocr(store, capsys):
    # Extract left the scan ocr_needed and OCR read it: nothing says it still waits for OCR.
    assert explain(capsys, _ocr_comment()) == OCR_SNAPSHOT


RETRY_SNAPSHOT = """\
comment CMS-2026-0001-0002  docket CMS-2026-0001  posted 2026-01-05 00:00 EST  modified 2026-01-05 05:51 EST
title: Coalition for Patient Rights
organisation: Coalition for Patient Rights
organisation resolved: Coalition for Patient Rights
record: subtype Public Comment  tracking number q8b-uz5h-xt54  pages 1
stage          state    failure    attempts  first failed          next attempt          at                    reason
fetch          ok                                                                        XXXX-XX-XX XX:XX EXT
backfill       retry    transient  1         2020-01-01 00:00 EST  2020-01-01 01:00 EST  2020-01-01 00:00 EST  HTTP 503 from the stand-in
extract        ok                                                                        XXXX-XX-XX XX:XX EXT
index          indexed                                                                   XXXX-XX-XX XX:XX EXT  6 chunk(s), hashing:unigram-bigram:256:hash-1
campaigns      ok                                                                        XXXX-XX-XX XX:XX EXT
organisations  ok                                                                        XXXX-XX-XX XX:XX EXT
lineage        ok                                                                        XXXX-XX-XX XX:XX EXT
topics         ok                                                                        XXXX-XX-XX XX:XX EXT
sections       ok                                                                        XXXX-XX-XX XX:XX EXT
positions      skipped                                                                   XXXX-XX-XX XX:XX EXT  not estimated yet: code 20 more (0 coded comment(s) with text; positions_min_codes 20, and two positions with 3 codes each)
1 attachment: 1 read
file              #  title                                               format  declared  bytes  sha256        download  extract  ocr  attempts  next attempt          reason                      url
attachment_1.pdf  1  CMS-2026-0001 Coalition for Patient Rights Comment  pdf     4313      4313   3f0c5d413465  retry     ok       -    1         2020-01-01 01:00 EST  HTTP 503 from the stand-in  http://127.0.0.1:PORT/downloads/CMS-2026-0001-0002/attachment_1.pdf
"""


def test_explain_a_comment_waiting_to_retry(store, capsys):
    comment = next(c for c in store.manifest.comments if c.attachments and c.id != _ocr_comment())
    name = ItemState.get((ItemState.stage == "backfill.file") & ItemState.item.startswith(f"{comment.id}/")).item
    for stage, item in (("backfill", comment.id), ("backfill.file", name)):
        item_states.retry_later(stage, item, comment.docket_id, "HTTP 503 from the stand-in",
                                run_id="test", policy=RetryPolicy(), now=THEN)
    assert explain(capsys, comment.id) == RETRY_SNAPSHOT


FETCH_FAILED_SNAPSHOT = """\
CMS-2026-0001-0999  docket CMS-2026-0001  not stored: its fetch did not succeed
stage  state   failure    attempts  first failed  next attempt  at                    reason
fetch  failed  permanent                                        XXXX-XX-XX XX:XX EXT  list item without a lastModifiedDate
"""


def test_explain_a_comment_that_failed_at_fetch(store, capsys):
    docket = store.dockets[0]
    item_states.transition("fetch", f"{docket}-0999", docket, "failed", run_id="test",
                           detail="permanent", reason="list item without a lastModifiedDate")
    assert explain(capsys, f"{docket}-0999") == FETCH_FAILED_SNAPSHOT


def test_explain_names_who_sent_a_real_comment_as_the_export_does(tmp_path, pg_server, realdata, capsys):
    """The record's submitter and organisation fields, then each organisation the stage
    resolved, in the field's order: what the export's comments and comment_organisations say."""
    import pyarrow.parquet as pq

    from pipeline.ops.export import export
    from pipeline.tasks import OrganisationsAll

    with real_mirror_runtime(tmp_path, pg_server, realdata) as (runtime, _ids):
        assert run_invocation(OrganisationsAll())
        export(runtime, tmp_path / "export", formats=("parquet",))
        comments = {row["comment_id"]: row for path in (tmp_path / "export").glob("*/comments.parquet")
                    for row in pq.read_table(path).to_pylist()}
        resolved: dict[str, list] = {}
        for path in sorted((tmp_path / "export").glob("*/comment_organisations.parquet")):
            for row in sorted(pq.read_table(path).to_pylist(), key=lambda r: (r["comment_id"], r["position"])):
                resolved.setdefault(row["comment_id"], []).append(row["organisation"])
        # The real records give both fields, and the stage resolves some: there is something to see.
        assert any(r["submitter"] and r["organization"] for r in comments.values()) and resolved
        capsys.readouterr()
        for key, row in comments.items():
            assert cli.main(["explain", key]) == 0
            lines = capsys.readouterr().out.splitlines()
            who = [line for line in lines if line.startswith(("submitter: ", "organisation: ", "organisation resolved: "))]
            expected = ([f"submitter: {row['submitter']}"] if row["submitter"] else []) + (
                [f"organisation: {row['organization']}"] if row["organization"] else [])
            assert who[:len(expected)] == expected, (key, lines[:6])
            shown = [line.removeprefix("organisation resolved: ") for line in who[len(expected):]]
            assert [name.split(" (written")[0].split(", from its")[0] for name in shown] == resolved.get(key, []), \
                (key, lines[:6])
