"""Fidelity on real records: every real record in ../shared/realdata the stand-in serves (the
dockets with their docket record), run through the real chain (the stand-in server over the
real mirror, ``source=mirror``), is stored as it says; the records derived from other
sources (no docket record) are tests/sources/test_derived_records.py's.

The tables (tests/fixtures/real_records.py) are written by hand from the records and files
themselves (not from what docketeer stored): ids, titles, dates, agency, submitter,
organisation, attachments with their titles, bodies as text without markup, and what each
file's text says. Comment periods are Eastern calendar dates: a ``commentEndDate`` of
``…T03:59:59Z`` is the day before in Washington.
``test_no_real_file_is_left_without_an_expectation`` fails when a file appears in
``../shared/realdata`` that no table there (or in tests/fixtures/api_recordings.py) speaks for.
"""

from __future__ import annotations

import csv
import json
import shutil

from devtools.standin_server import StandinServer
from pipeline.extract.combined import combined_sections
from pipeline.extract.stage import read_combined
from pipeline.reading import reports
from pipeline.runtime import set_runtime
from pipeline.store.models import Attachment, Docket, Item, ItemState
from tests.fixtures.chain_runs import KEY, run_at
from tests.fixtures.real_records import (
    ACF_ABSTRACT,
    COMMENT_IDS,
    DECLARED,
    DERIVED_ITEMS,
    DOCKETS,
    FILES,
    ITEMS,
    KEPT,
    KEPT_COLUMNS,
    LABELS,
    NOT_STORED,
    UNLISTED,
    WAITING_FILES,
)
from tests.fixtures.state_fixtures import make_runtime, new_pg_database, real_mirror_runtime


def stored_item(item: Item) -> tuple:
    files = {a.filename: (a.title, a.format) for a in Attachment.select().where(Attachment.item == item.key)}
    return (item.kind, item.title, item.posted_date, item.received_date, item.withdrawn, item.submitter,
            item.organization, item.comment_on_document_id, item.body, files)


def test_every_real_record_is_stored_as_it_says(tmp_path, pg_server, realdata):
    with real_mirror_runtime(tmp_path, pg_server, realdata) as (runtime, ids):
        assert set(ids) == set(DOCKETS)  # a new real docket needs its rows in the table
        run_at(1)
        dockets = {d.id: (d.agency, d.title, d.comment_start_date, d.comment_end_date) for d in Docket.select()}
        assert dockets == DOCKETS
        assert {i.key: stored_item(i) for i in Item.select()} == ITEMS
        assert {i.key: tuple(getattr(i, c) for c in KEPT_COLUMNS) for i in Item.select()} == KEPT
        assert {(a.item, a.filename): (a.ordinal, a.declared_size, a.source_url) for a in Attachment.select()} == DECLARED
        counts = {i.key: reports.attachment_count(i, list(Attachment.select().where(Attachment.item == i.key)))
                  for i in Item.select()}
        assert {key for key, n in counts.items() if n is None} == UNLISTED  # unknown, not zero
        html = Item.get_by_id("USTR-2015-0010-0004").body_html
        assert html.startswith("See attached file(s)<br/><br/>Notice")  # the original is kept
        assert "&#39;" in Item.get_by_id("USTR-2015-0010-0003").body_html
        assert_combined_is_text_and_labelled(runtime)
        assert_files_read_as_they_say(runtime)
        assert_exported_as_the_records_say(runtime, tmp_path / "export")
        assert_titles_and_withdrawals_are_searched(runtime)


