"""Links through the Federal Register (``lineage_federal_register``), against the stand-in:
off, no request at all; on, each FR number asked once, the dockets its record names linked
both ways, and a second run asking nothing; a number not answered (5xx) waiting to be asked
again by a later run, and one answered 404 given up."""

from __future__ import annotations

import json
from dataclasses import replace

from devtools.standin_server import StandinServer
from pipeline.engine.stage import StageContext
from pipeline.lineage.stage import fr_item, lineage_terms, link_docket
from pipeline.reading.lineage import timeline
from pipeline.store import dockets, item_states
from pipeline.store.documents import save_documents
from pipeline.store.models import DocketDocument, FederalRegisterDocument, ItemState, LineageLink

REAL = ("ACF-2025-0038", "DOS-2022-0004", "USTR-2015-0010")


def _seed(realdata) -> None:
    dockets.ensure_dockets(list(REAL), "list")
    for folder in (realdata / "mirror" / "raw-data").glob("*/*/text-*/documents"):
        docket_id = folder.parent.name.removeprefix("text-")
        save_documents(docket_id, [json.loads(p.read_text())["data"] for p in sorted(folder.glob("*.json"))])


def _run(state, settings, docket_id: str):
    return link_docket(StageContext(runtime=state, run_id="t", settings=settings), dockets.require_docket(docket_id))


def test_federal_register_links_are_asked_once_and_only_when_on(state, realdata):
    _seed(realdata)
    with StandinServer(realdata / "mirror") as server:
        # A final rule's record names another docket as well (real records do: the proposed rule's).
        server.fr_documents = {"2022-05629": {"docket_ids": ["USTR-2015-0010"]}}
        off = replace(state.settings, values={**state.settings.values, "fr_base": server.fr_base})
        assert _run(state, off, "DOS-2022-0004").counts == {}
        assert server.calls("/fr/") == 0 and lineage_terms(off) == ""

        on = replace(off, values={**off.values, "lineage_federal_register": True})
        assert lineage_terms(on) == "federal_register"
        result = _run(state, on, "DOS-2022-0004")
        assert result.counts == {"federal_register_calls": 1, "links_written": 2}
        assert server.calls("/fr/api/v1/documents/2022-05629.json") == 1
        assert json.loads(FederalRegisterDocument.get_by_id("2022-05629").rins) == ["1400-AE27"]
        assert sorted(LineageLink.select(LineageLink.docket, LineageLink.other, LineageLink.via,
                                         LineageLink.value).tuples()) == [
            ("DOS-2022-0004", "USTR-2015-0010", "federal_register", "2022-05629"),
            ("USTR-2015-0010", "DOS-2022-0004", "federal_register", "2022-05629")]
        assert timeline("DOS-2022-0004").dockets == ["DOS-2022-0004", "USTR-2015-0010"]

        server.reset_log()
        assert _run(state, on, "DOS-2022-0004").counts == {}
        assert server.calls("/fr/") == 0
        # Another docket's own FR number is asked once; 2022-05629, asked for DOS, never again.
        result = _run(state, on, "USTR-2015-0010")
        assert result.counts.get("federal_register_calls") == 1
        assert server.calls("/fr/api/v1/documents/2015-19523.json") == 1 and server.calls("/fr/") == 1


def test_an_unanswered_number_is_retried_by_a_later_run_and_a_404_is_given_up(state, realdata):
    _seed(realdata)
    # ACF's notice carries a number the Federal Register (the stand-in) does not know: 404.
    DocketDocument.update(fr_doc_num="1999-00001").where(DocketDocument.docket == "ACF-2025-0038").execute()
    dos_path = "/fr/api/v1/documents/2022-05629.json"
    with StandinServer(realdata / "mirror") as server:
        server.fr_documents = {"2022-05629": {"docket_ids": ["USTR-2015-0010"]}}
        on = replace(state.settings, values={**state.settings.values, "fr_base": server.fr_base,
                                             "lineage_federal_register": True, "http_attempts": 1})
        server.path_faults[dos_path] = "503"
        assert _run(state, on, "DOS-2022-0004").counts == {"federal_register_unanswered": 1}
        asked = (ItemState.stage == "lineage") & (ItemState.item == fr_item("DOS-2022-0004", "2022-05629"))
        row = ItemState.get(asked)
        assert (row.state, row.detail, row.attempts) == ("retry", "transient", 1) and "2022-05629" in row.reason
        assert FederalRegisterDocument.get_or_none(FederalRegisterDocument.number == "2022-05629") is None
        # The docket carries the next attempt: the lineage target turns incomplete when it comes.
        assert item_states.refresh_retry_due("DOS-2022-0004") == row.next_attempt_at

        server.reset_log()
        assert _run(state, on, "DOS-2022-0004").counts == {}  # not due yet: nothing asked
        assert server.calls("/fr/") == 0

        ItemState.update(next_attempt_at="2000-01-01T00:00:00.000000Z").where(asked).execute()
        del server.path_faults[dos_path]
        result = _run(state, on, "DOS-2022-0004")
        assert result.counts == {"federal_register_calls": 1, "links_written": 2}
        assert server.calls(dos_path) == 1
        assert ItemState.get(asked).state == "ok" and item_states.refresh_retry_due("DOS-2022-0004") is None

        server.reset_log()
        assert _run(state, on, "ACF-2025-0038").counts == {"federal_register_unanswered": 1}
        gone = ItemState.get((ItemState.stage == "lineage") & (ItemState.item == fr_item("ACF-2025-0038", "1999-00001")))
        assert (gone.state, gone.detail, gone.next_attempt_at) == ("gone", "permanent", None)
        assert _run(state, on, "ACF-2025-0038").counts == {}
        assert server.calls("/fr/") == 1  # asked once, never again
