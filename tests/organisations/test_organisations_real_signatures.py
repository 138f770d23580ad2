"""Organisations guessed from real letters: a signature line or title is an organisation
only when it reads as one (never a person, an address or a sentence), a list field is its
members, the record's field wins over a guess, and every name keeps the line it came from.

Run on every real comment of ../shared/realdata (the CDO pilot's dockets, NIST-2021-0006 and
the smaller ones), written to the store as backfill leaves them
(``devtools.real_organisations``) and resolved by the stage; and on generated letters and
fields shaped like them. The judged reading of every organisation the real share resolves is
``benchmarks/organisations_real_verdicts.csv`` (``python -m benchmarks organisations_real``)."""

from __future__ import annotations

import csv
import json

import pytest

from devtools.organisation_corpus import PlantedComment, seed_store
from devtools.real_organisations import real_comments
from pipeline.engine.stage import StageContext
from pipeline.organisations.names import candidate
from pipeline.organisations.stage import resolve_docket
from pipeline.store import dockets
from pipeline.store.models import Organisation, OrganisationMember
from tests.fixtures.paths import ROOT
from tests.fixtures.state_fixtures import installed, make_runtime

# Real CDO comments whose signature block the old rule read as an organisation: a person's
# name ("Jane Church", "Anne Powers", "Colleen ..." read as "College") or the city line
# under it ("Kansas City, MO 64111", "Vernon Center, NY 13477"), or a note about the writer.
NOT_ORGANISATIONS = {
    "EPA-HQ-OA-2018-0259-0900006484471bf2": "Kansas City, MO 64111",
    "EPA-HQ-OA-2018-0259-090000648447286b": "Jane Church",
    "EPA-HQ-OA-2018-0259-0900006484472a16": "Kansas City, MO 64152",
    "EPA-HQ-OA-2018-0259-09000064844744c2": "Siler City, NC 27344",
    "EPA-HQ-OA-2018-0259-090000648447590b": "Vernon Center, NY 13477",
    "EPA-HQ-OA-2018-0259-09000064845671fe": "Colleen Schafer",
    "EPA-HQ-OA-2018-0259-090000648456930c": "Colleen Cabot",
    "EPA-HQ-OA-2018-0259-090000648457dfaf": "Anne Powers",
    "EPA-HQ-OA-2018-0259-090000648457f5b2": "George Ray- Parkinson's Patient -[exposed to many Chemicals ...]",
}
CDO = ("EPA-HQ-OA-2018-0259", "EPA-HQ-OPP-2015-0481", "USDA-2020-0009")
VERDICTS = ROOT / "benchmarks" / "organisations_real_verdicts.csv"
LEAST_PRECISION = 0.95


def resolve_all(runtime, comments) -> dict[str, list[tuple[str, str, str | None]]]:
    """item -> [(organisation as shown, source, evidence), ...] after the stage ran on every docket."""
    seed_store(comments)
    for docket_id in sorted({c.docket for c in comments}):
        resolve_docket(StageContext(runtime=runtime, run_id="t"), dockets.require_docket(docket_id))
    names = dict(Organisation.select(Organisation.id, Organisation.name).tuples())
    found: dict[str, list] = {}
    for m in OrganisationMember.select().order_by(OrganisationMember.item, OrganisationMember.position):
        found.setdefault(m.item, []).append((names[m.organisation], m.source, m.evidence))
    return found


