"""devtools.mirror_layout: the paths it writes are the real mirror's, and its writers."""

from __future__ import annotations

import json

from devtools import mirror_layout as layout

REAL_DOCKET = "ACF-2025-0038"


def test_paths_name_the_real_mirrors_files(realdata):
    root = realdata / "mirror"
    folders = layout.DocketFolders.new(root, "ACF", REAL_DOCKET)
    assert layout.DocketFolders.find(root, REAL_DOCKET) == folders
    for path in (folders.docket_file(), folders.document_file(f"{REAL_DOCKET}-0001"),
                 folders.document_content(f"{REAL_DOCKET}-0001"),
                 folders.comment_file(f"{REAL_DOCKET}-0004"),
                 folders.comment_attachment(f"{REAL_DOCKET}-0004", 1, "pdf")):
        assert path.is_file(), path
    assert set(layout.comment_files(root)) >= {f"{REAL_DOCKET}-0004"}


def test_tombstones_sit_beside_what_they_replace(tmp_path):
    folders = layout.DocketFolders.new(tmp_path, "EPA", "EPA-2026-0001")
    comment = "EPA-2026-0001-0002"
    assert folders.comment_tombstone(comment) == folders.comments / f"{comment}_UNAVAILABLE"
    assert folders.attachment_tombstone(comment, 2) == (
        folders.comment_attachments / f"{comment}_attachment_2_UNAVAILABLE")
    layout.write_tombstone(folders.comment_tombstone(comment))
    assert folders.comment_tombstone(comment).read_bytes() == b""


def test_new_files_are_compact_and_replaced_files_indented(tmp_path):
    folders = layout.DocketFolders.new(tmp_path, "EPA", "EPA-2026-0001")
    path = folders.comment_file("EPA-2026-0001-0002")
    layout.write_json(path, {"data": {"id": "EPA-2026-0001-0002"}})
    assert path.read_text() == '{"data": {"id": "EPA-2026-0001-0002"}}'
    layout.replace_json(path, {"data": {"id": "x"}})
    assert json.loads(path.read_text()) == {"data": {"id": "x"}} and "\n  " in path.read_text()
    assert [p.name for p in folders.comments.iterdir()] == [path.name]  # no temporary file left
