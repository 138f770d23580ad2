"""The browsing queries on SQLite and PostgreSQL alike: a page of comments under filters and
each sort, facets and their counts, the home page's dockets, campaign members, organisations,
feeds' news and the failed-or-waiting rows."""

from __future__ import annotations

from pipeline.reading import browsing, reports
from pipeline.store.models import (
    Attachment,
    Campaign,
    CampaignMember,
    Docket,
    Item,
    ItemState,
    PositionMember,
)

D, E = "CMS-2026-0001", "EPA-2026-0002"
NOW = "2026-03-01T12:00:00.000000Z"


def _seed() -> None:
    Docket.insert_many([{"id": D, "agency": "CMS", "title": "Payment policies"}, {"id": E, "agency": "EPA"}]).execute()
    rows = []
    for n in range(1, 9):  # D: 8 comments over two days; E: 2
        rows.append({"key": f"{D}-{n:04d}", "docket": D, "kind": "comment", "title": f"Comment {n}",
                     "posted_date": f"2026-01-0{5 + n % 2}T1{n}:00:00Z", "withdrawn": n == 8,
                     "organization": ["AARP", "aarp local", None, "Zeta Union", "AARP", "", None, "Beta Org"][n - 1],
                     "submitter": f"Person {n}", "created_at": NOW, "updated_at": f"2026-03-0{1 + n % 3}T00:00:00Z"})
    rows += [{"key": f"{E}-{n:04d}", "docket": E, "kind": "comment", "posted_date": "2026-02-01T15:00:00Z",
              "organization": "AARP", "created_at": NOW, "updated_at": NOW} for n in (1, 2)]
    rows.append({"key": f"{D}-0100", "docket": D, "kind": "document", "created_at": NOW, "updated_at": NOW})
    Item.insert_many(rows).execute()
    Attachment.insert_many([{"item": f"{D}-{n:04d}", "filename": f"attachment_{k}.pdf", "ordinal": k}
                            for n in (1, 2, 3) for k in range(1, n + 1)]).execute()
    members = [f"{D}-0001", f"{D}-0003", f"{D}-0005"]
    Campaign.insert_many([{"id": members[0], "docket": D, "size": 3, "representative": members[1]},
                          {"id": f"{D}-0002", "docket": D, "size": 1, "representative": f"{D}-0002"}]).execute()
    CampaignMember.insert_many([
        {"item": key, "docket": D, "campaign": members[0], "order_key": f"{n}", "posted_date": None,
         "exact_hash": "h", "text": "t", "normalised": "t", "signature": "s", "added_sentences": "[]"}
        for n, key in enumerate(members)] + [
        {"item": f"{D}-0002", "docket": D, "campaign": f"{D}-0002", "order_key": "0", "exact_hash": "g",
         "text": "u", "normalised": "u", "signature": "s", "added_sentences": "[]"}]).execute()
    ItemState.insert_many([
        {"stage": "extract", "item": f"{D}-0001", "docket": D, "state": "failed", "reason": "corrupt PDF",
         "written_at": NOW, "next_attempt_at": None, "content_hash": None},  # (the first row names the columns)
        {"stage": "extract", "item": f"{D}-0002", "docket": D, "state": "failed", "reason": "corrupt PDF",
         "written_at": NOW},
        {"stage": "extract.file", "item": f"{D}-0003/attachment_1.pdf", "docket": D, "state": "ocr_needed",
         "reason": "no text layer", "written_at": NOW},
        {"stage": "extract.file", "item": f"{D}-0004/attachment_1.pdf", "docket": D, "state": "ocr_needed",
         "reason": "no text layer", "written_at": NOW},
        # 0004's scan OCR has read, for the text stored now (its hash is the one extract's row
        # records); 0005's OCR row is of a text extract has re-rendered since: it waits again.
        {"stage": "extract", "item": f"{D}-0004", "docket": D, "state": "ocr_needed",
         "reason": "attachment_1.pdf: ocr_needed", "written_at": NOW, "content_hash": "merged"},
        {"stage": "ocr", "item": f"{D}-0004/attachment_1.pdf", "docket": D, "state": "ok", "written_at": NOW,
         "content_hash": "merged"},
        {"stage": "extract", "item": f"{D}-0005", "docket": D, "state": "ocr_needed",
         "reason": "attachment_1.pdf: ocr_needed", "written_at": NOW, "content_hash": "re-rendered"},
        {"stage": "extract.file", "item": f"{D}-0005/attachment_1.pdf", "docket": D, "state": "ocr_needed",
         "reason": "no text layer", "written_at": NOW},
        {"stage": "ocr", "item": f"{D}-0005/attachment_1.pdf", "docket": D, "state": "ok", "written_at": NOW,
         "content_hash": "merged before"},
        {"stage": "backfill", "item": f"{E}-0001", "docket": E, "state": "retry", "reason": "HTTP 503",
         "next_attempt_at": "2026-03-02T00:00:00Z", "written_at": NOW},
        {"stage": "fetch", "item": f"{E}-0002", "docket": E, "state": "ok", "written_at": NOW},
    ]).execute()


