"""Which organisation a normalised name belongs to: the alias file, an exact known variant, an
acronym the docket pairs with a full name, or a close spelling of a known variant.

Two names only match when their words pair up one to one as the same word or a typo of it
that keeps its first letter: "American Hospital Association" and "American Health Care
Association" score high as strings but "hospital" has no partner among "health care", so
they stay apart. So names that can match share their words' first letters, and that is the
block: a name is compared (by rapidfuzz, in C) only with the known variants of its block
("aam" for "american medical association"), tens of them, not every one.
"""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz import fuzz, process

from pipeline.fingerprints import digest

MATCH_SCORE = 90  # rapidfuzz ratio over the whole name (as written or words sorted), out of 100
WORD_SCORE = 80  # ratio at which two words are one word with a typo
SHORT_WORD = 4  # a word this short must match exactly ("of" is not "or")
NOISE_WORDS = frozenset({"of", "for", "and", "the", "in", "on", "at", "to"})


def organisation_id(normalised_name: str) -> str:
    """Stable: the same canonical name gives the same id in any store, at any time."""
    return "org-" + digest("organisation", normalised_name)[:16]


@dataclass(frozen=True)
class Known:
    organisation: str  # organisation id
    name: str  # its canonical name


def block(normalised: str) -> str:
    """The first letters of the name's words, sorted (small words left out): every name
    whose words pair up with these has the same."""
    words = [w for w in normalised.split() if w not in NOISE_WORDS] or normalised.split()
    return "".join(sorted(w[0] for w in words))


def words_pair_up(a: str, b: str) -> bool:
    """Every word of one name has its own partner in the other: the same word, or (longer
    words) the same word with a typo. The small words ("of", "and") are left out."""
    left = [w for w in a.split() if w not in NOISE_WORDS]
    right = [w for w in b.split() if w not in NOISE_WORDS]
    if len(left) != len(right):
        return False
    unmatched = list(right)
    for word in left:
        if word in unmatched:
            unmatched.remove(word)
            continue
        partner = next((o for o in unmatched if len(word) > SHORT_WORD and len(o) > SHORT_WORD
                        and o[0] == word[0] and fuzz.ratio(word, o) >= WORD_SCORE), None)
        if partner is None:
            return False
        unmatched.remove(partner)
    return not unmatched


class VariantIndex:
    """The known variants (normalised name -> organisation), blocked for close-spelling look-ups."""

    CANDIDATES = 10  # best-scoring variants of a block checked word by word

    def __init__(self, variants: dict[str, Known]):
        self.variants: dict[str, Known] = {}
        self.blocked: dict[str, list[str]] = {}
        for name in sorted(variants):
            self.add(name, variants[name])

    def add(self, normalised: str, known: Known) -> None:
        if normalised not in self.variants:
            self.blocked.setdefault(block(normalised), []).append(normalised)
        self.variants[normalised] = known

    def exact(self, normalised: str) -> Known | None:
        return self.variants.get(normalised)

    def closest(self, normalised: str) -> Known | None:
        """The organisation of the best-scoring known variant whose words pair up with these
        (the highest score, then the first name in order: the same answer every time)."""
        candidates = self.blocked.get(block(normalised), ())
        # In the order written ("Msasachusetts Medical" sorts its words unlike "Massachusetts
        # Medical") and with the words sorted ("Association of American X" reordered).
        scores: dict[str, float] = {}
        for scorer in (fuzz.ratio, fuzz.token_sort_ratio):
            for other, score, _ in process.extract(normalised, candidates, scorer=scorer,
                                                   score_cutoff=MATCH_SCORE, limit=self.CANDIDATES):
                scores[other] = max(score, scores.get(other, 0))
        for other in sorted(scores, key=lambda name: (-scores[name], name)):
            if words_pair_up(normalised, other):
                return self.variants[other]
        return None
