"""A big mirror-layout docket, fast, with form-letter campaigns at set shares; and a mirror
listing of many dockets.

    python -m devtools.scale_corpus OUT --docket EPA-HQ-OAR-2026-0001 --comments 200000 \\
        --profile mass-mail-95 --seed 7 [--attachments [SHARE]] [--overwrite]
    python -m devtools.scale_corpus OUT --listing 276000 [--seed 7] [--folders]

A docket: its record, one proposed rule (with its content PDF) and ``--comments`` comment
records in the shapes ``devtools.make_corpus`` writes and ``pipeline/sources/mirror.py``
reads, every path from ``devtools.mirror_layout``. Bodies are text by default; with
``--attachments`` a share of the comments (0.1 when no share is given) carry a small PDF or
DOCX, the same few files' bytes reused (a member of a campaign attaches its letter behind a
"See attached file(s)" body). ``--profile`` says how many comments are form letters:

* ``mass-mail-95``: 95 % are copies of five letters (40, 25, 15, 10 and 5 %);
* ``mass-mail-99``: 99 % are copies of one letter;
* ``organic``: three small letters (1.2, 0.8 and 0.5 %), the rest people's own words.

A copy carries its sender's small edits (``devtools.scale_letters``); modification times
spread over the 60-day comment period, a quarter of them in its last five days. What was
planted is written beside ``raw-data`` as ``scale-truth-<docket>.json``: each letter's share
and members, each comment's letter. Same arguments, same bytes.

A listing (``--listing N``): N distinct docket ids of many agencies, as the mirror's keys —
each docket's record and its document's record — one a line in ``mirror-listing-<N>.txt``
in key order (what a LIST of the bucket gives; ``python -m benchmarks.mirror_rig
--keys-from`` serves it as a bucket); with ``--folders`` also written as a mirror folder,
each docket with those two records (that is what makes folders slow: a directory costs
this disk far more than a file).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import re
import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property
from pathlib import Path

from devtools import mirror_layout as layout
from devtools import scale_letters as words
from devtools.corpus_topics import AGENCY_DOCKETS, RULE_SENTENCES, TOPICS
from devtools.make_corpus import (
    ATTACHED_PLACEHOLDER,
    COMMENT_PERIOD_DAYS,
    DEFAULT_START,
    AttachmentEntry,
    CommentEntry,
    DocumentEntry,
    Submitter,
    comment_json,
    docket_json,
    document_json,
    docx_bytes,
    text_pdf,
    topic_prose,
    utc,
)
from pipeline.errors import InvalidIdentifier
from pipeline.ids import agency_of_docket, validate_id

DEFAULT_ATTACHMENT_SHARE = 0.1  # --attachments without a share
RUSH_DAYS = 5  # the deadline rush: the last days of the period ...
RUSH_SHARE = 0.25  # ... take this share of the comments
SUPPORTING_FILES = 4  # distinct PDF/DOCX files comments of one's own attach (bytes reused)
BLOCK = 1000  # comments written from one random stream (see ScaleDocket)


@dataclass(frozen=True)
class Profile:
    """How a docket's comments divide: each form letter's share; the rest are people's own."""

    name: str
    letter_shares: tuple[float, ...]
    about: str


PROFILES = {p.name: p for p in (
    Profile("mass-mail-95", (0.40, 0.25, 0.15, 0.10, 0.05), "95 % are copies of five letters"),
    Profile("mass-mail-99", (0.99,), "99 % are copies of one letter"),
    Profile("organic", (0.012, 0.008, 0.005), "a few small letters (2.5 %), the rest people's own"),
)}


def letter_plan(rng: random.Random, count: int, profile: Profile) -> list[int]:
    """Each comment's letter (-1: its own words), every letter at exactly its share
    (rounded), in a shuffled order."""
    plan = [n for n, share in enumerate(profile.letter_shares) for _ in range(round(count * share))]
    plan = plan[:count] + [-1] * max(0, count - len(plan))
    rng.shuffle(plan)
    return plan


