"""Campaigns of commenters' own words: an agency form many organisations filled in is not a
letter, placeholder bodies whose files have no text join nothing, and a comment holding a
whole letter plus a long addition of its own joins the letter's campaign."""

from __future__ import annotations

import pytest

from devtools.campaign_corpus import (
    PlantedComment,
    campaign_comments,
    filled_forms,
    form_template,
    pair_scores,
    seed_documents,
    seed_store,
)
from pipeline.campaigns import queries as campaigns
from pipeline.campaigns import text
from pipeline.campaigns.stage import group_docket
from pipeline.engine.stage import StageContext
from pipeline.runtime import set_runtime
from pipeline.store import dockets, item_states
from pipeline.store.models import Campaign, CampaignMember
from tests.fixtures.state_fixtures import make_runtime

D = "NIST-2026-0001"
NOTICE = "NIST-2026-0001-0001"


def group(rt):
    return group_docket(StageContext(runtime=rt, run_id="test"), dockets.require_docket(D))


def membership() -> dict[str, str]:
    return dict(CampaignMember.select(CampaignMember.item, CampaignMember.campaign).tuples())


def skipped() -> dict[str, str]:
    return {k: r.reason for k, r in item_states.rows_in_states("campaigns", D, ("skipped",)).items()}


# --- the docket's own documents ------------------------------------------------------------------

def test_sixty_organisations_filling_the_agencys_form_are_not_one_letter(rt):
    forms = filled_forms(D, 66, shared_answers=6)
    seed_documents(rt, D, {NOTICE: [("content.pdf", "Request for information on standards. " * 3),
                                    ("questionnaire.xlsx", form_template())]})
    seed_store(rt, D, forms)
    group(rt)
    found = membership()
    # Each company's own answers are compared: 60 different comments, not one "form letter"
    # (one that answered little more than yes and no is too short to judge) ...
    alone = [c.key for c in forms if c.campaign is None]
    assert all(found[k] == k for k in alone if k in found)
    assert set(alone) - set(found) == set(skipped()) and len(found) >= 50
    # ... while the six that answered alike are the campaign they are.
    precision, recall = pair_scores({c.key: c.campaign for c in forms}, found)
    assert (precision, recall) == (1.0, 1.0)
    assert [c.size for c in campaigns.campaigns_of(D)] == [6]


def test_the_forms_are_one_group_when_the_template_is_not_a_document_of_the_docket(rt):
    """What the test above guards against: without the agency's form among the documents its
    questions are what the comments share, and they look like one letter."""
    seed_store(rt, D, filled_forms(D, 66, shared_answers=6))
    group(rt)
    assert max(c.size for c in campaigns.campaigns_of(D)) >= 50


def test_a_document_placed_later_places_every_comment_again(rt):
    forms = filled_forms(D, 20)
    seed_store(rt, D, forms)
    group(rt)
    assert max(c.size for c in campaigns.campaigns_of(D)) >= 15
    seed_documents(rt, D, {NOTICE: [("questionnaire.xlsx", form_template())]})
    counts = group(rt).counts  # the documents' hashes are in each fingerprint
    assert counts["placed"] + counts.get("too_short", 0) == 20
    assert campaigns.campaigns_of(D) == []


def test_the_documents_text_is_left_out_piece_by_piece_and_run_by_run():
    docket_text = text.DocketText([form_template(), "The Department proposes to amend the rules on widget safety today."])
    said = ("Name of the responding organization | Acme Widgets\nAs the notice says, the Department proposes "
            "to amend the rules on widget safety; we disagree.")
    assert text.normalise(said, None, docket_text) == "acme widgets as the notice says we disagree"
    assert text.normalise(said) == " ".join(text.words(said))  # no documents: every word


# --- placeholder bodies --------------------------------------------------------------------------

@pytest.mark.parametrize("body", ["See attached file(s)", "See Attached", "Please see the attached.",
                                  "Please see attached comments.", "See attached file(s)\n\nSincerely,\nJo Ames"])
def test_a_placeholder_body_has_no_words_of_its_own(body):
    assert text.too_short(text.normalise(body, "Jo Ames"))


def test_see_attached_bodies_whose_files_have_no_text_join_no_campaign(rt):
    letters = campaign_comments(D, 30, campaigns=2, attached_share=0.0)
    unreadable = [PlantedComment(f"{D}-9{i:03d}", f"2026-02-0{1 + i % 9}T10:00:00Z", name, body, "", None,
                                 unreadable="corrupt PDF: no /Root object")
                  for i, (name, body) in enumerate([("Ann Lee", "See attached file(s)"), ("Bo Ruiz", "See Attached"),
                                                    ("Cy Park", "Please see the attached"),
                                                    ("Di Moss", "See attached file(s)")])]
    seed_store(rt, D, letters + unreadable)
    result = group(rt)
    reasons = skipped()
    assert sorted(reasons) == [c.key for c in unreadable]
    assert all(r.startswith("too short to compare: 0 words of its own") for r in reasons.values())
    assert result.counts["too_short"] == 4 and not set(membership()) & set(reasons)
    # the letters around them are grouped as before
    precision, recall = pair_scores({c.key: c.campaign for c in letters}, membership())
    assert precision >= 0.95 and recall >= 0.95


