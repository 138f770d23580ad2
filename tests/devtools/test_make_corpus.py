"""The corpus generator: deterministic, shaped like the real mirror, honest manifest."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from devtools.corpus_topics import TOPIC_BY_SLUG, TOPICS
from devtools.make_corpus import REUSE_VARIANTS, Manifest, main, make_corpus, spread
from pipeline.extract import ExtractLimits, read_attachment

REAL_DOCKET = Path("mirror/raw-data/ACF/ACF-2025-0038")
ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
UTC_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
# Present in list responses and used for watermarks; the real detail file lacks it.
ADDED_FIELDS = {"lastModifiedDate"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, Manifest]:
    root = tmp_path_factory.mktemp("corpus")
    return root, make_corpus(root, dockets=3, comments_per_docket=[14, 12, 10])


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def normalised(text: str) -> str:
    return " ".join(text.split())


def test_same_arguments_same_bytes(corpus, tmp_path):
    root, _ = corpus
    again = make_corpus(tmp_path / "again", dockets=3, comments_per_docket=[14, 12, 10])
    assert tree_bytes(root) == tree_bytes(tmp_path / "again")
    assert again.to_json() == (root / "manifest.json").read_text()
    other = make_corpus(tmp_path / "other", dockets=1, comments_per_docket=14, seed=8)
    assert other.comments[0].attachments != again.comments[0].attachments or \
        other.comments[0].topic != again.comments[0].topic


def test_layout_matches_the_real_mirror(corpus, realdata):
    root, manifest = corpus
    real = realdata / REAL_DOCKET
    real_text = real / "text-ACF-2025-0038"
    for docket in manifest.dockets:
        base = root / "raw-data" / docket.agency / docket.id
        assert sorted(p.name for p in base.iterdir()) == sorted(p.name.replace("ACF-2025-0038", docket.id)
                                                                for p in real.iterdir())
        for folder in ("docket", "documents", "comments"):
            assert (base / f"text-{docket.id}" / folder).is_dir() and (real_text / folder).is_dir()
        for folder in ("comments_attachments", "documents_attachments"):
            assert (base / f"binary-{docket.id}" / folder).is_dir()
        assert (root / docket.path).name == f"{docket.id}.json"
        assert (root / docket.documents[0].content_path).name == f"{docket.id}-0001_content.pdf"


def test_json_field_sets_match_the_real_files(corpus, realdata):
    root, manifest = corpus
    real_text = realdata / REAL_DOCKET / "text-ACF-2025-0038"
    real_comment = load(real_text / "comments" / "ACF-2025-0038-0004.json")
    real_document = load(real_text / "documents" / "ACF-2025-0038-0001.json")
    real_docket = load(real_text / "docket" / "ACF-2025-0038.json")
    with_files = next(c for c in manifest.comments if c.attachments)
    comment = load(root / with_files.path)
    assert comment.keys() == real_comment.keys()
    assert comment["data"].keys() == real_comment["data"].keys()
    assert set(comment["data"]["attributes"]) == set(real_comment["data"]["attributes"]) | ADDED_FIELDS
    assert comment["included"][0].keys() == real_comment["included"][0].keys()
    assert comment["included"][0]["attributes"].keys() == real_comment["included"][0]["attributes"].keys()
    document = load(root / manifest.dockets[0].documents[0].path)
    assert set(document["data"]["attributes"]) == set(real_document["data"]["attributes"]) | ADDED_FIELDS
    docket = load(root / manifest.dockets[0].path)
    assert docket["data"]["attributes"].keys() == real_docket["data"]["attributes"].keys()


def test_comment_values_are_consistent(corpus):
    root, manifest = corpus
    documents = {d.id: d.documents[0] for d in manifest.dockets}
    for entry in manifest.comments:
        body = load(root / entry.path)
        attributes = body["data"]["attributes"]
        document = documents[entry.docket_id]
        assert ID.match(entry.id) and body["data"]["id"] == entry.id
        assert attributes["commentOn"] == document.object_id
        assert attributes["commentOnDocumentId"] == document.id
        assert re.fullmatch(r"[0-9a-f]{16}", attributes["objectId"])
        assert attributes["lastModifiedDate"] == entry.last_modified_date
        assert UTC_STAMP.match(attributes["postedDate"]) and attributes["postedDate"] <= entry.last_modified_date
        assert (attributes["comment"] == "See attached file(s)") == entry.inline_is_placeholder
        urls = [i["attributes"]["fileFormats"][0]["fileUrl"] for i in body.get("included", [])]
        assert urls == [f"https://downloads.regulations.gov/{entry.id}/{a.file}" for a in entry.attachments]
        sizes = [i["attributes"]["fileFormats"][0]["size"] for i in body.get("included", [])]
        assert sizes == [a.size for a in entry.attachments]


def test_modified_dates_distinct_per_docket_and_shared_by_day(corpus):
    _, manifest = corpus
    for docket in manifest.dockets:
        stamps = [c.last_modified_date for c in manifest.comments if c.docket_id == docket.id]
        assert all(UTC_STAMP.match(s) for s in stamps)
        assert len(set(stamps)) == len(stamps)
        assert max(Counter(s[:10] for s in stamps).values()) >= 2


def test_every_attachment_reads_with_its_expected_status(corpus):
    root, manifest = corpus
    statuses = Counter()
    for attachment in manifest.attachments():
        statuses[attachment.expected_status] += 1
        if attachment.expected_status == "gone":
            assert (root / attachment.path).name == f"{attachment.comment_id}_attachment_1_UNAVAILABLE"
            continue
        result = read_attachment(root / attachment.path, attachment.file, ExtractLimits())
        assert result.status == attachment.expected_status, (attachment, result.reason)
        assert (root / attachment.path).stat().st_size == attachment.size
    assert set(statuses) == {"ok", "ocr_needed", "failed", "gone"}


def test_attachment_text_is_about_its_topic(corpus):
    root, manifest = corpus
    for comment in manifest.comments:
        for attachment in comment.attachments:
            if attachment.expected_status != "ok":
                continue
            text = normalised(read_attachment(root / attachment.path, attachment.file).text)
            own, others = sentence_hits(text, TOPIC_BY_SLUG[comment.topic]), [
                sentence_hits(text, t) for t in TOPICS if t.slug != comment.topic]
            assert own >= 3 and max(others) == 0, (attachment.path, comment.topic)


def sentence_hits(text: str, topic) -> int:
    """How many of the topic's distinctive sentence openings (before any slot) the text holds."""
    openings = (template.split("{")[0] for template in topic.sentences)
    return sum(opening[:40] in text for opening in openings if len(opening) >= 25)


