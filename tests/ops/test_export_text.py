"""The export carries the text: per comment its whole text (body and every attachment, OCR's
included), per attachment its text and final state (OCR's outcome for a scan OCR read), page
breaks as form feeds; campaign figures agree with the campaigns grouped; an unchanged store is
not rewritten, a new export version rewrites it once."""

from __future__ import annotations

from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from pipeline.counters import COMBINED_READS, counters
from pipeline.ops import cli, export
from pipeline.ops.export import EXPORT_FILES_WRITTEN
from pipeline.reading import reports
from pipeline.store.models import CampaignMember, ItemState
from tests.fixtures.pipeline_fixtures import built_store


def words(text: str | None) -> str:
    return " ".join((text or "").split()).lower()


def test_a_scan_ocr_read_stands_as_ocr_says():
    stored = SimpleNamespace(sha256="ab" * 32)
    scan = SimpleNamespace(state="ocr_needed", reason=None)
    read = SimpleNamespace(state="ok", reason=None)
    unread = SimpleNamespace(state="failed", reason="ocr found no text")
    assert reports.file_standing(stored, None, scan, read) == reports.FileStanding("ok", None, "read")
    assert reports.file_standing(stored, None, scan, unread).state == "failed"
    assert reports.file_standing(stored, None, scan, None).state == "ocr_needed"
    assert reports.file_standing(stored, None, scan, SimpleNamespace(state="pending", reason=None)).state \
        == "ocr_needed"


@pytest.mark.postgres
def test_export_holds_every_text_ocr_included_and_campaigns_as_grouped(tmp_path, pg_server, monkeypatch):
    with built_store(tmp_path, pg_server, dockets=2, comments=6) as store:  # IndexAll: OCR, campaigns
        scans = [a for a in store.manifest.attachments() if a.kind == "image_pdf"]
        assert scans and ItemState.select().where(ItemState.stage == "ocr", ItemState.state == "ok").count() \
            == len(scans)
        dest = tmp_path / "export"
        assert cli.main(["export", str(dest), "--format", "parquet"]) == 0
        comments = {r["comment_id"]: r for d in store.dockets
                    for r in pq.read_table(dest / d / "comments.parquet").to_pylist()}
        files = {(r["comment_id"], r["filename"]): r for d in store.dockets
                 for r in pq.read_table(dest / d / "attachments.parquet").to_pylist()}

        for scan in scans:  # extract said ocr_needed; OCR read it: its text and OCR's outcome
            row = files[(scan.comment_id, scan.file)]
            assert (row["state"], row["reason"]) == ("ok", None), row
            assert words(scan.ocr_text)[:40] in words(row["text"]) and row["text_chars"] > 0
            assert words(scan.ocr_text)[:40] in words(comments[scan.comment_id]["text"])
        assert not [k for k, r in files.items() if r["state"] == "ocr_needed"]
        for (key, _name), row in files.items():
            if row["state"] == "ok":  # every read file's text is in its comment's text, in full
                assert row["text"] and row["text"] in comments[key]["text"], (key, _name)
            else:
                assert row["text"] is None, (key, _name, row["state"])
        # text_chars is the length of the text beside it (page breaks, parts joined), in both
        # tables; empty only where no text was extracted at all.
        for row in [*comments.values(), *files.values()]:
            expected = None if row["text_chars"] is None and row["text"] is None else len(row["text"] or "")
            assert row["text_chars"] == expected, (row["comment_id"], row.get("filename"))
        assert any(r["text"] and "\f" in r["text"] for r in comments.values())
        texts = [r["text"] for r in comments.values() if r["text"]]
        assert len(texts) == len(comments)
        assert not [t for t in texts if "<!--" in t]
        assert any("\n\f\n" in t for t in texts)  # a file of pages keeps its breaks
        for key, row in comments.items():
            if row["body"] and row["body"].strip() and not row["body"].startswith("See attached"):
                assert words(row["text"]).startswith(words(row["body"])[:30]), key

        # Campaign id, size and submissions: as the campaign stage grouped them.
        members = {m.item: m.campaign for m in CampaignMember.select()}
        assert {k: r["campaign_id"] for k, r in comments.items() if r["campaign_id"]} == members
        # in none: the comments too short to compare ("See attached file(s)", its file unreadable)
        skipped = {r.item for r in ItemState.select().where((ItemState.stage == "campaigns")
                                                            & (ItemState.state == "skipped"))}
        assert {k for k, r in comments.items() if not r["campaign_id"]} == skipped
        assert all(comments[k]["campaign_size"] is None for k in skipped)
        for key, row in comments.items():
            if not row["campaign_id"]:
                continue
            group = [r for r in comments.values() if r["campaign_id"] == row["campaign_id"]]
            assert row["campaign_size"] == len(group), key
            assert row["campaign_submissions"] == sum(r["submissions"] for r in group), key
        assert any((r["campaign_size"] or 0) > 1 for r in comments.values())
        campaigns = {r["campaign_id"]: r for d in store.dockets
                     for r in pq.read_table(dest / d / "campaigns.parquet").to_pylist()}
        for campaign_id, row in campaigns.items():
            group = [r for r in comments.values() if r["campaign_id"] == campaign_id]
            assert (row["size"], row["submissions"]) == (len(group), sum(r["submissions"] for r in group))

        with counters.measure() as io:  # unchanged data: nothing read, nothing written
            assert cli.main(["export", str(dest), "--format", "parquet"]) == 0
        assert io.get(EXPORT_FILES_WRITTEN, 0) == 0 and io.get(COMBINED_READS, 0) == 0

        monkeypatch.setattr(export, "EXPORT_VERSION", "export-next")  # a new version: rewritten once
        with counters.measure() as io:
            assert cli.main(["export", str(dest), "--format", "parquet"]) == 0
        assert io[EXPORT_FILES_WRITTEN] == len(store.dockets) * 9  # 8 tables + export.json each
        with counters.measure() as io:
            assert cli.main(["export", str(dest), "--format", "parquet"]) == 0
        assert io.get(EXPORT_FILES_WRITTEN, 0) == 0
