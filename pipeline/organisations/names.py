"""What a comment says about its organisation, and the one normal form names are compared in.

A candidate comes from the record's ``organization`` field, which always wins, else is
guessed from a title such as "Comment from American Medical Association" or "AMA - Comment",
else from the organisation line of the body's signature block; it keeps the line it was read
from (``Candidate.evidence``). A guessed line is taken only when ``looks_like_organisation``
says so, the one rule for it: no address or "City, ST 12345" line, no sentence, no person's
name, and a word bodies are named with or an acronym. ``normalise`` folds the spellings people use for one
name ("The American Medical Assn., Inc." and "american medical association") to one string;
``acronym_pairs`` reads "American Medical Association (AMA)" as a pairing the docket may use
to expand a bare "AMA".
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from pipeline.organisations.given_names import GIVEN_NAMES

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
# Words only bodies are named with: one of them makes a title's or signature's line an
# organisation's name, whatever else the line holds.
BODY_WORDS = frozenset(
    "association associates council society institute foundation federation coalition alliance league "
    "committee company corporation inc incorporated llc llp ltd plc university college school hospital "
    "clinic department agency board commission authority bureau office partnership consortium cooperative "
    "coop academy ministries chamber organization network center centre group industries enterprises "
    "technologies solutions holdings pharmaceuticals pharmaceutical laboratories services systems utilities "
    "airlines manufacturing club".split()) | (LEGAL_SUFFIXES - {"l", "c", "pa", "sa"})  # "PA": Pennsylvania
# Words organisations are named with that are also surnames, places or plain words ("Jane
# Church", "Kansas City", "Anne Powers"): a cue only in a line that is no person's name.
SHARED_WORDS = frozenset(
    "union partners trust fund church project international national american states county city town "
    "tribe nation energy foods food chemical chemicals insurance capital motors bank logistics farms power "
    "health system".split())
ORGANISATION_WORDS = BODY_WORDS | SHARED_WORDS
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
# Words of a person's role in a signature ("Policy Director", "Vice President, ...").
ROLE_WORDS = frozenset("president vice chair chairman chairwoman chairperson director ceo cfo coo cto executive "
                       "manager officer counsel attorney coordinator lead founder cofounder member professor "
                       "secretary treasurer administrator analyst specialist advisor adviser consultant principal "
                       "owner editor fellow head chief supervisor superintendent commissioner mayor pastor "
                       "researcher scientist engineer".split())
ROLE_SPLIT = re.compile(r"^(?P<role>[^,]+?)(?:\s*,\s*|\s+(?:for|at|with)\s+)(?P<rest>.+)$")
# "A, B, C et al.": a list's "and others", no part of a name.
OTHERS = re.compile(r"[\s,]*(?:\bet\s+al\b\.?|\band\s+others)\s*$", re.IGNORECASE)
MOST_CHARACTERS = 120  # a longer line is a sentence or a paragraph, not a name
MOST_WORDS = 14  # "Council of State and Territorial Epidemiologists of the ..." fits
# Words that join the words of a name and are written in lower case inside one.
JOINING_WORDS = frozenset("of for and the on in at to a an by with from upon under de du la le des del da "
                          "von van y und et".split())
# Words a sentence holds and a name never does.
SENTENCE_WORDS = frozenset("is am are was were be been being i my our your his her their you he she they "
                           "please attached thank thanks".split())
HONORIFICS = frozenset("dr mr mrs ms miss mx prof professor rev reverend hon sen senator rep fr sr sister "
                       "brother".split())
CREDENTIALS = ("phd", "ph.d", "md", "m.d", "do", "rn", "np", "pa-c", "dds", "dvm", "jd", "j.d", "esq", "mba",
               "mph", "msw", "lcsw", "cpa", "pe", "p.e", "jr", "sr", "ii", "iii", "iv", "ma", "ms", "bs", "ba",
               "bsn", "msn", "dnp", "faan", "aprn", "crna", "pharmd", "lpn", "cna", "edd", "psyd", "rph", "cfp")
# A credential or generation after a name ("Jane Roe, RN", "John Smith Jr.").
CREDENTIAL_TAIL = re.compile(r"(?:[,\s]+(?:" + "|".join(re.escape(c) for c in CREDENTIALS) + r")\.?)+\s*$",
                             re.IGNORECASE)
NAME_WORD = re.compile(r"[A-Z](?:[a-z'\u2019]+(?:-[A-Z]?[a-z'\u2019]+)?|\.)|[A-Z][a-z]?[A-Z][a-z]+|[A-Z]")
US_STATES = ("Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|Georgia|Hawaii|"
             "Idaho|Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|Michigan|"
             "Minnesota|Mississippi|Missouri|Montana|Nebraska|Nevada|New Hampshire|New Jersey|New Mexico|"
             "New York|North Carolina|North Dakota|Ohio|Oklahoma|Oregon|Pennsylvania|Rhode Island|"
             "South Carolina|South Dakota|Tennessee|Texas|Utah|Vermont|Virginia|Washington|West Virginia|"
             "Wisconsin|Wyoming|District of Columbia|Puerto Rico")
STATE_CODES = ("AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY "
               "NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC PR GU VI").split()
NOT_ACRONYMS = frozenset(STATE_CODES) | frozenset(re.sub(r"[^a-z]", "", c).upper() for c in CREDENTIALS)
# "Chapel Hill, North Carolina", "Washington, D.C. 20006"; "Kansas City, MO 64111" (a state's
# code in capitals: "Acme, Co." is a company).
PLACE_LINE = re.compile(r",\s*(?:D\.\s?C\.|(?:" + US_STATES + r")\b)\.?\s*(?:\d{5}(?:-\d{4})?)?\s*$",
                        re.IGNORECASE)
PLACE_CODE = re.compile(r",\s*(?:" + "|".join(STATE_CODES) + r")\.?\s*(?P<zip>\d{5}(?:-\d{4})?)?\s*$")
ZIP_END = re.compile(r"\b(?:[A-Z]{2}|" + US_STATES + r")\.?\s+\d{5}(?:-\d{4})?\s*$", re.IGNORECASE)
STREET = re.compile(r"^\s*\d+[A-Za-z]?\s+.*\b(?:street|st|avenue|ave|road|rd|lane|ln|drive|dr|boulevard|blvd|"
                    r"way|court|ct|place|pl|circle|cir|parkway|pkwy|highway|hwy|terrace|ter|trail|trl|suite|ste|"
                    r"floor|fl|nw|ne|sw|se|route|rte)\b\.?|^\s*(?:p\.?\s?o\.?\s+box|suite|ste\.|apt\.?|"
                    r"floor)\b", re.IGNORECASE)
CONTACT = re.compile(r"@|\bwww\.|https?://|\(?\b\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}\b")


@dataclass(frozen=True)
class Candidate:
    raw: str  # as written (the pairing stripped)
    source: str  # "organization", "title" or "signature"
    acronym: str | None = None  # "AMA" when written "American Medical Association (AMA)"
    # What the name was read from, as written: the field, the title, the signature's line.
    evidence: str | None = field(default=None, compare=False)


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
    """A title's or a signature's line names an organisation: it is no address, no sentence
    and no person's name, and it holds a word organisations are named with or an acronym.

    In order: an address or "City, ST 12345" line is none ("Kansas City, MO 64111"); nor is a
    sentence ("Dr. X is an Assistant Professor of Law at ..."); a word only bodies are named
    with ("Association", "Inc.") makes it one; else a person's name ("Jane
    Church", "Anne Powers": a given name or a title, then a surname) is none, whatever its
    surname also means; else a word organisations share with surnames and places ("Church",
    "Energy"), an acronym ("AARP"), or a typo of a body's word ("Coaltion"), makes it one."""
    line = OTHERS.sub("", raw.strip()).strip(" ,;:-")
    if not line or len(line) > MOST_CHARACTERS or is_address(line) or is_sentence(line):
        return False
    words = cue_words(line)
    if words & BODY_WORDS:
        return True
    if is_person_name(line):
        return False
    if words & SHARED_WORDS or holds_acronym(line):
        return True
    # "Insuurance", "Coaltion": a typo of such a word still says so (same first letter).
    from rapidfuzz import fuzz, process

    return any(found[0][0] == w[0] for w in words if len(w) >= 6
               for found in [process.extractOne(w, ORGANISATION_WORDS, scorer=fuzz.ratio, score_cutoff=85)]
               if found)