def test_docx_attachments_carry_a_table(corpus):
    root, manifest = corpus
    docx_files = [a for a in manifest.attachments() if a.kind == "docx"]
    assert docx_files
    text = read_attachment(root / docx_files[0].path, docx_files[0].file).text
    assert "Provision | Recommendation" in text


def test_a_duplicate_attachment_has_identical_bytes(corpus):
    root, manifest = corpus
    by_key = {f"{a.comment_id}/{a.file}": a for a in manifest.attachments()}
    duplicates = [a for a in manifest.attachments() if a.duplicate_of]
    assert duplicates
    for copy in duplicates:
        source = by_key[copy.duplicate_of]
        assert copy.comment_id != source.comment_id
        assert (root / copy.path).read_bytes() == (root / source.path).read_bytes()
        assert copy.sha256 == source.sha256


def test_all_topics_present(corpus):
    _, manifest = corpus
    assert {c.topic for c in manifest.comments} == {t.slug for t in TOPICS}
    assert manifest.topics == {t.slug: t.label for t in TOPICS}


def test_manifest_round_trips_from_disk(corpus):
    root, manifest = corpus
    assert Manifest.load(root) == manifest


def test_reuse_attachments_shares_bytes(tmp_path):
    root = tmp_path / "r"
    manifest = make_corpus(root, dockets=2, comments_per_docket=150, reuse_attachments=True)
    files = [a for a in manifest.attachments() if a.expected_status != "gone"]
    # At most REUSE_VARIANTS files per (kind, topic), whatever the corpus size.
    assert len({a.sha256 for a in files}) <= REUSE_VARIANTS * len(TOPICS) * 4 < len(files)
    inodes = {}
    for attachment in files:  # the same bytes are one file on disk, hard-linked
        inode = (root / attachment.path).stat().st_ino
        assert inodes.setdefault(attachment.sha256, inode) == inode
    make_corpus(tmp_path / "s", dockets=2, comments_per_docket=150, reuse_attachments=True)
    assert tree_bytes(root) == tree_bytes(tmp_path / "s")


