"""Comments from planted organisations, written the many ways people write one name, and the
truth about them.

Each organisation has a canonical name built from a place, a field and a kind ("Ohio Nurses
Association", "American Health Care Association"): many share all but one word, as real ones
do. Its comments write the name as people do: in capitals, with "The" or ", Inc.",
"Assn."/"Assoc." for "Association", "&" for "and", a typo in a long word, "Jane Doe on behalf
of …", paired with its acronym ("… (ONA)") and, in the same docket, the bare acronym; or with
the field left empty and the name in the title ("Comment from …") or in the signature block.
People write too, with no organisation, "N/A" or "Self". ``truth`` says which organisation
each comment is from (None: none), for pairwise precision and recall of the grouping.

``seed_store`` writes them as backfill leaves them (item rows and backfill state rows), so
the organisations stage runs on them alone. ``python -m devtools.organisation_corpus OUT``
writes ``comments.jsonl`` and ``truth.json`` there.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path

from devtools.corpus_topics import FIRST_NAMES, LAST_NAMES

PLACES = ("American", "National", "Ohio", "Texas", "California", "Rural", "Northeast", "Pacific",
          "Western", "Florida", "Michigan", "United States", "International", "Southern", "Alabama", "Alaska",
          "Arizona", "Arkansas", "Colorado", "Connecticut", "Delaware", "Georgia", "Hawaii", "Idaho", "Illinois",
          "Indiana", "Iowa", "Kansas", "Kentucky", "Louisiana", "Maine", "Maryland", "Massachusetts",
          "Minnesota", "Mississippi", "Missouri", "Montana", "Nebraska", "Nevada", "New Hampshire",
          "New Jersey", "New Mexico", "New York", "North Carolina", "North Dakota", "Oklahoma", "Oregon",
          "Pennsylvania", "Rhode Island", "South Carolina", "South Dakota", "Tennessee", "Utah", "Vermont",
          "Virginia", "Washington", "West Virginia", "Wisconsin", "Wyoming", "Midwest", "Gulf Coast")
FIELDS = ("Medical", "Hospital", "Health Care", "Nurses", "Farm Bureau", "Dairy Farmers", "Trucking",
          "Bankers", "Realtors", "Pharmacists", "Home Builders", "Electric Cooperative", "Wildlife",
          "Water Works", "Public Health", "Dental", "Soybean", "Beverage", "Chemistry", "Retail",
          "Cattlemen's", "Physical Therapy", "Community Colleges", "Counties", "Mayors", "Libraries")
KINDS = ("Association", "Council", "Federation", "Society", "Coalition", "Alliance", "Institute",
         "Foundation", "League", "Network")
COMPANY_WORDS = ("Summit", "Keystone", "Bluewater", "Redwood", "Granite", "Meridian", "Harbor", "Prairie",
                 "Evergreen", "Liberty", "Cascade", "Sterling", "Frontier", "Pinnacle", "Heritage")
COMPANY_KINDS = ("Energy", "Foods", "Pharmaceuticals", "Logistics", "Health Partners", "Chemical",
                 "Insurance", "Capital", "Seed Company", "Motors")
SUFFIXES = (", Inc.", " Inc", " LLC", ", L.L.C.", " Corp.", " Corporation", " Co.")
ABBREVIATED = {"Association": ("Assn.", "Assoc.", "Ass'n"), "National": ("Nat'l", "Natl."),
               "International": ("Intl.", "Int'l"), "American": ("Amer.",), "Hospital": ("Hosp.",),
               "United States": ("U.S.", "US"), "Institute": ("Inst.",), "Society": ("Soc.",),
               "Foundation": ("Fdn.",), "Council": ("Cncl.",)}
NO_ORGANISATION = ("", "", "", "N/A", "None", "Self", "Individual", "Private Citizen")


@dataclass(frozen=True)
class PlantedComment:
    key: str
    docket: str
    submitter: str
    organization: str  # the record's field ("" when empty)
    title: str
    body: str
    organisation: str | None  # the planted organisation's canonical name (None: a person alone)


def planted_names(rng: random.Random, count: int) -> list[str]:
    """``count`` distinct names, associations and companies, many a word apart."""
    names: set[str] = set()
    while len(names) < count:
        if rng.random() < 0.8:
            name = f"{rng.choice(PLACES)} {rng.choice(FIELDS)} {rng.choice(KINDS)}"
        else:
            name = f"{rng.choice(COMPANY_WORDS)} {rng.choice(COMPANY_KINDS)}"
        names.add(name)
    return sorted(names)


def acronym(name: str) -> str:
    return "".join(w[0] for w in name.replace("'", "").split() if w[0].isupper())


def typo(rng: random.Random, name: str) -> str:
    """One letter dropped, doubled or swapped with its neighbour, inside a long word."""
    words = name.split()
    long = [i for i, w in enumerate(words) if len(w) >= 7 and w.isalpha()]
    if not long:
        return name
    i = rng.choice(long)
    word, at = words[i], rng.randrange(2, len(words[i]) - 1)
    how = rng.choice(("drop", "double", "swap"))
    if how == "drop":
        word = word[:at] + word[at + 1:]
    elif how == "double":
        word = word[:at] + word[at] + word[at:]
    else:
        word = word[:at - 1] + word[at] + word[at - 1] + word[at + 1:]
    words[i] = word
    return " ".join(words)


def variant(rng: random.Random, name: str, company: bool) -> str:
    """One way people write ``name``."""
    how = rng.choice(("as is", "as is", "upper", "the", "suffix", "abbreviated", "and", "typo", "lower"))
    if how == "upper":
        return name.upper()
    if how == "lower":
        return name.lower()
    if how == "the":
        return "The " + name
    if how == "suffix" and company:
        return name + rng.choice(SUFFIXES)
    if how == "abbreviated":
        words = [w for w in ABBREVIATED if w in name]
        if words:
            word = rng.choice(words)
            return name.replace(word, rng.choice(ABBREVIATED[word]))
    if how == "and" and " and " in name:
        return name.replace(" and ", " & ")
    if how == "typo":
        return typo(rng, name)
    return name


def person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


def organisation_comments(dockets: list[str], organisations: int, per_docket: int,
                          seed: int = 7, people_share: float = 0.25) -> list[PlantedComment]:
    rng = random.Random(seed)
    names = planted_names(rng, organisations)
    companies = {n for n in names if n.split()[-1] not in KINDS}
    comments = []
    for docket in dockets:
        present = rng.sample(names, min(len(names), max(1, per_docket // 3)))
        # A bare acronym is written only where the docket pairs it, and only one of its
        # organisations there uses it (two "AHA"s in one docket are no pairing).
        initials: dict[str, list[str]] = {}
        for name in present:
            initials.setdefault(acronym(name), []).append(name)
        pairable = {n for group in initials.values() if len(group) == 1 for n in group if len(acronym(n)) >= 3}
        paired: set[str] = set()
        for n in range(1, per_docket + 1):
            key = f"{docket}-{n:04d}"
            who = person(rng)
            if rng.random() < people_share:
                comments.append(PlantedComment(key, docket, who, rng.choice(NO_ORGANISATION),
                                               f"Comment from {who}", "I support the rule.\n\nSincerely,\n" + who, None))
                continue
            name = rng.choice(present)
            written = variant(rng, name, name in companies)
            where = rng.random()
            organization, title, body = written, f"Comment from {who}", "Please see our views below."
            if name in pairable and name not in paired and where < 0.25:
                organization = f"{name} ({acronym(name)})"
                paired.add(name)
            elif name in paired and where < 0.15:
                organization = acronym(name)
            elif where < 0.25:
                organization = f"{who} on behalf of {written}"
            elif where < 0.35:
                organization, title = "", f"Comment from {written}"
            elif where < 0.42:
                organization, title = "", f"{written} - Comments"
            elif where < 0.5:
                organization = ""
                body = f"We write about the proposed rule.\n\nSincerely,\n\n{who}\nPolicy Director\n{written}"
            comments.append(PlantedComment(key, docket, who, organization, title, body, name))
    return comments


# Single names written like lists: never split.
LIST_LIKE_NAMES = ("Johnson & Johnson", "Procter and Gamble", "Department of Health and Human Services",
                   "Alliance of Farmers and Ranchers", "Smith and Jones Foundation", "Barnes & Noble",
                   "Wisconsin Department of Children & Families", "Bureau of Alcohol, Tobacco and Firearms",
                   "Council of State and Territorial Epidemiologists", "Ben & Jerry's", "Acme, Inc.",
                   "Association of Schools and Colleges", "Arnold & Porter", "Center for Science and Democracy")
LIST_FORMS = ("{a}; {b}", "{a} and {b}", "{a} & {b}", "{a}, {b}, and {c}", "{a}; {b}; {c}",
              "Jane Doe on behalf of {a} and {b}", "{a}, {b} and {c}")


def multi_organisation_fields(rng: random.Random, names: list[str], count: int) -> list[tuple[str, list[str]]]:
    """``count`` fields each naming two or three of the planted associations (companies'
    names hold no word saying they are a body, so a list of them is not split), in the ways
    people list them, with the names they hold."""
    bodies = [n for n in names if n.split()[-1] in KINDS]
    found = []
    for _ in range(count):
        form = rng.choice(LIST_FORMS)
        chosen = rng.sample(bodies, 3 if "{c}" in form else 2)
        found.append((form.format(**dict(zip("abc", chosen, strict=False))), chosen))
    return found


def truth(comments: list[PlantedComment]) -> dict[str, str | None]:
    return {c.key: c.organisation for c in comments}


def seed_store(comments: list[PlantedComment]) -> None:
    """The comments as backfill leaves them: item rows with their record's fields and a
    backfill ``ok`` row each (the runtime's state DB must be open)."""
    from pipeline.clock import iso, utcnow
    from pipeline.store import dockets, item_states
    from pipeline.store.models import Item, database

    dockets.ensure_dockets(sorted({c.docket for c in comments}), "list")
    now = iso(utcnow())
    rows = []
    with database.atomic():
        for c in comments:
            detail = hashlib.sha256(json.dumps([c.organization, c.body, c.submitter]).encode()).hexdigest()
            summary = hashlib.sha256(c.title.encode()).hexdigest()
            fields = {Item.docket: c.docket, Item.kind: "comment", Item.title: c.title, Item.submitter: c.submitter,
                      Item.organization: c.organization or None, Item.body: c.body, Item.summary_hash: summary,
                      Item.detail_hash: detail, Item.detail_summary_hash: summary, Item.updated_at: now}
            Item.insert({Item.key: c.key, Item.created_at: now, **fields}).on_conflict(
                conflict_target=[Item.key], update=fields).execute()
            rows.append({"stage": "backfill", "item": c.key, "docket": c.docket, "state": "ok",
                         "run_id": "seed", "fingerprint": summary, "content_hash": detail})
    item_states.transition_many(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--dockets", type=int, default=3)
    parser.add_argument("--organisations", type=int, default=200)
    parser.add_argument("--comments", type=int, default=1000, help="comments per docket")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    dockets = [f"ORG-2026-{n:04d}" for n in range(1, args.dockets + 1)]
    comments = organisation_comments(dockets, args.organisations, args.comments, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "comments.jsonl").open("w") as out:
        for c in comments:
            out.write(json.dumps(asdict(c)) + "\n")
    (args.out / "truth.json").write_text(json.dumps(truth(comments), indent=1))
    print(f"{len(comments)} comments from {args.organisations} organisations in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