def keys(rows) -> list[str]:
    return [r.key[-4:] for r in rows]


def test_pages_filters_and_sorts(state):
    _seed()
    every = browsing.BrowseFilters(docket=D)
    assert browsing.count(every) == 8  # comments only, not the docket's document
    newest = browsing.comments(every, limit=50)
    assert [r.posted_date for r in newest] == sorted((r.posted_date for r in newest), reverse=True)
    assert keys(browsing.comments(every, offset=2, limit=2)) == keys(newest)[2:4]
    assert keys(browsing.comments(every, sort="oldest", limit=50)) == keys(newest)[::-1]
    by_org = browsing.comments(every, sort="organisation", limit=50)
    assert [r.organization for r in by_org][:5] == ["AARP", "AARP", "aarp local", "Beta Org", "Zeta Union"]
    assert keys(browsing.comments(every, sort="campaign", limit=3)) == ["0001", "0003", "0005"]
    first = browsing.comments(every, sort="campaign", limit=1)[0]
    assert (first.campaign, first.campaign_size, first.attachments) == (f"{D}-0001", 3, 1)
    assert browsing.comments(browsing.BrowseFilters(docket=D, campaign=f"{D}-0002"), limit=5)[0].campaign is None

    assert browsing.count(browsing.BrowseFilters(docket=D, organization="aarp")) == 3  # any case, a part
    assert browsing.count(browsing.BrowseFilters(organization="%")) == 0  # a character, not a wildcard
    assert browsing.count(browsing.BrowseFilters(docket=D, has_attachments=True)) == 3
    assert browsing.count(browsing.BrowseFilters(docket=D, has_attachments=False, withdrawn=True)) == 1
    assert browsing.count(browsing.BrowseFilters(docket=D, campaign=f"{D}-0001", has_attachments=True)) == 2
    assert browsing.count(browsing.BrowseFilters(docket=D, posted_from="2026-01-06T00:00:00Z")) == 4
    assert browsing.count(browsing.BrowseFilters(docket=D, posted_before="2026-01-06T00:00:00Z")) == 4
    assert sorted(browsing.matching_keys(browsing.BrowseFilters(has_attachments=True))) == [
        f"{D}-0001", f"{D}-0002", f"{D}-0003"]


def test_facets_count_the_filtered_comments(state):
    _seed()
    facets = browsing.facets(browsing.BrowseFilters(docket=D))
    assert facets.organizations[0] == ("AARP", 3) and ("", 1) not in facets.organizations
    assert facets.campaigns == [(f"{D}-0001", 3, 3)]  # groups of one are not campaigns
    assert facets.attachments == {True: 3, False: 5} and facets.withdrawn == {True: 1, False: 7}
    narrowed = browsing.facets(browsing.BrowseFilters(docket=D, campaign=f"{D}-0001"))
    assert narrowed.attachments == {True: 2, False: 1} and dict(narrowed.organizations) == {"AARP": 2}


def _place(positions: dict[int, str]) -> None:
    """Positions for some of D's comments, as the positions stage leaves them; the rest not estimated."""
    PositionMember.insert_many([{"item": f"{D}-{n:04d}", "docket": D, "position": p, "source": "model",
                                 "probability": 0.9, "unit": f"{D}-{n:04d}", "submissions": 1}
                                for n, p in positions.items()]).execute()