def cue_words(line: str) -> set[str]:
    """The line's words in lower case, abbreviations written out, legal suffixes kept ("Acme
    Inc." holds "inc", which ``normalise`` drops)."""
    text = re.sub(r"[\u2019']", "", fold(line).lower())
    return {ABBREVIATIONS.get(w, w) for w in re.findall(r"[a-z0-9]+", text)}


def is_address(line: str) -> bool:
    """A street, post-office box, "City, ST 12345" or contact line of a letter's signature."""
    if STREET.search(line) or PLACE_LINE.search(line) or CONTACT.search(line) or ZIP_END.search(line):
        return True
    coded = PLACE_CODE.search(line)
    # "Acme Holdings, PA" is a professional association, not Pennsylvania.
    return bool(coded) and not cue_words(line[:coded.start()]) & BODY_WORDS


def is_sentence(line: str) -> bool:
    """Words about a name rather than a name: a lowercase word that joins no name ("is",
    "exposed") beside capitalised ones, a verb or pronoun a name never holds, too many words,
    or a full stop after several words."""
    words = re.findall(r"[A-Za-z][A-Za-z'\u2019-]*", line)
    if len(words) > MOST_WORDS:
        return True
    lowered = [w.lower() for w in words]
    if set(lowered) & SENTENCE_WORDS:
        return True
    capitalised = any(w[0].isupper() for w in words)
    if capitalised and any(w[0].islower() and w.lower() not in JOINING_WORDS and not any(c.isupper() for c in w)
                           for w in words):
        return True  # "iRobot" has a capital; "of", "and", "the" join a name's words
    last = words[-1].lower() if words else ""
    return len(words) >= 4 and line.rstrip().endswith((".", "!", "?")) and \
        last not in LEGAL_SUFFIXES and last not in ABBREVIATIONS and len(last) > 2