def modification_times(rng: random.Random, count: int, opens: datetime) -> list[int]:
    """Epoch seconds in ascending order over the comment period, a quarter in its last days."""
    start = int(opens.timestamp())
    period = COMMENT_PERIOD_DAYS * 86400
    rush = (COMMENT_PERIOD_DAYS - RUSH_DAYS) * 86400
    return sorted(start + (rush + int(rng.random() * (period - rush)) if rng.random() < RUSH_SHARE
                           else int(rng.random() * period)) for _ in range(count))


def _stamp(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _posted(epoch: int) -> int:
    """Posting is at midnight US Eastern (05:00Z) of the day it was last modified."""
    return (epoch - 5 * 3600) // 86400 * 86400 + 5 * 3600


@dataclass(frozen=True)
class FileShape:
    """One reusable attachment: its bytes and what the record says of them."""

    data: bytes
    extension: str
    kind: str  # make_corpus's kinds: text_pdf | docx


@dataclass
class Truth:
    """What a generated docket holds, as planted."""

    docket_id: str
    profile: str
    seed: int
    comment_ids: list[str]
    letter_of: list[int]  # per comment, in id order: its letter, -1 for its own words
    letter_shares: list[float]
    attachments: int = 0
    seconds: float = 0.0
    files: Counter = field(default_factory=Counter)

    def members(self, letter: int) -> list[str]:
        return [c for c, n in zip(self.comment_ids, self.letter_of, strict=True) if n == letter]

    def to_json(self) -> str:
        counts = Counter(self.letter_of)
        return json.dumps({
            "docket_id": self.docket_id, "profile": self.profile, "seed": self.seed,
            "comments": len(self.comment_ids), "attachments": self.attachments,
            "letters": [{"letter": n, "share": share, "members": counts[n]}
                        for n, share in enumerate(self.letter_shares)],
            "own_words": counts[-1], "first_comment": self.comment_ids[0] if self.comment_ids else None,
            "letter_of": self.letter_of}, separators=(",", ":"))

    @classmethod
    def load(cls, root: Path, docket_id: str) -> Truth:
        raw = json.loads((Path(root) / truth_name(docket_id)).read_text())
        ids = comment_ids(docket_id, raw["comments"])
        return cls(raw["docket_id"], raw["profile"], raw["seed"], ids, raw["letter_of"],
                   [entry["share"] for entry in raw["letters"]], raw["attachments"])


def truth_name(docket_id: str) -> str:
    return f"scale-truth-{docket_id}.json"


def comment_ids(docket_id: str, count: int) -> list[str]:
    """``<docket>-0002`` onwards (``-0001`` is the rule), wide enough for ``count``."""
    width = max(4, len(str(count + 1)))
    return [f"{docket_id}-{n + 2:0{width}d}" for n in range(count)]


class ScaleDocket:
    """Writes one docket's records and comments (``write_scale_docket`` is the entry point).

    Comments are written in blocks of ``BLOCK``, each from a random stream of its own and
    with object ids numbered by the comment: a block's files do not depend on which process
    wrote it, or in what order, so any number of workers write the same bytes."""

    def __init__(self, root: Path, docket_id: str, *, profile: Profile, seed: int,
                 attachment_share: float, start: datetime) -> None:
        self.docket_id = validate_id(docket_id, "docket id")
        self.agency = agency_of_docket(docket_id)
        self.folders = layout.DocketFolders.new(root, self.agency, docket_id)
        self.profile, self.seed, self.opens = profile, seed, start
        self.attachment_share = attachment_share
        self.rng = random.Random(f"{seed}/{docket_id}")
        self.topic = TOPICS[self.rng.randrange(len(TOPICS))]
        self.letters = words.letters(docket_id, seed, self.topic, len(profile.letter_shares))
        self.letter_files: list[FileShape] = []
        self.supporting: list[FileShape] = []
        self.document: DocumentEntry | None = None
        self.plan: list[tuple[str, int, int]] = []  # (comment id, letter, epoch) per comment

    def object_id(self, n: int) -> str:
        """Object ids like regulations.gov's 09000064b8f4997c: 0 the rule's, 1 the docket's,
        then two per comment (its record's, its attachment's)."""
        return f"09000064{(0xC0000000 + (self.seed * 7919) % 0x08000000 + n) & 0xFFFFFFFF:08x}"

    def write_records(self) -> None:
        """The docket's record and its proposed rule (with the rule's content PDF)."""
        closes = self.opens + timedelta(days=COMMENT_PERIOD_DAYS) - timedelta(seconds=1)
        title = f"{AGENCY_DOCKETS[self.rng.randrange(len(AGENCY_DOCKETS))][2]} ({self.topic.label})"
        document_id = f"{self.docket_id}-0001"
        pages = [[title, *(" ".join(self.rng.sample(RULE_SENTENCES, 5)) for _ in range(3))]]
        content = text_pdf(pages)
        layout.write_file(self.folders.document_content(document_id), content)
        self.document = DocumentEntry(document_id, self.docket_id, self.object_id(0), title,
                                      utc(self.opens), utc(closes), "", "")
        layout.write_json(self.folders.document_file(document_id),
                          document_json(self.document, self.agency, len(content), self.opens))
        layout.write_json(self.folders.docket_file(),
                          docket_json(self.docket_id, self.agency, title, self.object_id(1), closes))

    def make_files(self) -> None:
        """The few attachments every attaching comment reuses: each letter as a PDF, and
        supporting PDFs and DOCX files on the docket's topic."""
        self.letter_files = [FileShape(text_pdf([words.letter_itself(letter).split("\n\n")]), "pdf", "text_pdf")
                             for letter in self.letters]
        rng = random.Random(f"{self.seed}/{self.docket_id}/files")
        for n in range(SUPPORTING_FILES):
            prose = topic_prose(rng, self.topic, 3)
            self.supporting.append(
                FileShape(docx_bytes(f"Comments on {self.topic.label}", prose, list(self.topic.recommendations)),
                          "docx", "docx") if n % 2 else FileShape(text_pdf([prose]), "pdf", "text_pdf"))

    def write_block(self, block: int) -> int:
        """The comments of block ``block``; returns how many have an attachment."""
        rng = random.Random(f"{self.seed}/{self.docket_id}/block/{block}")
        first = block * BLOCK
        return sum(self.write_comment(rng, first + n, *planned)
                   for n, planned in enumerate(self.plan[first:first + BLOCK]))

    def write_comment(self, rng: random.Random, n: int, comment_id: str, letter: int, epoch: int) -> bool:
        """Comment ``n``'s record (and its attachment); True when it has one."""
        signer = words.person(rng) if letter >= 0 else words.sender(rng)
        file = None
        if self.attachment_share and rng.random() < self.attachment_share:
            file = self.letter_files[letter] if letter >= 0 else rng.choice(self.supporting)
        if letter < 0:
            body = words.own_comment(rng, self.topic, signer)
        else:  # a member attaching the letter sends it as it is, behind the placeholder
            body = ATTACHED_PLACEHOLDER if file else words.letter_as_sent(rng, self.letters[letter], signer)
        posted = _posted(epoch)
        fields = {"id": comment_id, "first_name": signer.first_name, "last_name": signer.last_name,
                  "organization": signer.organization, "title": signer.title, "comment": body,
                  "posted": _stamp(posted), "modified": _stamp(epoch),
                  "received": _stamp(posted - 86400 * rng.randrange(0, 6)),
                  "tracking": words.tracking_number(rng), "object_id": self.object_id(2 * n + 2)}
        path = self.folders.comment_file(comment_id)
        if file is None:
            layout.write_file(path, self.template.render(fields).encode("utf-8"))
            return False
        attachment = AttachmentEntry(comment_id, f"attachment_1.{file.extension}", "", file.extension, file.kind,
                                     len(file.data), "", "ok")
        layout.write_file(self.folders.comment_attachment(comment_id, 1, file.extension), file.data)
        layout.write_json(path, self.record(fields, [(attachment, self.object_id(2 * n + 3),
                                                      f"{self.docket_id} {signer.title}")]))
        return True

    def record(self, fields: dict, attachments: list[tuple[AttachmentEntry, str, str]] = ()) -> dict:
        """A comment's record as ``make_corpus.comment_json`` shapes it, from its ``fields``;
        ``attachments``: (file, its object id, its title) each."""
        entry = CommentEntry(fields["id"], self.docket_id, self.topic.slug, "", fields["posted"], fields["modified"],
                             fields["comment"] == ATTACHED_PLACEHOLDER, [a for a, _, _ in attachments])
        record = comment_json(
            entry, agency=self.agency, document=self.document, object_id=fields["object_id"],
            submitter=Submitter(fields["first_name"], fields["last_name"], fields["organization"], fields["title"]),
            inline_text=fields["comment"], received=self.opens, tracking=fields["tracking"],
            attachment_ids=[i for _, i, _ in attachments], attachment_titles=[t for _, _, t in attachments])
        record["data"]["attributes"]["receiveDate"] = fields["received"]  # a stamp made already
        return record

    @cached_property
    def template(self) -> RecordTemplate:
        return RecordTemplate(self.record)


class RecordTemplate:
    """A comment record without attachments serialised once, its fields' values filled in
    for each comment: ``render(fields)`` is ``json.dumps(record(fields))``, byte for byte, at a
    third of its cost (serialising the record's sixty keys was the most of a comment's CPU).

    Built by serialising the record with a marker in each field, the markers then found in
    the text; the comment id is also inside the record's links, so it is filled in raw (an id
    is letters, digits and ``_.-``: nothing JSON escapes)."""

    RAW = "id"

    def __init__(self, record) -> None:
        markers = {name: f"\x00{name}\x00" for name in FIELDS}
        text = json.dumps(record(markers))
        tokens = {json.dumps(marker): name for name, marker in markers.items() if name != self.RAW}
        tokens[json.dumps(markers[self.RAW])[1:-1]] = self.RAW
        pattern = re.compile("|".join(re.escape(token) for token in tokens))
        self.parts: list[str] = []
        self.slots: list[tuple[int, str]] = []
        at = 0
        for match in pattern.finditer(text):
            self.parts.append(text[at:match.start()])
            self.slots.append((len(self.parts), tokens[match.group()]))
            self.parts.append("")
            at = match.end()
        self.parts.append(text[at:])
        if {name for _, name in self.slots} != set(FIELDS):
            raise ValueError("a field of the comment record is not in its text")

    def render(self, fields: dict) -> str:
        parts = list(self.parts)
        for at, name in self.slots:
            parts[at] = fields[name] if name == self.RAW else json.dumps(fields[name])
        return "".join(parts)


FIELDS = ("id", "first_name", "last_name", "organization", "title", "comment", "posted", "modified", "received",
          "tracking", "object_id")


_writer: ScaleDocket | None = None  # the docket a forked worker writes blocks of


def _write_block(block: int) -> int:
    return _writer.write_block(block)


def write_blocks(writer: ScaleDocket, workers: int) -> int:
    """Every block of the writer's plan, by ``workers`` forked processes (1: this one);
    returns how many comments have an attachment."""
    global _writer
    blocks = range((len(writer.plan) + BLOCK - 1) // BLOCK)
    if workers <= 1 or len(blocks) <= 1:
        return sum(writer.write_block(block) for block in blocks)
    _writer = writer  # a forked worker inherits it: the letters, files and template are made once
    writer.template  # noqa: B018 - made here, before the fork
    try:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            return sum(pool.imap_unordered(_write_block, blocks))
    finally:
        _writer = None


def write_scale_docket(root: Path, docket_id: str, comments: int, *, profile: str = "mass-mail-95",
                       seed: int = 7, attachment_share: float = 0.0, start: datetime | None = None,
                       overwrite: bool = False, workers: int = 1) -> Truth:
    """Write the docket under ``root`` and its truth beside ``raw-data``; returns the truth.
    Raises ValueError (an unknown profile, a count or share out of range), InvalidIdentifier
    (an unsafe docket id) or FileExistsError (the docket is there and not ``overwrite``)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r} (one of {', '.join(PROFILES)})")
    if comments < 0:
        raise ValueError("the number of comments cannot be negative")
    if not 0 <= attachment_share <= 1:
        raise ValueError("the attachment share is a number from 0 to 1")
    writer = ScaleDocket(Path(root), docket_id, profile=PROFILES[profile], seed=seed,
                         attachment_share=attachment_share, start=(start or DEFAULT_START).astimezone(UTC))
    if writer.folders.base.exists():
        if not overwrite:
            raise FileExistsError(f"{writer.folders.base} already holds the docket (pass --overwrite)")
        shutil.rmtree(writer.folders.base)
    started = time.perf_counter()
    writer.folders.create_folders()
    writer.write_records()
    if attachment_share:
        writer.make_files()
    ids = comment_ids(docket_id, comments)
    plan = letter_plan(writer.rng, comments, writer.profile)
    writer.plan = list(zip(ids, plan, modification_times(writer.rng, comments, writer.opens), strict=True))
    truth = Truth(docket_id, profile, seed, ids, plan, list(writer.profile.letter_shares))
    truth.attachments = write_blocks(writer, workers)
    (Path(root) / truth_name(docket_id)).write_text(truth.to_json())
    truth.seconds = time.perf_counter() - started
    return truth


# --- a listing of many dockets -------------------------------------------------------------------

# Agencies that file dockets on regulations.gov, the busiest first: a docket's agency is drawn
# with weight 1/rank (a few agencies hold most dockets, as in the mirror).
LISTING_AGENCIES = (
    "EPA", "FAA", "USCG", "FDA", "CMS", "NOAA", "FWS", "DOT", "FMCSA", "NHTSA", "PHMSA", "OSHA", "ED",
    "HHS", "USDA", "APHIS", "AMS", "FSIS", "FNS", "IRS", "SEC", "CFPB", "DOE", "EERE", "BSEE", "BOEM",
    "BLM", "NPS", "FEMA", "USCIS", "ICE", "CBP", "TSA", "DHS", "DOL", "EBSA", "WHD", "MSHA", "ETA",
    "HUD", "VA", "DOD", "DARS", "GSA", "NRC", "FRA", "FTA", "MARAD", "ACF", "CDC", "HRSA", "SAMHSA",
    "NIH", "IHS", "USTR", "DOS", "BIS", "ITA", "NIST", "USPTO", "COE", "OPM", "SBA", "TREAS", "FINCEN",
    "OCC", "FCC", "NARA", "LOC", "CPSC",
)
EPA_OFFICES = ("HQ-OAR", "HQ-OW", "HQ-OPP", "HQ-OLEM", "HQ-OPPT", "HQ-OECA", "R05-OAR", "R09-OAR", "R06-OAR")
FRDOC_SHARE = 0.04  # dockets named ``<AGENCY>_FRDOC_<n>`` (Federal Register documents' own)
LISTING_YEARS = (1995, 2026)


def listing_dockets(count: int, seed: int = 7) -> list[str]:
    """``count`` distinct docket ids: ``<AGENCY>-<year>-<n>`` (EPA's with their office,
    ``EPA-HQ-OAR-2021-0317``), and a few ``<AGENCY>_FRDOC_<n>``."""
    rng = random.Random(f"{seed}/listing")
    weights = [1 / rank for rank in range(1, len(LISTING_AGENCIES) + 1)]
    first, years = LISTING_YEARS[0], LISTING_YEARS[1] - LISTING_YEARS[0] + 1
    numbers: Counter = Counter()
    ids = []
    for agency in rng.choices(LISTING_AGENCIES, weights, k=count):
        if rng.random() < FRDOC_SHARE:
            prefix, sep = f"{agency}_FRDOC", "_"
        else:
            office = f"{rng.choice(EPA_OFFICES)}-" if agency == "EPA" else ""
            prefix, sep = f"{agency}-{office}{first + int(rng.random() * years)}", "-"
        numbers[prefix] += 1
        ids.append(f"{prefix}{sep}{numbers[prefix]:04d}")
    return ids


def listing_keys(docket_ids: list[str]) -> Iterator[str]:
    """Each docket's two records as mirror keys (its record, its rule's), by mirror_layout's rules."""
    for docket_id in docket_ids:
        base = layout.docket_key(agency_of_docket(docket_id), docket_id)
        yield f"{base}/{layout.docket_record_name(docket_id)}"
        yield f"{base}/{layout.document_record_name(docket_id, f'{docket_id}-0001')}"


def listing_name(count: int) -> str:
    return f"mirror-listing-{count}.txt"


def write_listing(root: Path, count: int, *, seed: int = 7, folders: bool = False) -> list[str]:
    """The listing of ``count`` dockets under ``root`` (``listing_name``), and with
    ``folders`` each docket's folder with its two records; returns the docket ids."""
    if count < 1:
        raise ValueError("a listing needs at least one docket")
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    ids = listing_dockets(count, seed)
    (root / listing_name(count)).write_text("\n".join(sorted(listing_keys(ids))) + "\n")
    if folders:
        for n, docket_id in enumerate(ids):
            _write_listed_docket(root, docket_id, seed, n)
    return ids


def _write_listed_docket(root: Path, docket_id: str, seed: int, n: int) -> None:
    """A listed docket's record and its proposed rule's, the comment period closed in the
    docket's year (or 2026 for an ``_FRDOC_`` one)."""
    agency = agency_of_docket(docket_id)
    folders = layout.DocketFolders.new(root, agency, docket_id)
    year = next((int(part) for part in docket_id.split("-")[1:] if len(part) == 4 and part.isdigit()), 2026)
    opens = datetime(year, 1, 5, 5, tzinfo=UTC) + timedelta(days=n % 300)
    closes = opens + timedelta(days=COMMENT_PERIOD_DAYS) - timedelta(seconds=1)
    title = f"{AGENCY_DOCKETS[n % len(AGENCY_DOCKETS)][2]} ({docket_id})"
    object_base = (seed * 7919 + 2 * n) % 0x10000000
    document = DocumentEntry(f"{docket_id}-0001", docket_id, f"090000648{object_base:07x}", title,
                             utc(opens), utc(closes), "", "")
    layout.write_json(folders.document_file(document.id), document_json(document, agency, 0, opens))
    layout.write_json(folders.docket_file(),
                      docket_json(docket_id, agency, title, f"090000648{object_base + 1:07x}", closes))


# --- the command line ----------------------------------------------------------------------------


def _share(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not a share from 0 to 1")
    return value


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser(prog="python -m devtools.scale_corpus", description=__doc__.split("\n\n")[0])
    made.add_argument("out", type=Path, help="the mirror folder (raw-data/ goes under it)")
    made.add_argument("--docket", help="the docket to write, e.g. EPA-HQ-OAR-2026-0001")
    made.add_argument("--comments", type=int, default=20_000)
    made.add_argument("--profile", choices=sorted(PROFILES), default="mass-mail-95")
    made.add_argument("--seed", type=int, default=7)
    made.add_argument("--attachments", type=_share, nargs="?", const=DEFAULT_ATTACHMENT_SHARE, default=0.0,
                      metavar="SHARE", help=f"the share of comments with a file (default {DEFAULT_ATTACHMENT_SHARE} "
                                            "when given without one)")
    made.add_argument("--start", type=datetime.fromisoformat, default=None,
                      help="when the comment period opens (ISO 8601, UTC if naive)")
    made.add_argument("--workers", type=int, default=min(2, multiprocessing.cpu_count()),
                      help="processes writing blocks of comments (same bytes whatever the number)")
    made.add_argument("--overwrite", action="store_true", help="replace the docket if it is there")
    made.add_argument("--listing", type=int, metavar="N", help="write a listing of N dockets instead")
    made.add_argument("--folders", action="store_true", help="with --listing: also each docket's folder and records")
    return made


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    started = time.perf_counter()
    try:
        if args.listing is not None:
            ids = write_listing(args.out, args.listing, seed=args.seed, folders=args.folders)
            print(f"{len(ids):,} dockets listed in {time.perf_counter() - started:.1f} s -> "
                  f"{args.out / listing_name(args.listing)}" + (" and their folders" if args.folders else ""))
            return 0
        if not args.docket:
            raise ValueError("name the docket to write (--docket) or ask for a listing (--listing N)")
        start = args.start.replace(tzinfo=args.start.tzinfo or UTC) if args.start else None
        truth = write_scale_docket(args.out, args.docket, args.comments, profile=args.profile, seed=args.seed,
                                   attachment_share=args.attachments, start=start, overwrite=args.overwrite,
                                   workers=args.workers)
    except (ValueError, InvalidIdentifier, FileExistsError, OSError) as error:
        print(f"scale_corpus: {error}", file=sys.stderr)
        return 2
    rate = len(truth.comment_ids) / truth.seconds if truth.seconds else 0.0
    print(f"{truth.docket_id}: {len(truth.comment_ids):,} comments ({truth.profile}, {truth.attachments:,} "
          f"with a file) in {truth.seconds:.1f} s, {rate:,.0f} a second -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
