"""The form letters of the three CDO-pilot dockets in ../shared/realdata, read by eye, and the
measures campaigns are judged by on them.

``LETTERS`` lists, per docket, each letter seen when reading the dockets' groups (docketeer's
and the pilot's ``clust``/``comp`` groups of ``labels/campaigns-cdo.csv``): a name and a copy
of it read as a clean one (its comment id). A comment *carries* a letter when it holds at
least ``SHARE`` of that copy's sentences (of five words or more) word for word (compared as
lowercase words, apostrophes dropped: the source already lost some, "EPAs"): sentences, not
docketeer's 3-shingles, and no threshold of docketeer's. ``EDITED`` are comments read one by
one and judged copies of a letter that people rewrote too much for that rule to see.
``ALERT`` is the rodenticide docket's action alert, whose paragraphs people picked from: a
comment holding any of its phrases carries it.

What is measured (``scores``):

* precision against the letters: of the pairs of comments docketeer groups, the share whose
  two comments carry a common letter or are the same text;
* containment recall: of the comments carrying one letter plus a note of their own (at least
  ``NOTE_WORDS`` words more than the letter's median copy), the share placed in the letter's
  campaign (the group holding most of its copies);
* pairwise precision and recall against the pilot's ``clust`` and ``comp`` groups.
"""

from __future__ import annotations

import csv
import json
import re
import statistics
from collections import Counter
from pathlib import Path

from devtools.campaign_corpus import PlantedComment, pair_scores

DOCKETS = ("EPA-HQ-OA-2018-0259", "EPA-HQ-OPP-2015-0481", "USDA-2020-0009")
NOTE_WORDS = 25

SHARE = 0.3
# docket -> letter -> the comment read as a clean copy of it
LETTERS: dict[str, dict[str, str]] = {
    "EPA-HQ-OA-2018-0259": {
        "attack on science (NRDC)": "0900006484566cc5",
        "three fundamental flaws (UCS)": "0900006484469c1d",
        "Parkinson's community": "090000648457b8a4",
        "personal health data": "0900006484606d69",
        "Chesapeake Bay": "09000064844876ec",
        "misleadingly titled": "090000648455799d",
        "breast cancer": "09000064845c06b6",
        "outraged": "09000064844862bb",
        "COVID and air": "09000064845dae7a",
        "business leader": "0900006484609acd",
        "Long Island Sound": "0900006484614f7a",
        "patient records": "09000064845ffdb7",
    },
    "EPA-HQ-OPP-2015-0481": {
        "like DDT": "090000648471aa4f",
        "moratorium": "090000648471d601",
        "plead": "0900006484729bf4",
        "California wildlife": "row00500003",
    },
    "USDA-2020-0009": {
        "reject the proposal (Perdue)": "0900006484310df0",
        # written for several departments at once: the middle paragraph names each one's programmes
        "unfairly favors": "09000064842f9e61",
        "humanist": "090000648437473d",
    },
}
ALERT = ("EPA-HQ-OPP-2015-0481", "super-toxic alert", (
    "these persistent poisons are first consumed by rats",
    "second generation anticoagulant rodenticides are particularly dangerous",
    "pose a safety threat to children and companion animals",
    "american association of poison control centers",
    "super toxic rat poisons are killing our countrys native wildlife",
    "protect our nations wildlife and prohibit the use of these pesticides immediately"))
# comments read one by one: copies of a letter rewritten past the sentence rule
EDITED: dict[str, str] = {
    "USDA-2020-0009-090000648438338e": "unfairly favors",
    "EPA-HQ-OA-2018-0259-09000064844736a0": "three fundamental flaws (UCS)",
    "EPA-HQ-OA-2018-0259-090000648449c2ec": "three fundamental flaws (UCS)",
    "EPA-HQ-OA-2018-0259-0900006484615c9d": "three fundamental flaws (UCS)",
    "EPA-HQ-OA-2018-0259-row93220008": "three fundamental flaws (UCS)",
    "EPA-HQ-OA-2018-0259-row93220056": "three fundamental flaws (UCS)",
    "EPA-HQ-OA-2018-0259-0900006484615cd3": "personal health data",
    "EPA-HQ-OA-2018-0259-090000648448cd52": "outraged",
    "EPA-HQ-OA-2018-0259-0900006484474af9": "three fundamental flaws (UCS)",
    "EPA-HQ-OA-2018-0259-09000064844acdeb": "breast cancer",
    "EPA-HQ-OPP-2015-0481-0900006484725aa5": "like DDT",
}
_SENTENCE = re.compile(r"[.!?]+\s|\n")
_WORD = re.compile(r"[a-z0-9]+")


def plain(text: str) -> str:
    """Lowercase words, apostrophes dropped, one space between: what phrases are found in."""
    return " ".join(_WORD.findall(re.sub(r"['\u2019]", "", text.lower())))