def test_refuses_to_write_over_a_corpus(tmp_path):
    make_corpus(tmp_path, dockets=1, comments_per_docket=3)
    with pytest.raises(FileExistsError):
        make_corpus(tmp_path, dockets=1, comments_per_docket=3)
    assert len(make_corpus(tmp_path, dockets=1, comments_per_docket=5, overwrite=True).comments) == 5


def test_start_moves_the_comment_period(tmp_path):
    manifest = make_corpus(tmp_path, dockets=1, comments_per_docket=4,
                           start=datetime(2030, 3, 1, 5, tzinfo=UTC))
    assert manifest.dockets[0].id == "CMS-2030-0001"
    assert manifest.dockets[0].documents[0].comment_start_date == "2030-03-01T05:00:00Z"


def test_cli_spreads_the_total(tmp_path, capsys):
    assert spread(10, 3) == [4, 3, 3]
    assert main([str(tmp_path / "cli"), "--dockets", "3", "--comments", "10", "--seed", "3"]) == 0
    manifest = Manifest.load(tmp_path / "cli")
    assert len(manifest.comments) == 10 and len(manifest.dockets) == 3
    assert "10 comments" in capsys.readouterr().out


def test_the_real_pdfs_read_ok(realdata):
    binary = realdata / REAL_DOCKET / "binary-ACF-2025-0038"
    letter = read_attachment(binary / "comments_attachments" / "ACF-2025-0038-0004_attachment_1.pdf",
                             "attachment_1.pdf", ExtractLimits())
    assert (letter.status, letter.pages) == ("ok", 2)
    assert "The Wisconsin Department of Children and Families (DCF) welcomes the opportunity" in \
        normalised(letter.text)
    notice = read_attachment(binary / "documents_attachments" / "ACF-2025-0038-0001_content.pdf",
                             "content.pdf", ExtractLimits())
    assert (notice.status, notice.pages) == ("ok", 4)
    assert "Providing Technical Assistance Related to the Indian Child Welfare Act" in normalised(notice.text)


def test_a_rule_with_a_final_phase_and_a_mass_mailing(tmp_path):
    """--rin, --final-comments, --duplicates: the first docket and one more of its agency carry
    the RIN, the latter's document is a "Rule" that takes comments later, with FR numbers of
    their own; each docket's form-letter copy stands for that many submissions more."""
    manifest = make_corpus(tmp_path, dockets=2, comments_per_docket=[8, 6], rin="0938-ZZ27",
                           final_comments=5, duplicates=9)
    first, second, final = manifest.dockets
    assert manifest.options["final_docket"] == final.id and final.id.startswith("CMS-") and final.comment_count == 5
    records = {d.id: load(tmp_path / d.path)["data"]["attributes"] for d in manifest.dockets}
    assert (records[first.id]["rin"], records[second.id]["rin"], records[final.id]["rin"]) == \
        ("0938-ZZ27", None, "0938-ZZ27")
    documents = [load(tmp_path / d.documents[0].path)["data"]["attributes"] for d in (first, final)]
    assert [d["documentType"] for d in documents] == ["Proposed Rule", "Rule"]
    assert documents[1]["commentStartDate"] > documents[0]["commentEndDate"]
    assert documents[0]["frDocNum"] != documents[1]["frDocNum"]
    answered = {load(tmp_path / c.path)["data"]["attributes"]["commentOnDocumentId"]
                for c in manifest.comments if c.docket_id == final.id}
    assert answered == {final.documents[0].id}
    copies = {c.docket_id: load(tmp_path / c.path)["data"]["attributes"]["duplicateComments"]
              for c in manifest.comments if any(a.duplicate_of for a in c.attachments)}
    assert copies and set(copies.values()) == {9}
    assert sum(load(tmp_path / c.path)["data"]["attributes"]["duplicateComments"] for c in manifest.comments) \
        == 9 * len(copies)


def test_a_final_phase_needs_a_rin(tmp_path):
    with pytest.raises(ValueError, match="rin"):
        make_corpus(tmp_path, dockets=1, comments_per_docket=4, final_comments=3)
