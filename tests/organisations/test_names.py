"""What a comment says about its organisation and the normal form names are compared in;
which names match and which never do."""

from __future__ import annotations

import pytest

from pipeline.errors import ConfigError
from pipeline.organisations.aliases import parse_aliases
from pipeline.organisations.matching import Known, VariantIndex, organisation_id, words_pair_up
from pipeline.organisations.names import Candidate, candidate, normalise


def test_spellings_of_one_name_share_one_normal_form():
    forms = {normalise(n) for n in ("American Medical Association", "The American Medical Assn., Inc.",
                                    "AMERICAN MEDICAL ASSOCIATION", "American Medical Ass'n",
                                    "Amer. Medical Assoc.")}
    assert forms == {"american medical association"}
    assert normalise("Procter & Gamble Co.") == normalise("Procter and Gamble") == "procter and gamble"
    assert normalise("U.S. Chamber of Commerce") == normalise("United States Chamber of Commerce")
    assert normalise("Texas Cattlemen's Council") == "texas cattlemens council"


def test_candidates_come_from_the_field_then_the_title_then_the_signature():
    assert candidate("American Medical Association (AMA)", "Comment from X Corp", None, None) == \
        Candidate("American Medical Association", "organization", "AMA")
    assert candidate("Jane Roe on behalf of Sierra Club", None, None, "Jane Roe") == \
        Candidate("Sierra Club", "organization")
    assert candidate(None, "Comment from American Hospital Association", None, None) == \
        Candidate("American Hospital Association", "title")
    assert candidate("", "AARP - Comments", None, None) == Candidate("AARP", "title")
    letter = "We object.\n\nSincerely,\nJane Roe\nPolicy Director\nOhio Farm Bureau Federation"
    assert candidate("N/A", "Comment from Jane Roe", letter, "Jane Roe") == \
        Candidate("Ohio Farm Bureau Federation", "signature")


def test_people_and_empty_answers_name_no_organisation():
    assert candidate(None, "Comment from Jane Doe", "I agree.\n\nSincerely,\nJane Doe", "Jane Doe") is None
    for empty in ("N/A", "None", "Self", "private citizen", "  "):
        assert candidate(empty, "Comment on FDA-2026-0001", None, None) is None
    assert candidate(None, "Comment from Bo Li", None, "Bo Li") is None


def test_similar_names_of_different_organisations_never_pair_up():
    assert not words_pair_up("american hospital association", "american health care association")
    assert not words_pair_up("ohio nurses association", "ohio nurses council")
    assert not words_pair_up("american hospital association", "american hospital association of ohio")
    assert words_pair_up("amercan medical asociation", "american medical association")
    index = VariantIndex({"american hospital association": Known("a", "American Hospital Association")})
    assert index.closest("american health care association") is None
    assert index.closest("american hospitl association").organisation == "a"


def test_ids_are_a_digest_of_the_canonical_name():
    assert organisation_id("american medical association") == organisation_id("american medical association")
    assert organisation_id("american medical association") != organisation_id("american hospital association")


def test_the_alias_file_lists_organisations_and_their_variants():
    aliases = parse_aliases("organisations:\n  - name: American Medical Association\n    variants: [AMA, Amer Med Assn]\n"
                            "  - name: American Hospital Association of Ohio\n")
    ama = aliases.listed["ama"]
    assert ama == aliases.listed["american medical association"] == aliases.listed["american medical association"]
    assert ama.organisation == organisation_id("american medical association")
    assert aliases.listed["american hospital association of ohio"].name == "American Hospital Association of Ohio"
    assert aliases.entry_digest("ama") and aliases.entry_digest("acme") == ""


@pytest.mark.parametrize("text, says", [
    ("organisations: [", "not valid YAML"),
    ("organisations: 3", "expected 'organisations:'"),
    ("organisations:\n  - variants: [AMA]\n", "needs a 'name'"),
    ("organisations:\n  - name: A Assn\n    variants: AMA\n", "must be a list"),
    ("organisations:\n  - name: A Assn\n    variants: [X]\n  - name: B Assn\n    variants: [X]\n", "listed under both"),
])
def test_a_bad_alias_file_is_one_clear_line(text, says):
    with pytest.raises(ConfigError, match=says):
        parse_aliases(text)


def test_a_typo_that_changes_the_words_order_when_sorted_still_matches():
    index = VariantIndex({"massachusetts medical coalition": Known("m", "Massachusetts Medical Coalition")})
    assert index.closest(normalise("Msasachusetts Medical Coalition")).organisation == "m"
    assert index.closest(normalise("Minnesota Medical Coalition")) is None