def assert_exported_as_the_records_say(runtime, dest) -> None:
    """Every exported field of every real comment and of each of its files is what the
    tables above (written from the records) say."""
    import pyarrow.parquet as pq

    from pipeline.ops.export import export

    export(runtime, dest, formats=("parquet",))
    comments = {key: row for key, row in ITEMS.items() if row[0] == "comment"}
    exported, files = {}, {}
    for docket in DOCKETS:
        for row in pq.read_table(dest / docket / "comments.parquet").to_pylist():
            exported[row["comment_id"]] = row
        for row in pq.read_table(dest / docket / "attachments.parquet").to_pylist():
            files[(row["comment_id"], row["filename"])] = row
    assert exported.keys() == comments.keys()
    for key, (_kind, title, posted, received, withdrawn, submitter, organisation, on, body, attached) \
            in comments.items():
        row = exported[key]
        assert (row["title"], row["posted_date"], row["received_date"], row["withdrawn"], row["submitter"],
                row["organization"], row["comment_on_document_id"], row["body"]) == (
            title, posted, received, withdrawn, submitter, organisation, on, body), key
        assert tuple(row[c] for c in KEPT_COLUMNS) == KEPT[key], key
        assert (row["docket_id"], row["object_id"], row["last_modified"]) == (
            key.rsplit("-", 1)[0], *COMMENT_IDS[key]), key
        assert row["submissions"] == 1 + (KEPT[key][0] or 0)
        assert row["attachment_count"] == (None if key in UNLISTED else len(attached)), key
    assert files.keys() == {k for k in DECLARED if k[0] in comments}
    for (key, name), row in files.items():
        assert (row["title"], row["format"]) == ITEMS[key][9][name], (key, name)
        assert (row["ordinal"], row["declared_size"], row["url"]) == DECLARED[(key, name)], (key, name)
        waiting = WAITING_FILES.get((key, name))
        assert row["state"] == ("waiting" if waiting == "missing" else FILES[(key, name)][0]), (key, name)
        assert (row["sha256"] is None) == (waiting is not None), (key, name)
        if row["state"] == "ok":  # its text, page by page as form feeds, within its comment's text
            _state, pages, opening = FILES[(key, name)]
            assert " ".join(row["text"].split()).startswith(opening), (key, name, row["text"][:200])
            assert row["text"].count("\n\f\n") == pages - 1 and "<!--" not in row["text"], (key, name)
            assert row["text"] in exported[key]["text"], (key, name)
    assert not [key for key, row in exported.items() if "<!--" in (row["text"] or "")]


def assert_titles_and_withdrawals_are_searched(runtime) -> None:
    """Each item is found by words of its title alone, also one whose body never says them
    (a body that says "see attached"); a withdrawn document is marked in ``search --json``."""
    from pipeline.index.search import search
    from pipeline.index.search_results import hit_records, search_document
    from pipeline.index.stage import embedder_from

    embedder = embedder_from(runtime.settings)
    # USTR-2015-0010-0002 says "See attached." and has no file: its title alone names it.
    hits = search(runtime.index_db(), embedder, "US China Business Council", k=20, mode="text")
    assert "USTR-2015-0010-0002" in {hit.item_key for hit in hits}
    hits = search(runtime.index_db(), embedder, "China Public Hearing Agenda", k=20)
    results = search_document("China Public Hearing Agenda", 20, None, None, hit_records(hits))["results"]
    withdrawn = {r["item_id"]: r["withdrawn"] for r in results}
    assert withdrawn["USTR-2015-0010-0015"] is True and withdrawn["USTR-2015-0010-0016"] is False


def assert_files_read_as_they_say(runtime) -> None:
    """Every file stored was read to its text; every file the mirror lacks waits, named."""
    rows = {r.item: r for r in ItemState.select().where(ItemState.stage == "extract.file")}
    assert set(rows) == {f"{item}/{name}" for item, name in FILES}
    for (item, name), (state, pages, opening) in FILES.items():
        row = rows[f"{item}/{name}"]
        assert (row.state, row.detail.split()[1]) == (state, f"pages={pages}"), (item, name)
        _, body = read_combined(runtime.blobs, item.rsplit("-", 1)[0], item)
        section = dict(combined_sections(body))[name]
        # Page by page, as a hit names its page: the first page's marker, then its words.
        assert " ".join(section.split()).startswith(f"<!-- page 1 --> {opening}"), (item, name, section[:200])
        assert section.count("<!-- page ") == pages
    waiting = {tuple(r.item.split("/")): r.state for r in ItemState.select().where(
        ItemState.stage == "backfill.file", ItemState.state != "ok")}
    assert waiting == WAITING_FILES
    # Each waiting file has its row from the record, without bytes; no other row lacks them.
    assert {(a.item, a.filename) for a in Attachment.select().where(Attachment.sha256.is_null())} == set(WAITING_FILES)


