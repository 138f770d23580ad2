"""Text a record gives is made valid before it is stored: a lone UTF-16 surrogate (valid JSON,
no character) in any title, a body or an attachment title once stopped its docket's fetch or
backfill on every run (UnicodeEncodeError); control characters reached every page, feed and
terminal. Now each is stored as U+FFFD and counted in the item's decision, the control
characters removed from what is shown and exported (the original body kept as it was), and
every comment of the docket stored, from the API and from the mirror alike."""

from __future__ import annotations

import json

import pytest

from devtools.make_corpus import make_corpus
from devtools.mirror_layout import DocketFolders, comment_files, replace_json
from devtools.standin_server import StandinServer
from pipeline.backfill.stage import backfill_docket
from pipeline.engine.stage import StageContext
from pipeline.store import dockets
from pipeline.store.models import Attachment, Docket, Item, ItemState
from tests.fixtures.backfill_runs import Runtimes, fetch

SURROGATE = "\ud800"
CONTROLS = "\x1b]0;owned\x07\x1b[2J\x00\x9b"  # an OSC title, BEL, a screen clear, NUL, a C1 CSI
HOSTILE = f"Said {SURROGATE} and {CONTROLS}done\r\nnext line"
SHOWN = "Said \ufffd and ]0;owned[2Jdone\nnext line"  # what is stored: readable, nothing acted on


def _edit(path, change) -> None:
    record = json.loads(path.read_text())
    change(record["data"]["attributes"], record)
    replace_json(path, record)


def _spoil(root, docket_id):
    """Every kind of field a record gives text in, hostile; returns the comments touched."""
    files = comment_files(root)
    ids = sorted(files)
    with_files = [key for key in ids if json.loads(files[key].read_text()).get("included")]
    _edit(files[ids[0]], lambda attrs, _r: attrs.update(title=HOSTILE))
    _edit(files[ids[1]], lambda attrs, _r: attrs.update(comment=f"<p>{HOSTILE}</p>"))
    _edit(files[ids[2]], lambda attrs, _r: attrs.update(firstName=HOSTILE, organization=HOSTILE, city=HOSTILE))
    _edit(files[with_files[-1]], lambda _a, record: record["included"][0]["attributes"].update(title=HOSTILE))
    folders = DocketFolders.find(root, docket_id)
    _edit(folders.docket_file(), lambda attrs, _r: attrs.update(title=HOSTILE))
    for document in (folders.text / "documents").glob("*.json"):
        _edit(document, lambda attrs, _r: attrs.update(title=HOSTILE))
    return ids, {ids[0]: "title", ids[1]: "body", ids[2]: "names", with_files[-1]: "attachment title"}


@pytest.mark.parametrize("source", ["api", "mirror"])
def test_hostile_text_in_every_field_is_stored_valid_and_counted(tmp_path, source):
    docket_id = make_corpus(tmp_path / "mirror", dockets=1, comments_per_docket=5).dockets[0].id
    comments, spoiled = _spoil(tmp_path / "mirror", docket_id)
    runtimes = Runtimes(tmp_path)
    try:
        with StandinServer(tmp_path / "mirror") as server:
            extra = {"source": "mirror", "mirror_url": str(tmp_path / "mirror")} if source == "mirror" else {}
            runtime = runtimes.open("store", api_base=server.api_base, fr_base=server.fr_base, **extra)
            fetch(runtime, [docket_id])  # raised UnicodeEncodeError before
            result = backfill_docket(StageContext(runtime, "backfill-run"), dockets.require_docket(docket_id))
            assert result.clean, result.message
            stored = {item.key: item for item in Item.select().where(Item.docket == docket_id)}
            assert set(comments) <= set(stored)  # every comment of the docket
            states = {row.item: row for row in ItemState.select().where(ItemState.stage == "backfill")}
            assert {key: states[key].state for key in comments} == dict.fromkeys(comments, "ok")
            for key, what in spoiled.items():  # each lone surrogate, counted in its decision
                count = 3 if what == "names" else 1
                assert f"{count} invalid character(s)" in (states[key].reason or ""), (what, states[key].reason)
            item = stored[next(k for k, w in spoiled.items() if w == "title")]
            assert item.title == SHOWN
            item = stored[next(k for k, w in spoiled.items() if w == "body")]
            assert SHOWN in item.body
            assert "\x1b]0;owned\x07" in item.body_html and SURROGATE not in item.body_html  # the original
            item = stored[next(k for k, w in spoiled.items() if w == "names")]
            assert item.submitter.startswith(SHOWN) and item.organization == SHOWN and item.city == SHOWN
            key = next(k for k, w in spoiled.items() if w == "attachment title")
            titles = [a.title for a in Attachment.select().where(Attachment.item == key)]
            assert SHOWN in titles
            assert Docket.get_by_id(docket_id).title == SHOWN
            documents = Item.select().where((Item.docket == docket_id) & (Item.kind == "document"))
            assert [d.title for d in documents] and {d.title for d in documents} == {SHOWN}
    finally:
        runtimes.close()