def test_the_real_share_resolves_organisations_only_and_each_keeps_its_line(tmp_path, realdata):
    comments = real_comments(realdata)
    assert {c.docket for c in comments} >= {*CDO, "NIST-2021-0006"}
    with installed(make_runtime(tmp_path)) as runtime:
        runtime.state  # noqa: B018 - open and create the schema
        found = resolve_all(runtime, comments)

    for key in NOT_ORGANISATIONS:
        assert key not in found, found.get(key)
    # The CDO letters are people's: read, no signature of their 1,567 names an organisation.
    assert not [k for k in found if k.startswith(CDO)]
    # A sentence is no name; the affiliation it gives after a role is ("... at University of Utrecht.").
    assert found["NIST-2021-0006-0031"] == [
        ("University of Utrecht", "signature",
         "Dr. Olia Kanevskaia is an Assistant Professor of Law at University of Utrecht.")]
    # The record's field wins over its signature block ("Director, S-102 ... Working Group").
    assert found["NIST-2021-0006-0011"] == [("S-102 Mission Assurance Standards Working Group, Inc.", "organization",
                                             "S-102 Mission Assurance Standards Working Group, Inc.")]
    # Fields naming several are their members, each keeping the field as its evidence.
    field = "USA Rice, U.S. Wheat Associates, U.S. Grains Council"
    assert found["USTR-2015-0010-0004"] == [(n, "organization", field) for n in
                                            ("USA Rice", "U.S. Wheat Associates", "U.S. Grains Council")]
    assert [n for n, _, _ in found["NIST-2021-0006-0014"]] == ["NCTA - The Internet & Television Association",
                                                               "CableLabs"]
    assert found["ACF-2025-0038-0004"] == [("Wisconsin Department of Children & Families", "title",
                                            "Wisconsin Department of Children & Families")]
    assert all(evidence for rows in found.values() for _, _, evidence in rows)

    # Every organisation resolved is judged by reading (the benchmark's verdicts), and right.
    with VERDICTS.open(newline="", encoding="utf-8") as f:
        verdicts = {(r["item"], r["organisation"]): r["verdict"] for r in csv.DictReader(f)}
    resolved = [(item, name) for item, rows in found.items() for name, _, _ in rows]
    assert not [pair for pair in resolved if pair not in verdicts], "resolved but never judged"
    right = sum(verdicts[pair] == "right" for pair in resolved)
    assert right / len(resolved) >= LEAST_PRECISION


LETTER = "The EPA must not move forward with this rulemaking.\r\n\r\nSincerely,\r\n"


@pytest.mark.parametrize("signature", [
    "Jane Church\r\n211 Cedar Berry Lane\r\nChapel Hill, NC 27517",  # a surname that names bodies too
    "Todd Bossart\r\nKansas City, MO 64111",  # the city line under a name
    "TODD BOSSART\r\nKANSAS CITY, MO 64111",
    "Colleen Schafer, RN\r\nVernon Center, NY 13477",  # "Colleen" is no typo of "College"
    "Anne Powers\r\nSiler City, North Carolina",
    "PJ Bremier\r\nSanta Ynez, CA 93460",  # initials, not an acronym
    "Ada RYAN",
    "Grace Church\r\nPO Box 12\r\nDurango, CO 81301",
    "George Ray- Parkinson's Patient -[exposed to many Chemicals in my younger ill-informed days]",
    "Dr. Justus Baron,\r\nDr. Olia Kanevskaia\r\n\r\nDr. Justus Baron is a Senior Research Associate in Economics.",
    "Jane Roe\r\nPolicy Director\r\njane.roe@example.org\r\n(515) 555-0100",
])
def test_a_signature_of_a_person_an_address_or_a_sentence_names_no_organisation(signature):
    assert candidate(None, "Comment on EPA-HQ-OA-2018-0259-9322", LETTER + signature, None) is None


@pytest.mark.parametrize(("signature", "name", "line"), [
    ("Jane Roe\r\nDirector, Ohio Farm Bureau Federation\r\n100 Main Street", "Ohio Farm Bureau Federation",
     "Director, Ohio Farm Bureau Federation"),
    ("Jane Roe\r\nPolicy Director\r\nNatural Resources Defense Council", "Natural Resources Defense Council",
     "Natural Resources Defense Council"),
    ("Dr. Olia Kanevskaia\r\n\r\nDr. Olia Kanevskaia is an Assistant Professor of Law at University of Utrecht.",
     "University of Utrecht", "Dr. Olia Kanevskaia is an Assistant Professor of Law at University of Utrecht."),
    ("Jo Ng\r\nSummit Energy\r\nKansas City, MO 64111", "Summit Energy", "Summit Energy"),
    ("JO NG\r\nAARP", "AARP", "AARP"),
])
def test_a_signature_organisation_is_read_with_the_line_it_is_on(signature, name, line):
    found = candidate(None, None, LETTER + signature, None)
    assert (found.raw, found.source, found.evidence) == (name, "signature", line)


