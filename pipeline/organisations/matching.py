"""Which organisation a normalised name belongs to: the alias file, an exact known variant, an
acronym the docket pairs with a full name, or a close spelling of a known variant.

Close spellings are found with rapidfuzz among the known variants that share a block with
the name (a word of it, or the word's first four letters), so a name is compared with tens
of variants, not every one. Two names only match when their words pair up one to one as
the same word or a typo of it: "American Hospital Association" and "American Health Care
Association" score high as strings but "hospital" has no partner among "health care", so
they stay apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz import fuzz

from pipeline.fingerprints import digest

MATCH_SCORE = 90  # token_sort_ratio over the whole name, out of 100
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


def blocks(normalised: str) -> set[str]:
    words = [w for w in normalised.split() if w not in NOISE_WORDS] or normalised.split()
    return {w[:4] for w in words}


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

    def __init__(self, variants: dict[str, Known]):
        self.variants: dict[str, Known] = {}
        self.blocked: dict[str, list[str]] = {}
        for name in sorted(variants):
            self.add(name, variants[name])

    def add(self, normalised: str, known: Known) -> None:
        if normalised not in self.variants:
            for key in blocks(normalised):
                self.blocked.setdefault(key, []).append(normalised)
        self.variants[normalised] = known

    def exact(self, normalised: str) -> Known | None:
        return self.variants.get(normalised)

    def closest(self, normalised: str) -> Known | None:
        """The organisation of the best-scoring known variant whose words pair up with these."""
        seen: set[str] = set()
        best: tuple[float, str] | None = None
        for key in sorted(blocks(normalised)):
            for other in self.blocked.get(key, ()):
                if other in seen:
                    continue
                seen.add(other)
                score = fuzz.token_sort_ratio(normalised, other, score_cutoff=MATCH_SCORE)
                if score and words_pair_up(normalised, other) and (best is None or (score, other) > best):
                    best = (score, other)
        return self.variants[best[1]] if best else None