def test_a_comment_that_becomes_a_placeholder_leaves_its_campaign(rt):
    letters = campaign_comments(D, 40, campaigns=1, campaign_share=1.0, attached_share=0.0)
    seed_store(rt, D, letters)
    group(rt)
    member = letters[5]
    assert campaigns.campaign_of_item(member.key).size == 40
    seed_store(rt, D, [PlantedComment(member.key, member.posted_date, member.submitter, "See attached file(s)",
                                      "", None, unreadable="corrupt PDF")])
    assert group(rt).counts == {"too_short": 1}
    assert campaigns.campaign_of_item(member.key) is None
    assert campaigns.campaign_of_item(letters[0].key).size == 39


# --- a letter held with a long addition ---------------------------------------------------------

LETTER = ("The proposed rule strips religious freedom protections from the people who use government funded "
          "social services. Removing the requirement that beneficiaries be told of their rights makes it harder "
          "for them to get help.\n\nAt the same time the rule expands religious exemptions for taxpayer funded "
          "providers. This opens the door to discrimination in programs that are supposed to serve everyone. "
          "I urge you to withdraw these proposed changes and protect the rights of the people your programs serve.")
ADDITION = ("I volunteered for eleven years at the food pantry on Elm Street and saw families turned away when the "
            "director decided their household did not fit. My neighbour, a widow with three children, waited two "
            "months for a referral that never came. Nobody told her she could ask for another provider. When the "
            "county finally stepped in, the winter was over and her savings were gone. Rules that remove the notice "
            "of rights will make stories like hers common in every small town where one provider is the only door. "
            "Please think of the people who cannot drive to the next county and have nowhere else to go.")


def letter_docket(copies: int) -> list[PlantedComment]:
    return [PlantedComment(f"{D}-{i:04d}", f"2026-02-{1 + i // 10:02d}T{i % 10:02d}:00:00Z", f"Sam Doe{i}",
                           f"Dear Secretary,\n\n{LETTER}\n\nSincerely,\nSam Doe{i}", "", None)
                           for i in range(2, 2 + copies)]


def test_a_letter_with_a_long_personal_addition_joins_the_letters_campaign(rt):
    copies = letter_docket(25)
    held = PlantedComment(f"{D}-0900", "2026-03-01T09:00:00Z", "Lee Park",
                          f"Dear Secretary,\n\n{ADDITION}\n\n{LETTER}\n\nSincerely,\nLee Park", "", None)
    own = PlantedComment(f"{D}-0901", "2026-03-01T10:00:00Z", "Ray Fox", ADDITION, "", None)
    shingles = {k: text.shingles(text.normalise(t)) for k, t in (("held", held.body), ("letter", LETTER))}
    assert text.jaccard(shingles["held"], shingles["letter"]) < 0.5  # Jaccard alone leaves it out
    seed_store(rt, D, [*copies, held, own])
    result = group(rt)
    letter = campaigns.campaign_of_item(copies[0].key)
    assert campaigns.campaign_of_item(held.key).id == letter.id and letter.size == 26
    assert result.counts["held_a_letter"] == 1
    # its own words stay visible: the sentences it adds to the letter's representative
    added = {m.item: m.added_sentences for m in campaigns.members_of(letter.id)}
    assert added[held.key] == text.sentences(ADDITION)
    assert not any(added[c.key] for c in copies)
    # the addition alone holds no letter
    assert campaigns.campaign_of_item(own.key).size == 1


def test_a_letter_held_is_placed_the_same_in_a_later_run_as_from_scratch(rt, tmp_path):
    copies = letter_docket(12)
    held = [PlantedComment(f"{D}-09{i:02d}", f"2026-03-0{1 + i}T09:00:00Z", f"Lee Park{i}",
                           f"{LETTER}\n\n{ADDITION.replace('eleven', str(i + 3))}", "", None) for i in range(3)]
    seed_store(rt, D, copies[:6])
    group(rt)
    seed_store(rt, D, copies[6:] + held)
    group(rt)
    incremental = sorted(CampaignMember.select(CampaignMember.item, CampaignMember.campaign,
                                               CampaignMember.added_sentences).tuples())
    assert {campaigns.campaign_of_item(c.key).id for c in held} == {copies[0].key}

    scratch = make_runtime(tmp_path / "scratch")
    scratch.state  # noqa: B018
    set_runtime(scratch)
    try:
        seed_store(scratch, D, copies + held)
        group(scratch)
        assert sorted(CampaignMember.select(CampaignMember.item, CampaignMember.campaign,
                                            CampaignMember.added_sentences).tuples()) == incremental
        assert Campaign.select().count() == 1
    finally:
        set_runtime(rt)
        scratch.close()
