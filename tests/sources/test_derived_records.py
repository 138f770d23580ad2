"""Records DERIVED from other sources (../shared/realdata/README.md): the three CDO-pilot dockets
(comments with only a docket, an object id, the document commented on and a body) and
NIST-2021-0006 (no dates, a last name without a first, real attachments), read through the
mirror source with no key (the stand-in answers no docket whose record the folder lacks).

The expectations are tables, not what docketeer stored: the CDO comments are the rows of
``labels/campaigns-cdo.csv`` (written from the pilot's spreadsheet, beside the JSON), NIST's
are ``DERIVED_ITEMS`` in tests/fixtures/real_records.py."""

from __future__ import annotations

import csv

from pipeline.store.models import Attachment, Item, ItemState
from pipeline.tasks import BackfillAll
from tests.fixtures.paths import mirror_dockets, served_dockets
from tests.fixtures.real_records import DERIVED_ITEMS
from tests.fixtures.state_fixtures import installed, make_runtime, new_pg_database, run_invocation


def derived_dockets(realdata) -> tuple[str, ...]:
    mirror = realdata / "mirror"
    return tuple(d for d in mirror_dockets(mirror) if d not in served_dockets(mirror))


def cdo_rows(realdata) -> dict[str, dict]:
    with (realdata / "labels/campaigns-cdo.csv").open(newline="", encoding="utf-8") as handle:
        return {row["id"]: row for row in csv.DictReader(handle)}


def test_every_derived_record_is_stored_as_its_table_says(tmp_path, pg_server, realdata, monkeypatch):
    monkeypatch.delenv("REGULATIONS_GOV_API_KEY", raising=False)
    dockets = derived_dockets(realdata)
    rows = cdo_rows(realdata)
    assert {r["docket"] for r in rows.values()} | {k.rsplit("-", 1)[0] for k in DERIVED_ITEMS} == set(dockets)
    runtime = make_runtime(tmp_path, index_url=new_pg_database(pg_server), api_base="http://127.0.0.1:9/v4",
                           api_key="", source="mirror", list_source="mirror", discover="list",
                           dockets=",".join(dockets), mirror_url=str(realdata / "mirror"), ocr="false")
    with installed(runtime):
        runtime.state  # noqa: B018
        assert run_invocation(BackfillAll())
        failed = {r.item: r.reason for r in ItemState.select().where(ItemState.state != "ok")}
        assert failed == {}
        stored = {i.key: i for i in Item.select()}
        assert stored.keys() == rows.keys() | DERIVED_ITEMS.keys()
        for key, row in rows.items():
            item = stored[key]
            # A spreadsheet turned some object ids into numbers: the JSON then has none.
            object_id = None if "-row" in key else row["objectId"]
            assert (item.kind, item.docket, item.object_id, item.comment_on_document_id) == (
                "comment", row["docket"], object_id, row["rule"]), key
            assert (item.title, item.submitter, item.organization, item.posted_date) == (None,) * 4, key
            assert item.body and item.body.strip(), key
        files = {}
        for a in Attachment.select():
            files.setdefault(a.item, {})[a.filename] = (a.title, a.format)
            assert a.sha256, (a.item, a.filename)  # every NIST file is in the mirror: stored
        for key, (kind, title, submitter, organisation, on, attached) in DERIVED_ITEMS.items():
            item = stored[key]
            assert (item.kind, item.title, item.submitter, item.organization, item.comment_on_document_id,
                    files.get(key, {})) == (kind, title, submitter, organisation, on, attached), key
        # NIST's bodies are raw v4 HTML (<br/>, <span style=...>, &rsquo;): stored as text,
        # the original kept beside it.
        nist = [stored[k] for k in DERIVED_ITEMS if stored[k].kind == "comment"]
        assert nist and not [i.key for i in nist if "<" in (i.body or "") or "&rsquo;" in (i.body or "")]
        assert any("&rsquo;" in (i.body_html or "") for i in nist)

