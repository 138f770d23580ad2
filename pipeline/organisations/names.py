"""What a comment says about its organisation, and the one normal form names are compared in.

A candidate comes from the record's ``organization`` field, else from a title such as
"Comment from American Medical Association" or "AMA - Comment", else from the organisation
line of the body's signature block. ``normalise`` folds the spellings people use for one
name ("The American Medical Assn., Inc." and "american medical association") to one string;
``acronym_pairs`` reads "American Medical Association (AMA)" as a pairing the docket may use
to expand a bare "AMA".
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# Words that end a name without telling organisations apart ("Acme Inc" is "Acme LLC").
LEGAL_SUFFIXES = frozenset("inc incorporated llc l l c ltd limited co corp corporation plc lp llp pc pllc "
                           "pa gmbh sa".split())
# Abbreviations written for a whole word.
ABBREVIATIONS = {
    "assn": "association", "assoc": "association", "asso": "association", "ass'n": "association",
    "natl": "national", "nat'l": "national", "amer": "american", "intl": "international",
    "int'l": "international", "dept": "department", "univ": "university", "cncl": "council",
    "fdn": "foundation", "fed": "federation", "soc": "society", "inst": "institute", "ctr": "center",
    "centre": "center", "hosp": "hospital", "med": "medical", "mfrs": "manufacturers", "us": "united states",
    "usa": "united states", "govt": "government", "cmte": "committee", "comm": "committee", "svcs": "services",
    "svc": "services", "org": "organization", "organisation": "organization", "st": "saint",
}
# A field value that names no organisation.
NO_ORGANISATION = frozenset({
    "", "n a", "na", "none", "self", "individual", "private citizen", "citizen", "private", "personal",
    "myself", "retired", "unemployed", "not applicable", "no", "nope", "anonymous", "public", "me",
    "self employed", "concerned citizen", "private individual", "home", "student", "unknown", "other",
})
# Words that make a title's or signature's line an organisation rather than a person.
ORGANISATION_WORDS = frozenset(
    "association council society institute foundation federation union coalition alliance league "
    "committee company corporation inc llc ltd group network center university college school "
    "hospital health system systems services department agency board commission authority "
    "partners partnership trust fund club chamber bureau office center centre clinic church "
    "ministries project organization network academy consortium cooperative coop industries "
    "international national american states county city town tribe nation energy foods food "
    "pharmaceuticals pharmaceutical logistics chemical chemicals insurance capital motors bank "
    "holdings technologies solutions enterprises manufacturing farms utilities power airlines".split())
# Words that name the kind of body: a title that is nothing but a name holds one.
KIND_WORDS = frozenset(
    "association associates council society institute foundation federation coalition alliance league "
    "committee company corporation inc llc ltd university college hospital department agency board "
    "commission authority chamber bureau office union club network center centre trust partnership "
    "cooperative consortium academy ministries church tribe".split())
TITLE_MOST_WORDS = 10
ON_BEHALF = re.compile(r"^.*?\bon behalf of\b\s*", re.IGNORECASE)
TITLE_FROM = re.compile(r"^\s*comments?\s+(?:from|submitted by|by|of|on behalf of)\s+(?P<name>.+?)\s*$",
                        re.IGNORECASE)
TITLE_DASH = re.compile(r"^\s*(?P<name>.+?)\s+[-\u2013\u2014]\s+comments?\b.*$", re.IGNORECASE)
PAIRED = re.compile(r"^(?P<full>[^()]+?)\s*\((?P<short>[A-Za-z&.\- ]{2,12})\)\s*$")
PAIRED_REVERSED = re.compile(r"^(?P<short>[A-Z][A-Z&.\-]{1,10})\s*\((?P<full>[^()]{6,})\)\s*$")
CLOSINGS = re.compile(r"^\s*(sincerely|respectfully(?: submitted)?|regards|best regards|kind regards|"
                      r"thank you|thanks|yours truly|very truly yours|cordially|best)\b[,.!]*\s*$",
                      re.IGNORECASE)
SIGNATURE_LINES = 6  # lines after a closing that may hold the name, title and organisation


@dataclass(frozen=True)
class Candidate:
    raw: str  # as written (the pairing stripped)
    source: str  # "organization", "title" or "signature"
    acronym: str | None = None  # "AMA" when written "American Medical Association (AMA)"


def fold(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def normalise(name: str) -> str:
    """The form names are compared in: lower case, ASCII, "&" as "and", no punctuation, no
    leading "The", no legal suffix, abbreviations written out."""
    text = fold(name).lower().replace("&", " and ").replace("+", " and ")
    text = re.sub(r"\b(ass)'n\b", "assn", text)
    text = re.sub(r"\b(nat|int)'l\b", r"\1l", text)
    text = re.sub(r"[\u2019']", "", text)  # "Cattlemen's" is "Cattlemens", not "Cattlemen s"
    text = re.sub(r"(?<=\b[a-z])\.(?=[a-z]\.)", "", text)  # "u.s." -> "us."
    text = re.sub(r"[^a-z0-9 ]+", " ", text)
    words = [ABBREVIATIONS.get(w, w) for w in text.split()]
    words = " ".join(words).split()
    while words and words[0] == "the":
        words = words[1:]
    while len(words) > 1 and words[-1] in LEGAL_SUFFIXES:
        words = words[:-1]
    return " ".join(words)


def is_acronym(raw: str) -> bool:
    """"AMA", "A.M.A.", "AARP": one short word in capitals."""
    letters = re.sub(r"[.&\-\s]", "", raw.strip())
    return 2 <= len(letters) <= 8 and letters.isalpha() and letters.isupper() and " " not in raw.strip()


def acronym_key(raw: str) -> str:
    """"A.M.A." and "AMA" are the acronym "AMA"."""
    return re.sub(r"[^A-Za-z]", "", raw).upper()


def names_organisation(normalised: str) -> bool:
    return normalised not in NO_ORGANISATION and any(c.isalpha() for c in normalised)


def looks_like_organisation(raw: str) -> bool:
    """A title's or a signature's line names an organisation, not a person: it holds a word
    organisations are named with, or is an acronym."""
    words = set(normalise(raw).split())
    if words & ORGANISATION_WORDS or is_acronym(raw):
        return True
    # "Insuurance", "Coaltion": a typo of such a word still says so.
    from rapidfuzz import fuzz, process

    return any(process.extractOne(w, ORGANISATION_WORDS, scorer=fuzz.ratio, score_cutoff=85)
               for w in words if len(w) >= 6)


def unpair(raw: str) -> tuple[str, str | None]:
    """("American Medical Association", "AMA") from "American Medical Association (AMA)" or
    "AMA (American Medical Association)"; (raw, None) for any other name."""
    text = raw.strip()
    for pattern in (PAIRED, PAIRED_REVERSED):
        found = pattern.match(text)
        if found:
            full, short = found["full"].strip(), found["short"].strip()
            if is_acronym(short) and initials_fit(short, full):
                return full, acronym_key(short)
    return text, None


def initials_fit(short: str, full: str) -> bool:
    """"AMA" fits "American Medical Association": its letters are the words' initials in order
    (small words such as "of" may be skipped)."""
    letters = re.sub(r"[^A-Za-z]", "", short).lower()
    words = re.sub(r"[^a-z0-9 ]", " ", re.sub(r"[\u2019']", "", fold(full).lower()).replace("&", " ")).split()
    i = 0
    for word in words:
        if i < len(letters) and word[0] == letters[i]:
            i += 1
        elif word not in ("of", "for", "the", "and", "in", "on", "to"):
            return False
    return i == len(letters)


def candidate(organization: str | None, title: str | None, body: str | None,
              submitter: str | None) -> Candidate | None:
    """The comment's organisation as it wrote it, or None when it names none."""
    if organization and names_organisation(normalise(ON_BEHALF.sub("", organization))):
        full, short = unpair(ON_BEHALF.sub("", organization).strip(" ,;:-"))
        return Candidate(full, "organization", short)
    named = title_name(title, submitter)
    if named:
        full, short = unpair(named)
        return Candidate(full, "title", short)
    signed = signature_organisation(body, submitter)
    if signed:
        full, short = unpair(signed)
        return Candidate(full, "signature", short)
    return None


