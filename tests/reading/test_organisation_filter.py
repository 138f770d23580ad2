"""The ``org`` filter matches a comment's resolved organisation, not only its name as written:
browsing, the organisation facet (its count is what its link shows) and the search's check,
on SQLite and PostgreSQL alike; a store the organisations stage never ran over matches the
written names alone, as before."""

from __future__ import annotations

import pytest

from pipeline.engine.stage import StageContext
from pipeline.organisations.stage import resolve_docket
from pipeline.reading import browsing
from pipeline.reading.organisation_filter import member_keys
from pipeline.reading.search_arguments import BadSearch, organisation
from pipeline.store import dockets
from pipeline.store.models import Docket, Item, ItemState

D = "CMS-2026-0001"
NOW = "2026-03-01T12:00:00.000000Z"
AMA = "American Medical Association"
# (organization field, title): the first names the AMA in its title only, the second in a
# spelling that holds no word of the filter as typed, the third in full.
COMMENTS = {
    f"{D}-0001": ("", f"Comment from {AMA}"),
    f"{D}-0002": ("Amer. Med. Assn.", "Comment on the rule"),
    f"{D}-0003": (AMA, "Comment on the rule"),
    f"{D}-0004": ("Rural Wage Coalition", "Comment on the rule"),
    f"{D}-0005": (None, "My thoughts"),
}


def _seed() -> None:
    Docket.insert(id=D, agency="CMS", title="Payment policies").execute()
    Item.insert_many([{"key": key, "docket": D, "kind": "comment", "title": title, "organization": org,
                       "submitter": "Pat Person", "body": "I support the rule.", "posted_date": "2026-01-05T12:00:00Z",
                       "created_at": NOW, "updated_at": NOW}
                      for key, (org, title) in COMMENTS.items()]).execute()
    # The organisations stage resolves the comments backfill has read.
    ItemState.insert_many([{"stage": "backfill", "item": key, "docket": D, "state": "ok", "written_at": NOW}
                           for key in COMMENTS]).execute()


def _resolve(runtime) -> None:
    resolve_docket(StageContext(runtime=runtime, run_id="test"), dockets.require_docket(D))


def _matched(text: str) -> list[str]:
    return sorted(row.key for row in browsing.comments(browsing.BrowseFilters(docket=D, organization=text)))


def test_before_the_organisations_stage_the_filter_matches_names_as_written(state):
    _seed()
    assert _matched(AMA) == [f"{D}-0003"]
    assert _matched("amer. med") == [f"{D}-0002"]
    assert member_keys(AMA) == []
    with pytest.raises(BadSearch):
        organisation("American Medical Assn")  # no field holds it, and no organisation is resolved


def test_the_filter_matches_the_resolved_organisation_in_any_spelling(state):
    _seed()
    _resolve(state)
    ama = [f"{D}-0001", f"{D}-0002", f"{D}-0003"]
    assert _matched(AMA) == ama
    assert _matched("american medical ASSN") == ama  # the spelling folded, any case
    assert _matched("medical") == ama  # a part of a name, as before
    assert _matched("Rural") == [f"{D}-0004"]
    assert _matched("Inc") == []  # no normal form: the written names alone
    assert member_keys(AMA, D) == ama and member_keys(AMA, "EPA-2026-0002") == []
    assert browsing.count(browsing.BrowseFilters(docket=D, organization=AMA)) == 3
    assert organisation("American Medical Assn") == "American Medical Assn"


def test_the_organisation_facet_counts_what_its_link_shows(state):
    _seed()
    _resolve(state)
    facet = dict(browsing.facets(browsing.BrowseFilters(docket=D)).organizations)
    assert facet[AMA] == 3 and facet["Amer. Med. Assn."] == 3
    for name, count in facet.items():
        assert count == len(_matched(name)) == browsing.count(browsing.BrowseFilters(docket=D, organization=name))