def assert_combined_is_text_and_labelled(runtime) -> None:
    frontmatter, body = read_combined(runtime.blobs, "USTR-2015-0010", "USTR-2015-0010-0004")
    assert frontmatter["comment_id"] == "USTR-2015-0010-0004"
    assert body.startswith("## Inline comment\n\nSee attached file(s)\n\nNotice of intent to testify:")
    assert "<br" not in body and "&#39;" not in body
    frontmatter, body = read_combined(runtime.blobs, "USTR-2015-0010", "USTR-2015-0010-0016")
    assert frontmatter["document_id"] == "USTR-2015-0010-0016" and "comment_id" not in frontmatter
    assert body.startswith("## Document\n") and "Inline comment" not in body
    assert "Public Hearing before the Trade" in body  # from the PDF beside the .doc
    frontmatter, body = read_combined(runtime.blobs, "ACF-2025-0038", "ACF-2025-0038-0001")
    assert body.startswith(f"## Document\n\n{ACF_ABSTRACT.strip()}\n\n## content.pdf\n")  # its abstract


def test_variant_shapes_of_the_real_records_give_the_same_rows_or_that_items_failure(
        tmp_path, pg_server, realdata):
    """USTR with fields removed or mistyped, as older or broken responses have them."""
    mirror = tmp_path / "mirror"
    shutil.copytree(realdata / "mirror/raw-data/USTR", mirror / "raw-data/USTR")
    text = mirror / "raw-data/USTR/USTR-2015-0010/text-USTR-2015-0010"
    edit(text / "comments/USTR-2015-0010-0002.json", receiveDate="12345")  # not a date: its failure
    edit(text / "comments/USTR-2015-0010-0005.json", withdrawn=None, organization=None)  # absent
    edit(text / "documents/USTR-2015-0010-0015.json", objectId=None)  # an older document record
    with StandinServer(mirror, api_keys=(KEY,)) as server:
        runtime = make_runtime(tmp_path, index_url=new_pg_database(pg_server), api_base=server.api_base,
                               api_key=KEY, discover="list", dockets="USTR-2015-0010", source="mirror",
                               mirror_url=str(mirror), extract_workers=1, ocr="false", http_attempts=1)
        previous = set_runtime(runtime)
        try:
            run_at(1)
            backfill = {s.item: s for s in ItemState.select().where(ItemState.stage == "backfill")}
            assert backfill["USTR-2015-0010-0002"].state == "failed"
            assert "receiveDate" in backfill["USTR-2015-0010-0002"].reason
            assert backfill["USTR-2015-0010-0002"].detail == "permanent"
            assert Item.get_by_id("USTR-2015-0010-0002").received_date is None  # never stored as text
            assert {k for k, s in backfill.items() if s.state != "ok"} == {"USTR-2015-0010-0002"}
            stored = {i.key: stored_item(i) for i in Item.select()}
            expected = {k: v for k, v in ITEMS.items() if k.startswith("USTR") and k != "USTR-2015-0010-0002"}
            expected["USTR-2015-0010-0005"] = (*expected["USTR-2015-0010-0005"][:6], None,
                                               *expected["USTR-2015-0010-0005"][7:])
            assert {k: v for k, v in stored.items() if k != "USTR-2015-0010-0002"} == expected
            assert Docket.get_by_id("USTR-2015-0010").comment_end_date == "2015-09-23"
        finally:
            set_runtime(previous)
            runtime.close()


def edit(path, **attributes) -> None:
    """Set (or, with None, remove) attributes of a record file in place."""
    body = json.loads(path.read_text())
    for name, value in attributes.items():
        if value is None:
            body["data"]["attributes"].pop(name, None)
        else:
            body["data"]["attributes"][name] = value
    path.write_text(json.dumps(body))