def test_a_position_filter_narrows_to_the_comments_placed_there_and_the_facet_counts_them(state):
    _seed()
    _place({1: "support", 2: "oppose", 3: "support", 4: "off_topic", 5: "support", 6: "oppose"})
    every = browsing.BrowseFilters(docket=D)
    supports = browsing.BrowseFilters(docket=D, position="support")
    assert sorted(keys(browsing.comments(supports, limit=50))) == ["0001", "0003", "0005"]
    assert browsing.count(supports) == 3 and sorted(browsing.matching_keys(supports)) == [
        f"{D}-0001", f"{D}-0003", f"{D}-0005"]
    # Not estimated (0007, 0008): no position matches them; mixed: none placed there.
    assert browsing.count(browsing.BrowseFilters(docket=D, position="mixed")) == 0
    facets = browsing.facets(every)
    assert facets.positions == [("support", 3), ("oppose", 2), ("off_topic", 1)]  # the positions' order
    assert facets.not_estimated == 2
    assert sum(n for _, n in facets.positions) + facets.not_estimated == browsing.count(every)
    # Each count is what its filter with the others shows: the campaign 0001, 0003, 0005.
    in_campaign = browsing.BrowseFilters(docket=D, campaign=f"{D}-0001")
    assert browsing.position_counts(in_campaign) == ([("support", 3)], 0)
    with_files = browsing.BrowseFilters(docket=D, has_attachments=True)  # 0001, 0002, 0003
    assert browsing.position_counts(with_files) == ([("support", 2), ("oppose", 1)], 0)
    assert browsing.count(browsing.BrowseFilters(docket=D, position="oppose", has_attachments=True)) == 1
    narrowed = browsing.facets(supports)
    assert narrowed.positions == [("support", 3)] and narrowed.not_estimated == 0
    assert dict(narrowed.organizations) == {"AARP": 2}  # 0001 and 0005; 0003 names none
    # A docket the stage has not run on: every comment not estimated, none hidden.
    assert browsing.position_counts(browsing.BrowseFilters(docket=E)) == ([], 2)


def test_home_organisations_campaign_members_news_and_problems(state):
    _seed()
    summaries = {s.docket.id: s for s in browsing.docket_summaries()}
    assert summaries[D].comments == 8 and summaries[E].comments == 2
    assert summaries[D].last_update == "2026-03-03T00:00:00Z"
    assert sum(summaries[D].per_hour.values()) == 8 and "2026-01-05T12" in summaries[D].per_hour

    assert browsing.organisation_dockets("AARP") == [(D, 2), (E, 2)]
    assert browsing.organisation_dockets("aarp") == []  # the exact name

    members = browsing.campaign_members(f"{D}-0001", offset=1, limit=5)
    assert [m.key for m in members] == [f"{D}-0003", f"{D}-0005"] and members[0].submitter == "Person 3"

    assert browsing.changed_counts("2026-03-03T00:00:00Z", None) == [(D, 3)]  # 0002, 0005, 0008
    assert browsing.changed_counts("2026-03-01T00:00:00Z", [E]) == [(E, 2)]
    latest = browsing.rows_of_keys([f"{D}-0001", f"{D}-0002", f"{D}-0003"], limit=2)
    assert keys(latest) == ["0002", "0001"]  # changed on the 3rd and the 2nd

    found = {(p.docket, p.stage, p.state, p.reason): (p.count, p.example) for p in browsing.problems()}
    assert found == {
        (D, "extract", "failed", "corrupt PDF"): (2, f"{D}-0001"),
        # Only the scans OCR has not read (for the text stored now) wait, and their comments.
        (D, "extract.file", "ocr_needed", "no text layer"): (2, f"{D}-0003/attachment_1.pdf"),
        (D, "extract", "ocr_needed", "attachment_1.pdf: ocr_needed"): (1, f"{D}-0005"),
        (E, "backfill", "retry", "HTTP 503"): (1, f"{E}-0001"),
    }
    assert [p.next_attempt_at for p in browsing.problems(E)] == ["2026-03-02T00:00:00Z"]
    # `docketeer stats` and the docket page count by the same rule: 0004's rows read by OCR.
    assert {(c.stage, c.state): c.count for c in reports.state_counts(D)} == {
        ("extract", "failed"): 2, ("extract", "ocr_done"): 1, ("extract", "ocr_needed"): 1,
        ("extract.file", "ocr_done"): 1, ("extract.file", "ocr_needed"): 2, ("ocr", "ok"): 2}