class Letters:
    """One docket's letters, as sentences of their clean copies, and which a comment carries."""

    def __init__(self, docket: str, texts: dict[str, str], *, read: bool = True) -> None:
        """``read``: with the comments read one by one (``EDITED``), else the rule alone."""
        self.docket, self.read = docket, read
        self.sentences = {}
        for name, suffix in LETTERS[docket].items():
            copy = texts[f"{docket}-{suffix}"]
            found = {plain(s) for s in _SENTENCE.split(copy)}
            self.sentences[name] = [s for s in found if len(s.split()) >= 5]

    def carried(self, key: str, text: str) -> set[str]:
        said = f" {plain(text)} "
        found = {name for name, sentences in self.sentences.items()
                 if sum(f" {s} " in said for s in sentences) >= SHARE * len(sentences)}
        if ALERT[0] == self.docket and any(f" {p} " in said for p in ALERT[2]):
            found.add(ALERT[1])
        if self.read and key in EDITED:
            found.add(EDITED[key])
        return found


def comments(realdata: Path, docket: str) -> list[PlantedComment]:
    """The docket's comments as the campaigns stage reads them (their text is the body)."""
    found = []
    for path in sorted(realdata.glob(f"mirror/raw-data/*/{docket}/text-{docket}/comments/*.json")):
        data = json.loads(path.read_text())["data"]
        found.append(PlantedComment(data["id"], None, "", data["attributes"]["comment"], "", None))
    return found


def pilot_groups(realdata: Path, docket: str, column: str) -> dict[str, str]:
    with (realdata / "labels" / "campaigns-cdo.csv").open() as fh:
        return {row["id"]: row[column] for row in csv.DictReader(fh) if row["docket"] == docket}


def letter_pairs_right(letters: Letters, texts: dict[str, str], found: dict[str, str]) -> tuple[int, int]:
    """(right pairs, pairs) of the groups in ``found``: a pair is right when its comments carry
    a common letter or are the same text."""
    right = total = 0
    members: dict[str, list[str]] = {}
    for item, group in found.items():
        members.setdefault(group, []).append(item)
    carried = {k: letters.carried(k, t) for k, t in texts.items()}
    for keys in members.values():
        letters_of = [carried[k] for k in keys]
        same = [plain(texts[k]) for k in keys]
        for i in range(len(keys)):
            for j in range(i + 1, len(keys)):
                total += 1
                right += bool(letters_of[i] & letters_of[j]) or same[i] == same[j]
    return right, total


def letter_with_note(letters: Letters, texts: dict[str, str]) -> dict[str, str]:
    """comment -> the one letter it carries, for those holding a note of their own too (at
    least ``NOTE_WORDS`` words more than the letter's median carrier), letters of 5+ copies."""
    # the alert has no one text a note is added to: its copies are any of its paragraphs
    single = {k: next(iter(c)) for k, t in texts.items()
              if len(c := letters.carried(k, t)) == 1 and ALERT[1] not in c}
    by_letter: dict[str, list[int]] = {}
    for k, letter in single.items():
        by_letter.setdefault(letter, []).append(len(plain(texts[k]).split()))
    median = {letter: statistics.median(n) for letter, n in by_letter.items() if len(n) >= 5}
    return {k: letter for k, letter in single.items()
            if letter in median and len(plain(texts[k]).split()) >= median[letter] + NOTE_WORDS}


def scores(realdata: Path, docket: str, texts: dict[str, str], found: dict[str, str]) -> dict:
    """The measures above for one docket's grouping ``found`` (item -> campaign; a comment
    in no group, e.g. skipped as too short, is absent)."""
    letters = Letters(docket, texts)
    right, total = letter_pairs_right(letters, texts, found)
    noted = letter_with_note(letters, texts)
    home: dict[str, str] = {}  # letter -> the group holding most of its copies
    by_letter = Counter((letter, found[k]) for k in texts if k in found for letter in letters.carried(k, texts[k]))
    for (letter, group), _ in by_letter.most_common():
        home.setdefault(letter, group)
    joined = [k for k, letter in noted.items() if found.get(k) == home.get(letter)]
    result = {"comments": len(texts), "grouped_pairs": total,
              "precision_letters": round(right / total, 4) if total else 1.0,
              "letter_plus_note": len(noted), "letter_plus_note_joined": len(joined),
              "containment_recall": round(len(joined) / len(noted), 4) if noted else 1.0,
              "missed_letter_plus_note": sorted(set(noted) - set(joined))}
    for column in ("clust", "comp"):
        truth = pilot_groups(realdata, docket, column)
        precision, recall = pair_scores(truth, found)
        pilot_right, pilot_total = letter_pairs_right(letters, texts, truth)
        result[column] = {"precision": round(precision, 4), "recall": round(recall, 4),
                          "pilot_precision_letters": round(pilot_right / pilot_total, 4) if pilot_total else 1.0}
    return result