def test_no_real_file_is_left_without_an_expectation(realdata):
    """Every file in ../shared/realdata is spoken for by a table: a docket or record here, a
    stored or waiting file, a file not stored (and why), or a recorded API exchange in
    ``test_fidelity_recordings.RECORDED``. A new real file fails here until it gets one."""
    from tests.fixtures.api_recordings import RECORDED, exchanges

    mirror = realdata / "mirror" / "raw-data"
    with (realdata / "labels/campaigns-cdo.csv").open(newline="", encoding="utf-8") as handle:
        labelled = {row["id"] for row in csv.DictReader(handle)}  # test_derived_records' table
    left_out = []
    for path in sorted(p for p in realdata.rglob("*") if p.is_file()):
        relative = path.relative_to(realdata).as_posix()
        if relative == "README.md" or relative in LABELS:
            continue
        if relative.startswith("api-recordings/"):
            left_out += [f"{path.name}: {uri}" for uri in exchanges(path) if (path.name, uri) not in RECORDED]
            continue
        within = path.relative_to(mirror).as_posix() if path.is_relative_to(mirror) else relative
        if not mirror_file_expected(within, labelled):
            left_out.append(relative)
    assert left_out == []


def mirror_file_expected(within: str, labelled: set[str]) -> bool:
    """Is this mirror file (``AGENCY/DOCKET/...``) in one of the tables above, or in
    ``labelled`` (the ids of labels/campaigns-cdo.csv, the CDO comments' table)?"""
    name = within.rsplit("/", 1)[-1]
    if within in NOT_STORED:
        return True
    if "/text-" in within and name.endswith(".json"):
        return name.removesuffix(".json") in DOCKETS.keys() | ITEMS.keys() | DERIVED_ITEMS.keys() | labelled
    if "/binary-" in within:
        item, _, rest = name.partition("_")  # <id>_attachment_<n>.<ext> or <id>_content.<ext>
        return (item, rest) in FILES or rest in DERIVED_ITEMS.get(item, ({},))[-1]
    return False


def relaid(source, mirror, old: str, new: str) -> None:
    """A copy of a real docket folder under another docket id (names and JSON text)."""
    agency = old.split("-")[0]
    for path in sorted((source / agency / old).rglob("*")):
        if path.is_file():
            target = mirror / "raw-data" / agency / new / path.relative_to(source / agency / old).as_posix().replace(old, new)
            target.parent.mkdir(parents=True, exist_ok=True)
            data = path.read_bytes()
            target.write_bytes(data.replace(old.encode(), new.encode()) if path.suffix == ".json" else data)


def test_an_frdoc_docket_and_a_comment_without_included_give_the_same_records(tmp_path, pg_server, realdata):
    """ACF-2025-0038 re-laid as ``ACF_FRDOC_0001`` (Federal Register dockets are named so): its
    agency is ACF from the first row on, and the mirror is read in ACF's folder; its comment's
    JSON without ``included`` (as fetched without include=attachments) gives the same record,
    its file found in the binary folder, without the title only ``included`` gives."""
    old, new = "ACF-2025-0038", "ACF_FRDOC_0001"
    mirror = tmp_path / "mirror"
    relaid(realdata / "mirror/raw-data", mirror, old, new)
    comment = mirror / f"raw-data/ACF/{new}/text-{new}/comments/{new}-0004.json"
    body = json.loads(comment.read_text())
    del body["included"]
    comment.write_text(json.dumps(body))
    runtime = make_runtime(tmp_path, index_url=new_pg_database(pg_server), discover="list", dockets=new,
                           source="mirror", list_source="mirror", mirror_url=str(mirror), extract_workers=1,
                           ocr="false", embedder="hashing")
    previous = set_runtime(runtime)
    try:
        runtime.state  # noqa: B018
        from pipeline.store import dockets

        dockets.ensure_dockets([new], "list")
        assert Docket.get_by_id(new).agency == "ACF"  # before any resolve
        assert run_at(1)
        docket = Docket.get_by_id(new)
        assert (docket.agency, docket.title, docket.comment_start_date, docket.comment_end_date) == DOCKETS[old]
        expected = {key.replace(old, new): tuple(v.replace(old, new) if isinstance(v, str) else v for v in row)
                    for key, row in ITEMS.items() if key.startswith(old)}
        untitled = f"{new}-0004"
        expected[untitled] = (*expected[untitled][:9], {"attachment_1.pdf": (None, "pdf")})
        assert {i.key: stored_item(i) for i in Item.select()} == expected
        assert {s.item: s.state for s in ItemState.select().where(ItemState.stage == "extract")} == {
            key: "ok" for key in expected}
    finally:
        set_runtime(previous)
        runtime.close()