def title_name(title: str | None, submitter: str | None) -> str | None:
    if not title:
        return None
    found = TITLE_FROM.match(title) or TITLE_DASH.match(title)
    if found:
        name = ON_BEHALF.sub("", found["name"]).strip(" ,;:-")
    elif bare_name(title):
        name = title.strip()
    else:
        return None
    if submitter and normalise(name) == normalise(submitter):
        return None  # a person's own name
    if not names_organisation(normalise(name)) or not looks_like_organisation(name):
        return None
    return name


def bare_name(title: str) -> bool:
    """A title that is an organisation's name alone ("Wisconsin Department of Children &
    Families"): a few words, one of them a kind of body, no sentence, no docket reference."""
    words = normalise(title).split()
    written = [w for w in re.findall(r"[A-Za-z][\w'-]*", title) if len(w) > 3]
    title_case = all(w[0].isupper() for w in written)  # a name, not a sentence about one
    return (0 < len(words) <= TITLE_MOST_WORDS and title_case and bool(set(words) & KIND_WORDS)
            and not re.search(r"[.!?:]\s|\d{4}|^\s*(comments?|re|request|response|support|opposition)\b",
                              title, re.IGNORECASE))


def signature_organisation(body: str | None, submitter: str | None) -> str | None:
    """The organisation line of a signature block: within a few lines after the last closing
    ("Sincerely,"), the first line that reads as an organisation."""
    if not body:
        return None
    lines = [line.strip() for line in body.splitlines()]
    closing = max((i for i, line in enumerate(lines) if CLOSINGS.match(line)), default=None)
    if closing is None:
        return None
    for line in [ln for ln in lines[closing + 1:] if ln][:SIGNATURE_LINES]:
        line = ON_BEHALF.sub("", line).strip(" ,;:-")
        if len(line) > 120 or (submitter and normalise(line) == normalise(submitter)):
            continue
        if looks_like_organisation(line) and names_organisation(normalise(line)):
            return line
    return None