def holds_acronym(line: str) -> bool:
    """"AARP", "IEEE SA", "S-102 MASWG": the line is an acronym, or holds one of three or more
    letters beside words that are not all a person's ("PJ Bremier", "Ada RYAN" are names).
    Credentials ("RN", "PhD") and states ("MO") are no acronyms."""
    tokens = [t.strip(",;:()|") for t in line.split()]
    tokens = [t for t in tokens if t]
    found = [t for t in tokens if is_acronym(t) and acronym_key(t) not in NOT_ACRONYMS]
    if len(tokens) == 1 or not found:
        return bool(found)
    others = [t for t in tokens if t not in found and t.lower() not in JOINING_WORDS]
    return any(len(acronym_key(t)) >= 3 for t in found) and not all(NAME_WORD.fullmatch(t.title()) for t in others)


def is_person_name(line: str) -> bool:
    """"Jane Church", "Dr. Olia Kanevskaia", "J. Robert Smith, Jr.", "PJ Bremier": a title
    ("Dr.") or a given name or initials, then name-shaped words, two to four in all (a word
    in capitals read as a name is written)."""
    text = CREDENTIAL_TAIL.sub("", line).strip(" ,")
    tokens = [t if any(c.islower() for c in t[1:]) and not t[1:].isupper() else t.title() for t in text.split()]
    initials = bool(tokens) and re.fullmatch(r"[A-Z]{1,2}\.?|(?:[A-Z]\.){1,2}", text.split()[0]) is not None
    titled = bool(tokens) and tokens[0].lower().rstrip(".") in HONORIFICS
    if titled:
        tokens = tokens[1:]
    if not 1 <= len(tokens) <= 4 or not all(NAME_WORD.fullmatch(t) for t in tokens):
        return False
    first = tokens[0].lower().rstrip(".")
    return titled or (len(tokens) >= 2 and (first in GIVEN_NAMES or initials))


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
    """The comment's organisation as it wrote it, or None when it names none. The record's
    field always wins; a title or a signature line is a guess, kept with the line it came from."""
    if organization and names_organisation(normalise(ON_BEHALF.sub("", organization))):
        full, short = unpair(ON_BEHALF.sub("", organization).strip(" ,;:-"))
        return Candidate(full, "organization", short, organization.strip())
    named = title_name(title, submitter)
    if named:
        full, short = unpair(named)
        return Candidate(full, "title", short, title.strip())
    signed = signature_organisation(body, submitter)
    if signed:
        full, short = unpair(signed[0])
        return Candidate(full, "signature", short, signed[1])
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


def signature_organisation(body: str | None, submitter: str | None) -> tuple[str, str] | None:
    """(the organisation, the line it is on) of a signature block: within a few lines after
    the last closing ("Sincerely,"), the first line that reads as an organisation, a role
    before it left out ("Director, S-102 Mission Assurance Standards Working Group")."""
    if not body:
        return None
    lines = [line.strip() for line in body.splitlines()]
    closing = max((i for i, line in enumerate(lines) if CLOSINGS.match(line)), default=None)
    if closing is None:
        return None
    for written in [ln for ln in lines[closing + 1:] if ln][:SIGNATURE_LINES]:
        line = without_role(ON_BEHALF.sub("", written).strip(" ,;:-"))
        if not line or len(line) > MOST_CHARACTERS or (submitter and normalise(line) == normalise(submitter)):
            continue
        if looks_like_organisation(line) and names_organisation(normalise(line)):
            return line, written
    return None


def without_role(line: str) -> str:
    """The line less a role written before its organisation ("Director, Acme Association",
    "Policy Lead for Acme Association", "X is an Assistant Professor of Law at University of
    Utrecht.", "NEMA Vice President, Government Relations" -> its rest, which must then read as
    an organisation itself); "" for a line that is a role alone ("Policy Director")."""
    found = ROLE_SPLIT.match(line)
    if found and cue_words(found["role"]) & ROLE_WORDS:
        rest = found["rest"].strip(" ,;:-")
        last = re.sub(r"[^a-z]", "", rest.rsplit(" ", 1)[-1].lower())
        # "... Professor of Law at University of Utrecht.": the sentence's full stop, not "Inc."'s.
        return rest[:-1] if rest.endswith(".") and last not in LEGAL_SUFFIXES | set(ABBREVIATIONS) else rest
    return "" if cue_words(line) & ROLE_WORDS and not cue_words(line) & BODY_WORDS else line
