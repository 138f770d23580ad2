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


def _own_sentence(rng: random.Random) -> str:
    words = [rng.choice(OWN_WORDS) for _ in range(rng.randint(10, 18))]
    return " ".join(words).capitalize() + "."


def _template(rng: random.Random, topic) -> list[list[str]]:
    """Paragraphs of sentences: the letter every member starts from — a sentence of the
    topic's bank (other letters and comments use it too) and the campaign's own wording."""
    return [[topic_sentence(rng, rng.choice(topic.sentences)),
             *(_own_sentence(rng) for _ in range(rng.randint(1, 2)))]
            for _ in range(rng.randint(3, 4))]


def _member_text(rng: random.Random, template: list[list[str]], name: str) -> str:
    paragraphs = [list(p) for p in template]
    if rng.random() < 0.5:  # a sentence deleted
        paragraph = rng.choice([p for p in paragraphs if len(p) > 1] or paragraphs)
        paragraph.pop(rng.randrange(len(paragraph)))
    for _ in range(rng.choice((0, 1, 1, 2))):  # sentences of their own inserted
        paragraph = rng.choice(paragraphs)
        paragraph.insert(rng.randint(0, len(paragraph)), _own_sentence(rng))
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
                            _own_sentence(rng), _own_sentence(rng)])
                  for _ in range(rng.randint(2, 3))]
    return "\n\n".join(["Dear Administrator,", *paragraphs, "Sincerely,", name])


def campaign_comments(docket_id: str, n: int, *, campaigns: int = 10, campaign_share: float = 0.7,
                      attached_share: float = 0.1, seed: int = 0, first: int = 1,
                      start: datetime = datetime(2026, 1, 5, tzinfo=UTC)) -> list[PlantedComment]:
    """``n`` comments numbered from ``first``: ``campaign_share`` of them members of
    ``campaigns`` campaigns (sizes skewed, as real ones are), the rest independent."""
    rng = random.Random(f"{docket_id}:{seed}:{first}")
    topic = TOPICS[sum(map(ord, docket_id)) % len(TOPICS)]
    templates = [_template(random.Random(f"{docket_id}:template:{c}"), topic) for c in range(campaigns)]
    weights = [1 / (c + 1) for c in range(campaigns)]
    comments = []
    for i in range(first, first + n):
        name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        campaign = rng.choices(range(campaigns), weights)[0] if rng.random() < campaign_share else None
        text = (_member_text(rng, templates[campaign], name) if campaign is not None
                else _independent_text(rng, topic, name))
        attached = campaign is not None and rng.random() < attached_share
        comments.append(PlantedComment(
            key=f"{docket_id}-{i:05d}",
            posted_date=(start + timedelta(minutes=7 * i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            submitter=name, body=ATTACHED_PLACEHOLDER if attached else text,
            attachment=text if attached else "",
            campaign=None if campaign is None else f"campaign-{campaign}"))
    return comments


def seed_store(runtime, docket_id: str, comments: list[PlantedComment]) -> None:
    """The comments as extract leaves them: item rows, extract rows (content hash of their
    combined.md) and the combined.md blobs of those sent as attachments."""
    from pipeline.clock import iso, utcnow
    from pipeline.extract.combined import render_combined
    from pipeline.extract.readers import AttachmentText
    from pipeline.store import dockets, item_states
    from pipeline.store.blobs import combined_key
    from pipeline.store.models import Item, database

    dockets.ensure_dockets([docket_id], "list")
    now = iso(utcnow())
    rows = []
    with database.atomic():
        for c in comments:
            fields = {Item.docket: docket_id, Item.kind: "comment", Item.title: f"Comment {c.key}",
                      Item.submitter: c.submitter, Item.posted_date: c.posted_date,
                      Item.body: c.body, Item.updated_at: now}
            Item.insert({Item.key: c.key, Item.created_at: now, **fields}).on_conflict(
                conflict_target=[Item.key], update=fields).execute()
            files = ([AttachmentText("attachment_1.pdf", "ok", "", len(c.attachment), 1, c.attachment)]
                     if c.attachment else [])
            data = render_combined(comment_id=c.key, docket_id=docket_id, inline_text=c.body,
                                   attachments=files, sources_fingerprint="seed",
                                   extractor_version="extract-1")
            if c.attachment:  # the campaigns stage reads combined.md for these alone
                runtime.blobs.put_bytes(combined_key(docket_id, c.key), data)
            rows.append({"stage": "extract", "item": c.key, "docket": docket_id, "state": "ok",
                         "run_id": "seed", "fingerprint": "seed",
                         "content_hash": hashlib.sha256(data).hexdigest()})
    item_states.transition_many(rows)


def pair_scores(truth: dict[str, str | None], found: dict[str, str]) -> tuple[float, float]:
    """(precision, recall) of group membership over pairs of comments: a pair is in a group
    when both are in the same one (an independent comment is in no planted group)."""
    def pairs(groups: dict[str, str | None]) -> set[tuple[str, str]]:
        by_group: dict[str, list[str]] = {}
        for key, group in groups.items():
            if group is not None:
                by_group.setdefault(group, []).append(key)
        return {(a, b) for members in by_group.values() for i, a in enumerate(sorted(members))
                for b in sorted(members)[i + 1:]}

    planted, grouped = pairs(truth), pairs(found)
    both = len(planted & grouped)
    precision = both / len(grouped) if grouped else 1.0
    recall = both / len(planted) if planted else 1.0
    return precision, recall
