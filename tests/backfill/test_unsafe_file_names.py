"""A declared file whose URL names no safe file is that file's failure, not the comment's:
the body and the other files are kept."""

from __future__ import annotations

from pipeline.backfill.sources import declared_files


def detail(*urls_per_attachment: list[str]) -> dict:
    included = [{"id": f"09000064000000{n:02d}", "type": "attachments",
                 "attributes": {"docOrder": n, "title": f"file {n}", "fileFormats": [
                     {"fileUrl": url, "format": url.rsplit(".", 1)[-1] if "." in url[-5:] else "pdf", "size": 10}
                     for url in urls]}}
                for n, urls in enumerate(urls_per_attachment, start=1)]
    return {"data": {"id": "CMS-2026-0200-0010", "type": "comments",
                     "attributes": {"comment": "The body is kept."}}, "included": included}


def test_an_unsafe_name_is_one_refused_file_under_a_safe_name_of_its_own():
    body = detail(["https://downloads.regulations.gov/CMS-2026-0200-0010/attachment_1.pdf"],
                  ["https://downloads.regulations.gov/CMS-2026-0200-0010/.."],
                  ["https://downloads.regulations.gov/CMS-2026-0200-0010/attachment_3.docx"])
    files = declared_files(body, ["pdf", "docx"])
    assert [[ref.filename for ref in candidates] for candidates in files] == [
        ["attachment_1.pdf"], ["unsafe_name_2"], ["attachment_3.docx"]]
    refused = files[1][0]
    assert refused.refused and "unsafe filename" in refused.refused and refused.url is None
    assert not files[0][0].refused and not files[2][0].refused


def test_a_safe_format_of_the_same_file_is_taken_instead():
    body = detail(["https://downloads.regulations.gov/CMS-2026-0200-0010/..",
                   "https://downloads.regulations.gov/CMS-2026-0200-0010/attachment_1.docx"])
    (candidates,) = declared_files(body, ["pdf", "docx"])
    assert [ref.filename for ref in candidates] == ["attachment_1.docx"]
