"""Comments with planted positions, and a store holding them as extract, the index and the
campaigns stage leave them.

``position_comments`` writes comments that each take a side (``support`` or ``oppose``, drawn
with ``support_share``) in sentences of that side's own words, mixed with sentences on one of
``devtools.corpus_topics``' topics (which both sides write about); a campaign is one support
letter sent word for word by ``letter_copies`` people. The planted side is the truth the
positions stage and its intervals are scored against. ``seed_positions`` stores them and
groups the campaigns with the real campaigns stage.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from devtools.corpus_topics import TOPICS
from devtools.make_corpus import topic_paragraph

SUPPORT = (
    "I strongly support this proposed rule and urge the agency to finalize it without delay.",
    "Please adopt the rule as proposed; it is long overdue and will help families like mine.",
    "I applaud the agency for this proposal and ask that it be finalized quickly.",
    "This rule is a sensible step and I fully support its adoption.",
    "The benefits of this rule clearly outweigh its costs, so I support it.",
    "Thank you for proposing these protections; I support every part of the rule.",
)
OPPOSE = (
    "I oppose this proposed rule and ask the agency to withdraw it entirely.",
    "This rule is costly, burdensome and unnecessary, and it should be rejected.",
    "Please do not finalize this rule; it will hurt small businesses and workers.",
    "The agency overstepped its authority with this proposal, which I oppose.",
    "The costs of this rule far outweigh any benefit, so it must be withdrawn.",
    "I urge you to abandon this regulation; it is harmful and misguided.",
)
SIDES = {"support": SUPPORT, "oppose": OPPOSE}


@dataclass(frozen=True)
class PositionComment:
    key: str
    position: str  # the planted side: support or oppose
    paragraphs: tuple[str, ...]
    campaign: bool = False  # a copy of the campaign letter


def _comment(rng: random.Random, key: str, side: str) -> PositionComment:
    stance = " ".join(rng.sample(SIDES[side], 2))
    topic = rng.choice(TOPICS)
    return PositionComment(key, side, (stance, topic_paragraph(rng, topic, 2)))


def position_comments(docket_id: str, count: int, support_share: float = 0.4, letter_copies: int = 0,
                      seed: int = 3, start: int = 1) -> list[PositionComment]:
    """``count`` independent comments, each support with probability ``support_share``, then
    ``letter_copies`` copies of one support letter (keys numbered on from ``start``)."""
    rng = random.Random(seed)
    found = [_comment(rng, f"{docket_id}-{start + n:04d}", "support" if rng.random() < support_share else "oppose")
             for n in range(count)]
    letter = _comment(rng, "", "support").paragraphs
    found += [PositionComment(f"{docket_id}-{start + count + n:04d}", "support", letter, campaign=True)
              for n in range(letter_copies)]
    return found


def seed_positions(runtime, docket_id: str, comments: list[PositionComment], embedder) -> None:
    """The comments stored (item rows, extract's output), indexed with ``embedder`` (a chunk
    per paragraph) and grouped into campaigns by the campaigns stage."""
    from devtools.campaign_corpus import PlantedComment, seed_store
    from devtools.topic_corpus import TopicComment, seed_index
    from pipeline.campaigns.stage import group_docket
    from pipeline.engine.stage import StageContext
    from pipeline.store import dockets

    dated = "2026-03-02T12:00:00Z"
    seed_store(runtime, docket_id, [PlantedComment(c.key, dated, f"Person {c.key[-4:]}", "\n\n".join(c.paragraphs),
                                                   "", None) for c in comments])
    seed_index(runtime, docket_id, [TopicComment(c.key, c.position, c.paragraphs, dated) for c in comments], embedder)
    group_docket(StageContext(runtime=runtime, run_id="seed-campaigns"), dockets.require_docket(docket_id))