def test_the_record_field_wins_over_a_title_or_a_signature_guess():
    letter = LETTER + "Jane Roe\r\nOhio Farm Bureau Federation"
    found = candidate("Sierra Club", "Comment from American Hospital Association", letter, "Jane Roe")
    assert (found.raw, found.source, found.evidence) == ("Sierra Club", "organization", "Sierra Club")
    assert candidate(None, "Comment from Anne Powers", None, None) is None  # a title naming a person
    assert candidate(None, "Comment from Kansas City, MO", None, None) is None


def test_a_coalition_field_is_its_members_and_docketeer_orgs_shows_where_each_came_from(tmp_path, capsys):
    from pipeline.ops import cli

    d = "CDO-2026-0001"
    coalition = "IDEMIA North America, Fiserv, Capital One, Mastercard, Visa, ETA, ICBA, IPA, PLC"
    comments = [
        PlantedComment(f"{d}-0001", d, "", coalition, "Comment on FR Doc # 2026-0001", "See attached file(s)", None),
        PlantedComment(f"{d}-0002", d, "", "", "Comment on FR Doc # 2026-0001",
                       LETTER + "Jane Roe\r\nDirector, Ohio Farm Bureau Federation\r\nDes Moines, IA 50309", None),
        PlantedComment(f"{d}-0003", d, "", "", "Comment on FR Doc # 2026-0001",
                       LETTER + "Jane Church\r\nKansas City, MO 64111", None),
        PlantedComment(f"{d}-0004", d, "", "", "Comment from American Farm Bureau Federation, National Farmers "
                       "Union, Sierra Club et al.", "We object.", None),
    ]
    with installed(make_runtime(tmp_path)) as runtime:
        runtime.state  # noqa: B018
        found = resolve_all(runtime, comments)
        capsys.readouterr()
        assert cli.main(["orgs", "--json"]) == 0
        listed = {o["organisation"]: o for o in json.loads(capsys.readouterr().out)["organisations"]}
        assert cli.main(["orgs", "--docket", d]) == 0
        table = capsys.readouterr().out

    assert [n for n, _, _ in found[f"{d}-0001"]] == [
        "IDEMIA North America", "Fiserv", "Capital One", "Mastercard", "Visa", "ETA", "ICBA", "IPA, PLC"]
    assert {evidence for _, _, evidence in found[f"{d}-0001"]} == {coalition}
    assert f"{d}-0003" not in found
    assert [n for n, _, _ in found[f"{d}-0004"]] == ["American Farm Bureau Federation", "National Farmers Union",
                                                     "Sierra Club"]
    assert listed["Ohio Farm Bureau Federation"]["origins"] == [
        {"source": "signature", "evidence": "Director, Ohio Farm Bureau Federation", "comments": 1}]
    assert listed["Fiserv"]["origins"] == [{"source": "field", "evidence": coalition, "comments": 1}]
    assert listed["Sierra Club"]["origins"][0]["source"] == "title"
    assert "signature: Director, Ohio Farm Bureau Federation" in table
    assert "Jane Church" not in table and "Kansas City" not in table


def test_a_guess_stored_by_the_old_resolver_is_resolved_again_and_dropped(tmp_path):
    """After the upgrade (resolver version 3), a comment whose stored organisation was a
    person's name from its signature is resolved again and keeps none."""
    from pipeline.store import item_states

    d = "EPA-HQ-OA-2018-0259"
    key = f"{d}-090000648447286b"
    with installed(make_runtime(tmp_path)) as runtime:
        runtime.state  # noqa: B018
        seed_store([PlantedComment(key, d, "", "", "", LETTER + "Jane Church\r\n211 Cedar Berry Lane", None)])
        OrganisationMember.insert(item=key, position=0, docket=d, organisation="org-jane", variant="jane church",
                                  written="Jane Church", source="signature", whole="jane church").execute()
        item_states.transition_many([{"stage": "organisations", "item": key, "docket": d, "state": "ok",
                                      "run_id": "old", "fingerprint": "resolved by organisations-2"}])
        resolve_docket(StageContext(runtime=runtime, run_id="new"), dockets.require_docket(d))
        assert OrganisationMember.select().count() == 0
        assert item_states.states_for_docket("organisations", d)[key].state == "skipped"
