"""The mirror source over a local folder and over a real S3 protocol (moto) must agree."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from botocore import UNSIGNED

from pipeline.counters import S3_GET, S3_LIST, counters
from pipeline.errors import BadResponse, ConfigError, InvalidIdentifier
from pipeline.sources.mirror import (
    DocketRef,
    ListedObject,
    LocalMirror,
    MirrorAttachment,
    S3Mirror,
    Tombstone,
    item_of,
    listing_of,
    open_mirror,
    parse_binary_name,
    stored_filename,
)
from tests.fixtures import s3_fixtures

# pytest finds fixtures among a module's attributes; these make the moto ones visible here.

REAL_DOCKET = "ACF-2025-0038"
REAL_PREFIX = f"raw-data/ACF/{REAL_DOCKET}/"
REAL_TEXT = f"{REAL_PREFIX}text-{REAL_DOCKET}/"
REAL_BINARY = f"{REAL_PREFIX}binary-{REAL_DOCKET}/"


@pytest.fixture
def real_mirror_root(realdata) -> Path:
    return realdata / "mirror"


@pytest.fixture
def s3_real_mirror(real_mirror_root, s3_client, s3_bucket) -> S3Mirror:
    """The realdata docket uploaded into moto, under a prefix as a private copy would be."""
    s3_fixtures.upload_tree(s3_client, s3_bucket, real_mirror_root, prefix="copy/")
    return S3Mirror(s3_bucket, "copy", client=s3_client)


# -- the real docket ----------------------------------------------------------------------


def test_local_listing_of_the_real_docket(real_mirror_root):
    listing = LocalMirror(real_mirror_root).docket_listing(REAL_DOCKET, "ACF")
    assert listing.docket_key == f"{REAL_TEXT}docket/{REAL_DOCKET}.json"
    assert listing.documents == {
        "ACF-2025-0038-0001": f"{REAL_TEXT}documents/ACF-2025-0038-0001.json"
    }
    assert listing.comments == {
        "ACF-2025-0038-0004": f"{REAL_TEXT}comments/ACF-2025-0038-0004.json"
    }
    pdf_size = (
        (
            real_mirror_root
            / REAL_BINARY
            / "comments_attachments/ACF-2025-0038-0004_attachment_1.pdf"
        )
        .stat()
        .st_size
    )
    assert listing.attachments["ACF-2025-0038-0004"] == [
        MirrorAttachment(
            "ACF-2025-0038-0004",
            "comment",
            1,
            "pdf",
            f"{REAL_BINARY}comments_attachments/ACF-2025-0038-0004_attachment_1.pdf",
            pdf_size,
        )
    ]
    [content] = listing.attachments["ACF-2025-0038-0001"]
    assert (content.kind, content.n, content.stored_name) == ("document", None, "content.pdf")
    assert listing.attachments["ACF-2025-0038-0004"][0].stored_name == "attachment_1.pdf"
    assert (listing.tombstones, listing.rejected, listing.ignored) == ([], [], [])


def test_the_streamed_walk_finds_what_the_listing_finds(real_mirror_root):
    """``docket_entries`` (no key order, one directory entry at a time) and the ordered walk
    ``docket_listing`` files agree object for object, sizes and versions included."""
    mirror = LocalMirror(real_mirror_root)
    for docket_id, agency in ((REAL_DOCKET, "ACF"), ("DOS-2022-0004", "DOS"), ("USTR-2015-0010", "USTR")):
        listing = mirror.docket_listing(docket_id, agency)
        streamed = sorted(mirror.docket_entries(docket_id, agency), key=lambda entry: entry.key)
        assert listing.objects and streamed == list(listing.objects.values())


def test_each_items_objects_filed_alone_give_it_what_the_whole_listing_gives(real_mirror_root, tmp_path):
    """``item_of`` groups a docket's objects by item; ``listing_of`` over one item's group
    files for it exactly what the docket's whole listing files for it (backfill's pages)."""
    real = LocalMirror(real_mirror_root)
    synthetic_root = write_tree(tmp_path / "synthetic", SYNTHETIC_FILES)
    for mirror, docket_id, agency in ((real, REAL_DOCKET, "ACF"), (real, "DOS-2022-0004", "DOS"),
                                      (real, "USTR-2015-0010", "USTR"),
                                      (LocalMirror(synthetic_root), DOCKET, "EPA")):
        whole = mirror.docket_listing(docket_id, agency)
        groups: dict[str, list] = {}
        for entry in whole.objects.values():
            groups.setdefault(item_of(docket_id, agency, entry.key), []).append(entry)
        owned = set(whole.comments) | set(whole.documents) | set(whole.attachments) | whole.gone_items() \
            | {item for item, _stem in whole.gone_attachments()}
        assert set(groups) - {""} == owned
        for item_id, entries in groups.items():
            if not item_id:
                continue
            alone = listing_of(docket_id, agency, entries)
            assert alone.comments == {k: v for k, v in whole.comments.items() if k == item_id}
            assert alone.documents == {k: v for k, v in whole.documents.items() if k == item_id}
            assert alone.attachments == {k: v for k, v in whole.attachments.items() if k == item_id}
            assert alone.gone_items() == whole.gone_items() & {item_id}
            assert alone.gone_attachments() == {g for g in whole.gone_attachments() if g[0] == item_id}
            assert not alone.rejected and not alone.docket_key


def test_agency_defaults_to_the_docket_id_prefix(real_mirror_root):
    mirror = LocalMirror(real_mirror_root)
    assert mirror.docket_listing(REAL_DOCKET) == mirror.docket_listing(REAL_DOCKET, "ACF")


def test_s3_listing_equals_local_listing(real_mirror_root, s3_real_mirror):
    local = LocalMirror(real_mirror_root).docket_listing(REAL_DOCKET, "ACF")
    with counters.measure() as delta:
        remote = s3_real_mirror.docket_listing(REAL_DOCKET, "ACF")
    assert remote == local
    assert delta.get(S3_LIST) == 1  # five objects: one LIST page, and no GET at all
    assert delta.get(S3_GET, 0) == 0


def test_s3_listing_pages_cost_one_list_each(real_mirror_root, s3_real_mirror):
    s3_real_mirror.page_size = 2
    with counters.measure() as delta:
        listing = s3_real_mirror.docket_listing(REAL_DOCKET)
    assert delta[S3_LIST] == 3  # 5 objects in pages of 2
    assert listing == LocalMirror(real_mirror_root).docket_listing(REAL_DOCKET)


def test_reading_json_and_binaries_agree(real_mirror_root, s3_real_mirror):
    local = LocalMirror(real_mirror_root)
    listing = local.docket_listing(REAL_DOCKET)
    comment_key = listing.comments["ACF-2025-0038-0004"]
    [pdf] = listing.attachments["ACF-2025-0038-0004"]
    with counters.measure() as delta:
        remote_json = s3_real_mirror.read_json(comment_key)
        with s3_real_mirror.open_binary(pdf.key) as stream:
            remote_pdf = stream.read()
    assert delta[S3_GET] == 2
    assert remote_json == local.read_json(comment_key)
    assert remote_json["data"]["id"] == "ACF-2025-0038-0004"
    with local.open_binary(pdf.key) as stream:
        assert stream.read() == remote_pdf
    assert remote_pdf.startswith(b"%PDF")
    assert s3_real_mirror.binary_size(pdf.key) == local.binary_size(pdf.key) == pdf.size
    assert s3_real_mirror.binary_size(pdf.key + ".nope") is None
    assert local.binary_size(pdf.key + ".nope") is None


def test_list_dockets(real_mirror_root, s3_real_mirror):
    # What the folder holds, read independently of the mirror code (it grows over time).
    agencies = sorted(p.name for p in (real_mirror_root / "raw-data").iterdir() if p.is_dir())
    expected = [DocketRef(agency, p.name) for agency in agencies
                for p in sorted((real_mirror_root / "raw-data" / agency).iterdir()) if p.is_dir()]
    assert DocketRef("ACF", REAL_DOCKET) in expected and len(agencies) >= 1
    assert LocalMirror(real_mirror_root).list_dockets() == expected
    with counters.measure() as delta:
        assert s3_real_mirror.list_dockets() == expected
    assert delta[S3_LIST] == 1 + len(agencies)  # raw-data/ for agencies, then one per agency


def test_unsigned_access_through_open_mirror(real_mirror_root, s3_client, s3_bucket, s3_endpoint):
    s3_fixtures.upload_tree(s3_client, s3_bucket, real_mirror_root)
    mirror = open_mirror(f"s3://{s3_bucket}", s3_endpoint_url=s3_endpoint, unsigned=True)
    listing = mirror.docket_listing(REAL_DOCKET)
    assert listing == LocalMirror(real_mirror_root).docket_listing(REAL_DOCKET)


# -- a synthetic docket with the awkward cases --------------------------------------------

DOCKET = "EPA-HQ-OAR-2021-0317"
PREFIX = f"raw-data/EPA/{DOCKET}/"
TEXT = f"{PREFIX}text-{DOCKET}/"
BINARY = f"{PREFIX}binary-{DOCKET}/"

SYNTHETIC_FILES = {
    f"{TEXT}dockets/{DOCKET}.json": b'{"data": {"id": "%s"}}' % DOCKET.encode(),
    f"{TEXT}documents/{DOCKET}-0001.json": b"{}",
    f"{TEXT}documents/{DOCKET}-0001_content.htm": b"<html></html>",
    f"{TEXT}documents/{DOCKET}-0002_UNAVAILABLE": b"",
    f"{TEXT}comments/{DOCKET}-0010.json": b"{}",
    f"{TEXT}comments/{DOCKET}-0011.json": b"not json",
    f"{TEXT}comments/{DOCKET}-0012_UNAVAILABLE": b"",
    f"{TEXT}comments/{DOCKET}-0013.json_UNAVAILABLE": b"",
    f"{TEXT}comments/-bad-leading-dash.json": b"{}",
    f"{TEXT}comments/bad name.json": b"{}",
    f"{TEXT}comments_extracted_text/pdfminer/{DOCKET}-0010_attachment_1_extracted.txt": b"t",
    f"{BINARY}comments_attachments/{DOCKET}-0010_attachment_2.DOCX": b"dd",
    f"{BINARY}comments_attachments/{DOCKET}-0010_attachment_1.pdf": b"%PDF",
    f"{BINARY}comments_attachments/{DOCKET}-0010_attachment_3_UNAVAILABLE": b"",
    f"{BINARY}comments_attachments/{DOCKET}-0010_attachment_x.pdf": b"?",
    f"{BINARY}comments_attachments/{DOCKET}-0010_attachment_4.tar.gz": b"?",
    f"{BINARY}documents_attachments/{DOCKET}-0001_content.pdf": b"%PDF-doc",
    f"{BINARY}documents_attachments/{DOCKET}-0001_content_2.docx": b"docx",
    f"{BINARY}documents_attachments/{DOCKET}-0002_content_UNAVAILABLE": b"",
    f"{PREFIX}text-OTHER-2020-0001/comments/OTHER-2020-0001-0001.json": b"{}",
}


def write_tree(root: Path, files: dict[str, bytes]) -> Path:
    for key, data in files.items():
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def put_tree(client, bucket: str, files: dict[str, bytes]) -> None:
    for key, data in files.items():
        client.put_object(Bucket=bucket, Key=key, Body=data)


@pytest.fixture(params=["local", "s3"])
def synthetic_mirror(request, tmp_path):
    if request.param == "local":
        return LocalMirror(write_tree(tmp_path / "mirror", SYNTHETIC_FILES))
    client = request.getfixturevalue("s3_client")
    bucket = request.getfixturevalue("s3_bucket")
    put_tree(client, bucket, SYNTHETIC_FILES)
    return S3Mirror(bucket, client=client)


def test_synthetic_docket_listing(synthetic_mirror):
    listing = synthetic_mirror.docket_listing(DOCKET, "EPA")
    assert listing.docket_key == f"{TEXT}dockets/{DOCKET}.json"  # plural folder accepted
    assert listing.documents == {f"{DOCKET}-0001": f"{TEXT}documents/{DOCKET}-0001.json"}
    assert sorted(listing.comments) == [f"{DOCKET}-0010", f"{DOCKET}-0011"]
    assert [a.stored_name for a in listing.attachments[f"{DOCKET}-0010"]] == [
        "attachment_1.pdf",
        "attachment_2.docx",
    ]
    assert [a.stored_name for a in listing.attachments[f"{DOCKET}-0001"]] == [
        "content.htm",
        "content.pdf",
        "content_2.docx",
    ]
    assert listing.ignored == [
        f"{TEXT}comments_extracted_text/pdfminer/{DOCKET}-0010_attachment_1_extracted.txt",
        f"{PREFIX}text-OTHER-2020-0001/comments/OTHER-2020-0001-0001.json",
    ]


def test_synthetic_tombstones(synthetic_mirror):
    listing = synthetic_mirror.docket_listing(DOCKET, "EPA")
    assert sorted(listing.tombstones, key=lambda t: t.key) == [
        Tombstone(
            "attachment",
            f"{DOCKET}-0010",
            f"{BINARY}comments_attachments/{DOCKET}-0010_attachment_3_UNAVAILABLE",
            "attachment_3",
        ),
        Tombstone(
            "attachment",
            f"{DOCKET}-0002",
            f"{BINARY}documents_attachments/{DOCKET}-0002_content_UNAVAILABLE",
            "content",
        ),
        Tombstone("comment", f"{DOCKET}-0012", f"{TEXT}comments/{DOCKET}-0012_UNAVAILABLE"),
        Tombstone("comment", f"{DOCKET}-0013", f"{TEXT}comments/{DOCKET}-0013.json_UNAVAILABLE"),
        Tombstone("document", f"{DOCKET}-0002", f"{TEXT}documents/{DOCKET}-0002_UNAVAILABLE"),
    ]
    assert listing.gone_items() == {f"{DOCKET}-0002", f"{DOCKET}-0012", f"{DOCKET}-0013"}
    assert listing.gone_attachments() == {
        (f"{DOCKET}-0010", "attachment_3"),
        (f"{DOCKET}-0002", "content"),
    }


def test_synthetic_unsafe_names_are_rejected_not_used(synthetic_mirror):
    listing = synthetic_mirror.docket_listing(DOCKET, "EPA")
    rejected = {r.key: r.reason for r in listing.rejected}
    assert sorted(rejected) == sorted(
        [
            f"{TEXT}comments/-bad-leading-dash.json",
            f"{TEXT}comments/bad name.json",
            f"{BINARY}comments_attachments/{DOCKET}-0010_attachment_x.pdf",
            f"{BINARY}comments_attachments/{DOCKET}-0010_attachment_4.tar.gz",
        ]
    )
    assert all(reason for reason in rejected.values())
    used = set(listing.comments.values()) | {
        a.key for files in listing.attachments.values() for a in files
    }
    assert used.isdisjoint(rejected)


def test_local_and_s3_synthetic_listings_agree(tmp_path, s3_client, s3_bucket):
    local = LocalMirror(write_tree(tmp_path / "m", SYNTHETIC_FILES)).docket_listing(DOCKET)
    put_tree(s3_client, s3_bucket, SYNTHETIC_FILES)
    assert S3Mirror(s3_bucket, client=s3_client).docket_listing(DOCKET) == local


def test_keys_only_s3_can_hold_are_rejected(s3_client, s3_bucket):
    """S3 keys are arbitrary strings: a '..' or backslash key must never become a path."""
    odd = {
        f"{TEXT}comments/..hidden.json": b"{}",
        f"{TEXT}comments/a\\b.json": b"{}",
        f"{TEXT}comments//{DOCKET}-0099.json": b"{}",
    }
    put_tree(s3_client, s3_bucket, odd)
    listing = S3Mirror(s3_bucket, client=s3_client).docket_listing(DOCKET)
    assert sorted(r.key for r in listing.rejected) == sorted(odd)
    assert listing.comments == {}


def test_unsafe_folder_names_are_skipped_in_list_dockets(s3_client, s3_bucket):
    put_tree(
        s3_client,
        s3_bucket,
        {
            "raw-data/EPA/EPA-2020-0001/text-EPA-2020-0001/comments/EPA-2020-0001-0001.json": b"{}",
            "raw-data/EPA/bad docket/x.json": b"{}",
            "raw-data/-X/ok-1/x.json": b"{}",
        },
    )
    assert S3Mirror(s3_bucket, client=s3_client).list_dockets() == [
        DocketRef("EPA", "EPA-2020-0001")
    ]


def test_bad_ids_and_keys_raise(synthetic_mirror):
    for docket, agency in [("../x", None), ("EPA-1", "../"), ("", None)]:
        with pytest.raises(InvalidIdentifier):
            synthetic_mirror.docket_listing(docket, agency)
    for key in ["../etc/passwd", "/abs", "a\\b", "a\x00b"]:
        with pytest.raises(InvalidIdentifier):
            synthetic_mirror.read_json(key)
        with pytest.raises(InvalidIdentifier):
            synthetic_mirror.open_binary(key)


def test_read_json_of_a_bad_file(synthetic_mirror):
    with pytest.raises(BadResponse):
        synthetic_mirror.read_json(f"{TEXT}comments/{DOCKET}-0011.json")
    with pytest.raises(FileNotFoundError):
        synthetic_mirror.read_json(f"{TEXT}comments/{DOCKET}-9999.json")
    assert synthetic_mirror.read_json(f"{TEXT}dockets/{DOCKET}.json") == json.loads(
        SYNTHETIC_FILES[f"{TEXT}dockets/{DOCKET}.json"]
    )


def test_missing_docket_gives_an_empty_listing(synthetic_mirror):
    listing = synthetic_mirror.docket_listing("NOPE-2020-0001")
    assert listing.prefix == "raw-data/NOPE/NOPE-2020-0001/"
    assert (listing.docket_key, listing.comments, listing.attachments) == (None, {}, {})


# -- names --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mirror_name, stored",
    [
        ("ACF-2025-0038-0004_attachment_1.pdf", "attachment_1.pdf"),
        ("ACF-2025-0038-0004_attachment_12.DOCX", "attachment_12.docx"),
        ("ACF-2025-0038-0001_content.pdf", "content.pdf"),
        ("ACF-2025-0038-0001_content_2.htm", "content_2.htm"),
        ("ACF-2025-0038-0004_attachment_3", "attachment_3"),
    ],
)
def test_stored_filename(mirror_name, stored):
    assert stored_filename(mirror_name) == stored


@pytest.mark.parametrize(
    "mirror_name",
    [
        "attachment_1.pdf",
        "../x_attachment_1.pdf",
        "X_attachment_a.pdf",
        "X_content.tar.gz",
        "X.pdf",
        "_attachment_1.pdf",
    ],
)
def test_unrecognised_binary_names(mirror_name):
    with pytest.raises(InvalidIdentifier):
        stored_filename(mirror_name)


def test_parse_binary_name_respects_the_folder_kind():
    assert parse_binary_name("D-1_content.pdf", "document").item_id == "D-1"
    with pytest.raises(InvalidIdentifier):
        parse_binary_name("D-1_content.pdf", "comment")


# -- opening from a URL -------------------------------------------------------------------


def test_open_mirror_urls(tmp_path, s3_credentials_env):
    assert isinstance(open_mirror(str(tmp_path)), LocalMirror)
    assert open_mirror(f"file://{tmp_path}").root == tmp_path.resolve()
    public = open_mirror("s3://mirrulations")
    assert isinstance(public, S3Mirror) and public.prefix == ""
    assert public.client.meta.config.signature_version is UNSIGNED  # the public bucket
    private = open_mirror("s3://my-copy/mirrors/regs/")
    assert private.prefix == "mirrors/regs/"
    # auto: every bucket is read unsigned first (the first refusal signs: test_mirror_pool.py)
    assert private.client.meta.config.signature_version is UNSIGNED
    signed = open_mirror("s3://my-copy", unsigned=False)
    assert signed.client.meta.config.signature_version is not UNSIGNED  # boto3's credentials
    for bad in ["", "s3://", "http://example.org/x"]:
        with pytest.raises(ConfigError):
            open_mirror(bad)


def test_docket_tombstone(tmp_path):
    files = {f"{TEXT}docket/{DOCKET}_UNAVAILABLE": b""}
    listing = LocalMirror(write_tree(tmp_path / "m", files)).docket_listing(DOCKET)
    assert listing.docket_key is None
    assert listing.tombstones == [Tombstone("docket", DOCKET, f"{TEXT}docket/{DOCKET}_UNAVAILABLE")]


# -- re-downloaded records: ``<id>(N).json`` beside ``<id>.json`` ---------------------------


def _recopy(root: Path, comment_key: str, *copies: tuple[str, str]) -> None:
    """Beside a real comment record, copies of it named ``<id><suffix>.json`` with titles."""
    record = root / comment_key
    body = json.loads(record.read_text())
    for suffix, title in copies:
        body["data"]["attributes"]["title"] = title
        (record.parent / f"{record.stem}{suffix}.json").write_text(json.dumps(body))


@pytest.fixture(params=["local", "s3"])
def recopied_mirror(request, real_mirror_root, tmp_path):
    """The real docket with ``(1)`` and ``(2)`` copies of one comment and copies whose
    names the rule refuses."""
    root = tmp_path / "mirror"


    shutil.copytree(real_mirror_root, root)
    key = f"{REAL_TEXT}comments/{REAL_DOCKET}-0004.json"
    _recopy(root, key, ("(2)", "second"), ("(1)", "first"), ("(x)", "x"), ("(1)(2)", "two"),
            ("(-1)", "minus"), ("(01)", "zero-led"), ("(0)", "zero"), (" (3)", "spaced"))
    if request.param == "local":
        return LocalMirror(root)
    client, bucket = request.getfixturevalue("s3_client"), request.getfixturevalue("s3_bucket")
    s3_fixtures.upload_tree(client, bucket, root)
    return S3Mirror(bucket, client=client)


def test_the_highest_copy_of_a_record_is_the_record(recopied_mirror):
    listing = recopied_mirror.docket_listing(REAL_DOCKET, "ACF")
    comment = f"{REAL_DOCKET}-0004"
    folder = f"{REAL_TEXT}comments/"
    assert listing.comments[comment] == f"{folder}{comment}(2).json"
    assert recopied_mirror.read_json(listing.comments[comment])["data"]["attributes"]["title"] == "second"
    assert listing.superseded == {f"{folder}{comment}.json": comment, f"{folder}{comment}(1).json": comment}
    rejected = {r.key for r in listing.rejected}
    assert rejected == {f"{folder}{comment}{suffix}.json"
                        for suffix in ("(x)", "(1)(2)", "(-1)", "(01)", "(0)", " (3)")}
    # Every copy belongs to the item: filed alone, each item's objects give what the whole gives.
    owners = listing.owners()
    assert all(owners[key] == comment for key in listing.superseded)
    mine = [e for e in listing.objects.values() if item_of(REAL_DOCKET, "ACF", e.key) == comment]
    alone = listing_of(REAL_DOCKET, "ACF", mine)
    assert alone.comments == {comment: listing.comments[comment]}
    assert alone.superseded == listing.superseded


def test_copies_are_filed_the_same_in_any_order():
    keys = [f"{REAL_TEXT}comments/{REAL_DOCKET}-0004{suffix}.json" for suffix in ("(10)", "", "(9)", "(1)")]
    for order in (keys, keys[::-1], sorted(keys)):
        listing = listing_of(REAL_DOCKET, "ACF", [ListedObject(key, 1, None, "0") for key in order])
        assert listing.comments == {f"{REAL_DOCKET}-0004": keys[0]}
        assert set(listing.superseded) == set(keys[1:])


def test_a_newline_before_a_copy_number_is_refused():
    key = f"{REAL_TEXT}comments/{REAL_DOCKET}-0004\n(4).json"
    listing = listing_of(REAL_DOCKET, "ACF", [ListedObject(key, 1, None, "0")])
    assert [r.key for r in listing.rejected] == [key] and not listing.comments
