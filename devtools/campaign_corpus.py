"""A docket's comments with planted form-letter campaigns, and the truth about them.

Each campaign is a template letter on the docket's topic; its members are the template as
people send it: their salutation and name and signature, sentences of their own inserted,
a sentence deleted, paragraphs reordered, case and punctuation changed, and some sent as an
attachment behind a "See attached" body. Beside them are independent comments on the same
topic, written from the same sentence bank (so they share phrases with the letters and with
each other, as real ones do). ``truth`` says which campaign each comment belongs to (None:
none), for precision and recall of the groups.

``seed_store`` writes them as the extract stage leaves them (item rows, combined.md blobs,
extract state rows), so the campaigns stage can run on them without fetch or extract.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from devtools.corpus_topics import FIRST_NAMES, LAST_NAMES, PLACES, TOPICS
from devtools.make_corpus import ATTACHED_PLACEHOLDER, topic_sentence

# Filler for the sentences a member writes itself: a vocabulary no template uses.
OWN_WORDS = ("grandmother neighbor farm daughter veteran teacher winter bus clinic shift savings "
             "church garden pharmacy rent paycheck classroom highway storm harvest diner night "
             "nurse truck mortgage insulin ferry library tractor bakery union pension daycare").split()
SALUTATIONS = ("Dear Secretary {last},", "To whom it may concern:", "Dear Administrator,",
               "Hello,", "Dear Sir or Madam,")
CLOSINGS = ("Sincerely,", "Respectfully,", "Thank you,", "Best regards,")


@dataclass(frozen=True)
class PlantedComment:
    key: str
    posted_date: str
    submitter: str
    body: str
    attachment: str  # the attachment's text ("" when none)
    campaign: str | None  # the planted campaign (None: an independent comment)
    unreadable: str = ""  # its attachment's failure ("corrupt PDF"): a file extract got no text from


def own_sentence(rng: random.Random) -> str:
    words = [rng.choice(OWN_WORDS) for _ in range(rng.randint(10, 18))]
    return " ".join(words).capitalize() + "."


def letter_template(rng: random.Random, topic) -> list[list[str]]:
    """Paragraphs of sentences: the letter every member starts from — a sentence of the
    topic's bank (other letters and comments use it too) and the campaign's own wording."""
    return [[topic_sentence(rng, rng.choice(topic.sentences)),
             *(own_sentence(rng) for _ in range(rng.randint(1, 2)))]
            for _ in range(rng.randint(3, 4))]


def member_text(rng: random.Random, template: list[list[str]], name: str) -> str:
    paragraphs = [list(p) for p in template]
    if rng.random() < 0.5:  # a sentence deleted
        paragraph = rng.choice([p for p in paragraphs if len(p) > 1] or paragraphs)
        paragraph.pop(rng.randrange(len(paragraph)))
    for _ in range(rng.choice((0, 1, 1, 2))):  # sentences of their own inserted
        paragraph = rng.choice(paragraphs)
        paragraph.insert(rng.randint(0, len(paragraph)), own_sentence(rng))
    if rng.random() < 0.3:  # paragraphs reordered
        rng.shuffle(paragraphs)
    text = "\n\n".join(" ".join(p) for p in paragraphs)
    if rng.random() < 0.2:
        text = text.upper()
    if rng.random() < 0.2:
        text = text.replace(",", "").replace(".", " .")
    salutation = rng.choice(SALUTATIONS).format(last=rng.choice(LAST_NAMES))
    return f"{salutation}\n\n{text}\n\n{rng.choice(CLOSINGS)}\n{name}\n{rng.choice(PLACES)}"


def _independent_text(rng: random.Random, topic, name: str) -> str:
    paragraphs = [" ".join([*(topic_sentence(rng, s) for s in rng.sample(topic.sentences, 2)),
                            own_sentence(rng), own_sentence(rng)])
                  for _ in range(rng.randint(2, 3))]
    return "\n\n".join(["Dear Administrator,", *paragraphs, "Sincerely,", name])


def campaign_comments(docket_id: str, n: int, *, campaigns: int = 10, campaign_share: float = 0.7,
                      attached_share: float = 0.1, seed: int = 0, first: int = 1,
                      start: datetime = datetime(2026, 1, 5, tzinfo=UTC)) -> list[PlantedComment]:
    """``n`` comments numbered from ``first``: ``campaign_share`` of them members of
    ``campaigns`` campaigns (sizes skewed, as real ones are), the rest independent."""
    rng = random.Random(f"{docket_id}:{seed}:{first}")
    topic = TOPICS[sum(map(ord, docket_id)) % len(TOPICS)]
    templates = [letter_template(random.Random(f"{docket_id}:template:{c}"), topic) for c in range(campaigns)]
    weights = [1 / (c + 1) for c in range(campaigns)]
    comments = []
    for i in range(first, first + n):
        name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        campaign = rng.choices(range(campaigns), weights)[0] if rng.random() < campaign_share else None
        text = (member_text(rng, templates[campaign], name) if campaign is not None
                else _independent_text(rng, topic, name))
        attached = campaign is not None and rng.random() < attached_share
        comments.append(PlantedComment(
            key=f"{docket_id}-{i:05d}",
            posted_date=(start + timedelta(minutes=7 * i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            submitter=name, body=ATTACHED_PLACEHOLDER if attached else text,
            attachment=text if attached else "",
            campaign=None if campaign is None else f"campaign-{campaign}"))
    return comments


SEED_BATCH = 20_000  # comments written per transaction (and rendered per batch)


def seed_store(runtime, docket_id: str, comments: list[PlantedComment]) -> None:
    """The comments as extract leaves them: item rows, extract rows (content hash of their
    combined.md) and the combined.md blobs of those sent as attachments. Written in batches,
    each table's rows by one prepared statement and the blobs with one flush: 200,000
    comments seed in minutes, not the hour a statement per comment took."""
    from pipeline.clock import iso, utcnow
    from pipeline.store import dockets, item_states, prepared
    from pipeline.store.blobs import combined_key
    from pipeline.store.models import Item, database

    dockets.ensure_dockets([docket_id], "list")
    now = iso(utcnow())
    columns = [Item.key, Item.docket, Item.kind, Item.title, Item.submitter, Item.posted_date,
               Item.body, Item.created_at, Item.updated_at, Item.withdrawn]

    def upsert(row: tuple):  # a re-seeded comment replaces its row (created_at kept)
        return Item.insert_many([row], fields=columns).on_conflict(
            conflict_target=[Item.key], preserve=[c for c in columns if c.name not in ("key", "created_at", "withdrawn")])

    for start in range(0, len(comments), SEED_BATCH):
        batch = comments[start:start + SEED_BATCH]
        combined = {c.key: _combined(docket_id, c) for c in batch}
        with database.atomic():
            prepared.run_many("campaign_corpus.item", upsert,
                              [(c.key, docket_id, "comment", f"Comment {c.key}", c.submitter, c.posted_date,
                                c.body, now, now, False) for c in batch])
            item_states.transition_many(
                {"stage": "extract", "item": c.key, "docket": docket_id, "state": "ok", "run_id": "seed",
                 "fingerprint": "seed", "content_hash": hashlib.sha256(combined[c.key]).hexdigest()}
                for c in batch)
        # the campaigns stage reads combined.md for those sent as attachments alone
        runtime.blobs.put_many([(combined_key(docket_id, c.key), combined[c.key])
                                for c in batch if c.attachment or c.unreadable])


def seed_documents(runtime, docket_id: str, documents: dict[str, list[tuple[str, str]]]) -> None:
    """The docket's documents as extract leaves them: document id -> its files as (file name,
    text), an item row of kind ``document``, its extract row and its combined.md."""
    from pipeline.clock import iso, utcnow
    from pipeline.extract.combined import render_combined
    from pipeline.extract.readers import AttachmentText
    from pipeline.store import dockets, item_states
    from pipeline.store.blobs import combined_key
    from pipeline.store.models import Item

    dockets.ensure_dockets([docket_id], "list")
    now = iso(utcnow())
    for key, files in documents.items():
        combined = render_combined(
            comment_id=key, docket_id=docket_id, inline_text="", kind="document",
            attachments=[AttachmentText(name, "ok", "", len(text), 1, text) for name, text in files],
            sources_fingerprint="seed", extractor_version="extract-1")
        Item.insert(key=key, docket=docket_id, kind="document", title=f"Document {key}", body="",
                    created_at=now, updated_at=now, withdrawn=False).on_conflict_replace().execute()
        item_states.transition_many([{"stage": "extract", "item": key, "docket": docket_id, "state": "ok",
                                      "run_id": "seed", "fingerprint": "seed",
                                      "content_hash": hashlib.sha256(combined).hexdigest()}])
        runtime.blobs.put_many([(combined_key(docket_id, key), combined)])


def _combined(docket_id: str, c: PlantedComment) -> bytes:
    from pipeline.extract.combined import render_combined
    from pipeline.extract.readers import AttachmentText

    files = ([AttachmentText("attachment_1.pdf", "ok", "", len(c.attachment), 1, c.attachment)]
             if c.attachment else [])
    if c.unreadable:
        files.append(AttachmentText("attachment_2.pdf", "failed", c.unreadable))
    return render_combined(comment_id=c.key, docket_id=docket_id, inline_text=c.body, attachments=files,
                           sources_fingerprint="seed", extractor_version="extract-1")


def pair_scores(truth: dict[str, str | None], found: dict[str, str]) -> tuple[float, float]:
    """(precision, recall) of group membership over pairs of comments: a pair is in a group
    when both are in the same one (an independent comment is in no planted group). Counted
    from how many comments each (planted, found) group pair shares, never by listing the
    pairs (a campaign of 50,000 members has over a billion)."""
    def pairs(n: int) -> int:
        return n * (n - 1) // 2

    planted = sum(pairs(n) for n in Counter(g for g in truth.values() if g is not None).values())
    grouped = sum(pairs(n) for n in Counter(found.values()).values())
    both = sum(pairs(n) for n in Counter((truth.get(k), g) for k, g in found.items()
                                         if truth.get(k) is not None).values())
    precision = both / grouped if grouped else 1.0
    recall = both / planted if planted else 1.0
    return precision, recall


# --- an agency's questionnaire filled in by many organisations ----------------------------------

FORM_QUESTIONS = (
    "Name of the responding organization",
    "Type of organization (company, trade association, academic institution, other)",
    "Describe your organization's participation in international standards development organizations for emerging technologies",
    "Has your organization observed attempts by any government to influence the leadership of technical committees",
    "Describe any barriers your organization faces in contributing technical proposals to standards bodies",
    "Identify the emerging technology areas where your organization develops or implements standards",
    "Has your organization experienced pressure to adopt particular technical specifications as a condition of market access",
    "What actions should the federal government take to support private sector leadership in standards development",
    "Describe the resources your organization devotes to standards participation, including staff and travel",
    "Please provide any additional information relevant to this request for information",
)
FORM_INSTRUCTIONS = ("Instructions: complete one row per question in the Response column. Responses will be "
                     "posted publicly without change. Do not include confidential business information.")
_FORM_WORDS = ("quantum lidar photonics battery wafer drone satellite genomics robotics biometric edge cloud "
               "antenna firmware sensor codec vehicle grid turbine polymer fiber chip laser radar modem").split()
_FORM_PLACES = ("Ohio", "Texas", "Oregon", "Georgia", "Michigan", "Utah", "Vermont", "Iowa", "Nevada", "Maine")


def form_template() -> str:
    """The questionnaire as extract reads the agency's XLSX: a sheet line, a header row, one
    row a question (its response cell empty), the instructions below."""
    rows = ["Question | Response", *FORM_QUESTIONS, FORM_INSTRUCTIONS]
    return "Sheet: Questionnaire\n" + "\n".join(rows)


def filled_forms(docket_id: str, n: int, *, shared_answers: int = 0, seed: int = 0,
                 start: datetime = datetime(2026, 3, 2, tzinfo=UTC)) -> list[PlantedComment]:
    """``n`` organisations' filled questionnaires, each sent as an attachment behind a "See
    attached file(s)" body: the template's rows with each organisation's own short answers,
    as a real RFI's 64 companies sent theirs. The last ``shared_answers`` answered alike (a
    trade association's suggested answers, one campaign: ``campaign`` "association")."""
    rng = random.Random(f"{docket_id}:forms:{seed}")
    suggested = [f"Members of our association report {rng.choice(_FORM_WORDS)} and {rng.choice(_FORM_WORDS)} "
                 f"proposals delayed by procedural objections in committee meetings." for _ in FORM_QUESTIONS[2:]]
    comments = []
    for i in range(n):
        company = f"{rng.choice(LAST_NAMES)} {rng.choice(_FORM_WORDS).title()} {rng.choice(('Inc.', 'LLC', 'Corp.'))}"
        alike = i >= n - shared_answers
        answers = [company, rng.choice(("Company", "Small business", "Company (manufacturer)"))]
        for q in range(2, len(FORM_QUESTIONS)):
            if alike:
                answers.append(suggested[q - 2])
            elif rng.random() < 0.5:
                answers.append(f"{rng.choice(_FORM_WORDS)} {rng.choice(_FORM_WORDS)} work in {rng.choice(_FORM_PLACES)} "
                               f"since {rng.randint(1990, 2020)}")
            else:
                answers.append(rng.choice(("Yes", "No", "N/A", "")))
        rows = ["Question | Response", *(f"{q} | {a}".strip(" |") for q, a in zip(FORM_QUESTIONS, answers, strict=True)),
                FORM_INSTRUCTIONS]
        comments.append(PlantedComment(
            key=f"{docket_id}-{i + 2:04d}",
            posted_date=(start + timedelta(hours=3 * i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            submitter=company, body="See attached file(s)",
            attachment="Sheet: Questionnaire\n" + "\n".join(rows),
            campaign="association" if alike else None))
    return comments
