"""Variants of the real USTR records in a mirror *folder*, listed from the folder itself
(``list_source = mirror``): older shapes give the same rows; a record with a bad id or a
mistyped field is that item's failure; a file whose name is no safe id is skipped, counted
and named. The docket's fetch stays clean and takes every other record.
"""

from __future__ import annotations

import json
import shutil
import uuid

from pipeline.engine.stage import StageContext
from pipeline.fetch.stage import fetch_docket
from pipeline.runtime import set_runtime
from pipeline.store import dockets
from pipeline.store.models import Item, ItemState
from tests.fixtures.real_records import ITEMS
from tests.fixtures.state_fixtures import make_runtime

USTR = "USTR-2015-0010"


def listed_fields(key: str) -> tuple:
    """What a listing stores of a real record (the table's kind, title, posted, withdrawn)."""
    kind, title, posted, _, withdrawn, *_ = ITEMS[key]
    return kind, title, posted, withdrawn


def spoil(text, source: str, target: str, change) -> None:
    body = json.loads((text / source).read_text())
    body["data"]["id"] = target.split("/")[-1].removesuffix(".json")  # a record of its own
    change(body["data"])
    (text / target).write_text(json.dumps(body))


def test_bad_records_in_a_mirror_folder_are_their_own_failures(tmp_path, realdata):
    mirror = tmp_path / "mirror"
    shutil.copytree(realdata / "mirror/raw-data/USTR", mirror / "raw-data/USTR")
    text = mirror / f"raw-data/USTR/{USTR}/text-{USTR}"
    comments = "comments/USTR-2015-0010-0005.json"
    spoil(text, comments, "comments/USTR-2015-0010-0098.json", lambda d: d.update(id=20150010))
    spoil(text, comments, "comments/USTR-2015-0010-0097.json", lambda d: d["attributes"].update(title=5))
    spoil(text, comments, "comments/USTR-2015-0010-0096.json", lambda d: d.pop("attributes"))
    shutil.copy(text / comments, text / "comments/USTR 2015-0010-0099.json")  # no safe id
    shutil.copy(text / comments, text / "comments/USTR-2015-0010-0099\n.json")
    for name in ("lastModifiedDate", "modifyDate"):  # an older record: the same row without them
        spoil(text, "comments/USTR-2015-0010-0003.json", "comments/USTR-2015-0010-0003.json",
              lambda d, name=name: d["attributes"].pop(name, None))
    runtime = make_runtime(tmp_path, source="mirror", list_source="mirror", mirror_url=str(mirror))
    runtime.state  # noqa: B018
    previous = set_runtime(runtime)
    try:
        dockets.ensure_dockets([USTR], "list")
        ctx = StageContext(runtime=runtime, run_id=uuid.uuid4().hex)
        result = fetch_docket(ctx, dockets.require_docket(USTR))
        assert result.clean and result.counts["malformed"] == 2 and result.counts["failed"] == 3, result.counts
        stored = {i.key: (i.kind, i.title, i.posted_date, i.withdrawn) for i in Item.select()}
        assert stored == {key: listed_fields(key) for key in ITEMS if key.startswith(USTR)}
        failed = {s.item: s.reason for s in ItemState.select().where(ItemState.stage == "fetch",
                                                                     ItemState.state == "failed")}
        assert set(failed) == {"USTR-2015-0010-0096", "USTR-2015-0010-0097", "USTR-2015-0010-0098"}
        assert "no data object for this id" in failed["USTR-2015-0010-0098"]
        assert "`title` is a whole number, not a string" in failed["USTR-2015-0010-0097"]
        unkeyed = sorted(s.reason for s in ItemState.select().where(ItemState.stage == "fetch.unkeyed"))
        assert len(unkeyed) == 2 and all(r.startswith("mirror object without a safe id (key ") for r in unkeyed)
        assert any("'text-USTR-2015-0010/comments/USTR 2015-0010-0099.json'" in r for r in unkeyed)
        assert any("0099\\n.json'" in r for r in unkeyed) and not any("\n" in r for r in unkeyed)
        assert "mirror object without a safe id" in result.message
        again = fetch_docket(StageContext(runtime=runtime, run_id=uuid.uuid4().hex), dockets.require_docket(USTR))
        # Nothing new in the folder: nothing read, nothing written, the bad files not named again.
        assert again.clean and "malformed" not in again.counts and "mirror.read" not in again.counts
        assert ItemState.select().where(ItemState.stage == "fetch.unkeyed").count() == 2
    finally:
        set_runtime(previous)
        runtime.close()
