"""What a big docket's comments say: form letters as their senders edit them, and comments of
people's own, in a vocabulary wider than one topic's sentences.

Letters and their members' edits come from ``devtools.campaign_corpus`` (the edits its tests
show the campaign stage folds: a name and salutation of one's own, a sentence deleted or
added, paragraphs reordered, case and punctuation changed). Comments of one's own mix the
docket topic's sentences with sentences in words from every topic and rule text, at lengths
from a short paragraph to several; some are signed for an organisation.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from devtools.campaign_corpus import OWN_WORDS, letter_template, member_text
from devtools.corpus_topics import (
    CLOSINGS,
    FIRST_NAMES,
    LAST_NAMES,
    OPENINGS,
    ORGANIZATIONS,
    PLACES,
    RULE_SENTENCES,
    TOPICS,
    Topic,
)
from devtools.make_corpus import topic_sentence

# Every word of four letters or more the topic and rule sentences use, and the campaign
# corpus's own words: a comment of one's own draws its own sentences from these.
VOCABULARY = tuple(sorted({word.lower() for sentence in (*RULE_SENTENCES, *OWN_WORDS,
                                                         *(s for t in TOPICS for s in t.sentences))
                           for word in re.findall(r"[A-Za-z]{4,}", sentence)}))
ROLES = ("Policy Director", "Executive Director", "President", "Counsel", "Program Manager",
         "Board Chair", "Regulatory Affairs Lead")
# How many paragraphs a comment of one's own has, and how often: most are short.
PARAGRAPHS = (1, 2, 3, 4, 6)
PARAGRAPH_WEIGHTS = (3, 4, 3, 2, 1)
ORGANISATION_SHARE = 0.2  # comments of one's own signed for an organisation


@dataclass(frozen=True)
class Sender:
    """Who a comment is from, as its record's fields and its signature say."""

    first_name: str
    last_name: str
    organization: str | None
    title: str  # the record's title: "Comment from ..."
    signature: str

    @property
    def name(self) -> str:
        return f"{self.first_name} {self.last_name}"


def person(rng: random.Random) -> Sender:
    first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
    return Sender(first, last, None, f"Comment from {first} {last}", f"{first} {last}\n{rng.choice(PLACES)}")


def sender(rng: random.Random) -> Sender:
    """A person, or (``ORGANISATION_SHARE``) someone writing for an organisation."""
    one = person(rng)
    if rng.random() >= ORGANISATION_SHARE:
        return one
    organisation = rng.choice(ORGANIZATIONS)
    return Sender(one.first_name, one.last_name, organisation, f"Comment from {organisation}",
                  f"{one.name}\n{rng.choice(ROLES)}, {organisation}")


def personal_sentence(rng: random.Random) -> str:
    words = rng.choices(VOCABULARY, k=rng.randint(8, 20))  # one call: a choice a word costs twice as much
    return " ".join(words).capitalize() + rng.choice((".", ".", ".", "!", "?"))


TRACKING_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def tracking_number(rng: random.Random) -> str:
    """A tracking number like regulations.gov's ``mg1-9xq4-7h2k``, from one draw."""
    chars = rng.choices(TRACKING_ALPHABET, k=11)
    return f"{''.join(chars[:3])}-{''.join(chars[3:7])}-{''.join(chars[7:])}"


def own_comment(rng: random.Random, topic: Topic, signer: Sender) -> str:
    """A comment of one's own: an opening, paragraphs of the topic's sentences and one's own
    words, a closing and the signature."""
    paragraphs = []
    for _ in range(rng.choices(PARAGRAPHS, PARAGRAPH_WEIGHTS)[0]):
        sentences = [topic_sentence(rng, s) for s in rng.sample(topic.sentences, rng.randint(1, 2))]
        sentences += [personal_sentence(rng) for _ in range(rng.randint(1, 3))]
        rng.shuffle(sentences)
        paragraphs.append(" ".join(sentences))
    opening = [rng.choice(OPENINGS)] if rng.random() < 0.6 else []
    return "\n\n".join([*opening, *paragraphs, f"{rng.choice(CLOSINGS)}\n{signer.signature}"])


def letters(docket_id: str, seed: int, topic: Topic, count: int) -> list[list[list[str]]]:
    """The docket's ``count`` form letters (paragraphs of sentences), from the seed alone."""
    return [letter_template(random.Random(f"{seed}/{docket_id}/letter/{n}"), topic) for n in range(count)]


def letter_as_sent(rng: random.Random, letter: list[list[str]], signer: Sender) -> str:
    """A member's copy of a form letter, with its small personal edits."""
    return member_text(rng, letter, signer.name)


def letter_itself(letter: list[list[str]]) -> str:
    """The letter as its campaign hands it out (what a member's attached copy says)."""
    return "\n\n".join(["Dear Administrator,", *(" ".join(p) for p in letter), "Sincerely,"])
