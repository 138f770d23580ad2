"""The pure parts of browsing: the query string's check, page markers as breaks, the sparkline."""

from __future__ import annotations

import pytest

from pipeline.web import browse, plots


def test_good_parameters_pass_and_each_bad_one_is_said_once():
    assert browse.problems_of({"from": "2026-03-01", "to": "2026-03-01", "page": "2", "sort": "oldest",
                               "attachments": "yes", "withdrawn": "no", "per_campaign": "1"}) == []
    said = browse.problems_of({"from": "2026-13-40", "to": "20260301", "page": "x", "sort": "bogus"})
    assert len(said) == 4 and said[0].startswith("from=2026-13-40 is not a date")
    assert "to=20260301 is not a date" in said[1]  # a compact ISO date is not what the page writes


def test_the_form_round_trips_and_a_change_of_filter_goes_back_to_page_one():
    form = browse.BrowseForm.parse({"docket": "CMS-2026-0001", "org": "AARP", "page": "3", "sort": "campaign"})
    assert form.query_string() == {"docket": "CMS-2026-0001", "org": "AARP", "sort": "campaign"}
    assert form.query_string(page=4)["page"] == "4"
    assert form.query_string(org="")["docket"] == "CMS-2026-0001" and "org" not in form.query_string(org="")
    assert [name for name, _, _ in form.active] == ["docket", "org"]
    assert browse.BrowseForm.parse({"page": "99999999999999"}).page == browse.MAX_BROWSE_PAGE
    with pytest.raises(browse.BadParameters):
        browse.BrowseForm.parse({"to": "2026-02-30"})


def test_page_markers_become_numbered_pages():
    text = "Before.\n<!-- page 1 -->\nOne.\n<!-- page 2 -->\nTwo."
    assert browse.clean_pages(text) == [(None, "Before."), (1, "One."), (2, "Two.")]
    assert browse.clean_pages("") == []


def test_sparkline_is_one_escaped_polyline():
    svg = str(plots.sparkline([("2026-01-01", 1), ("2026-01-02", 4), ("2026-01-03", 0)], label="<x>"))
    assert svg.count("<polyline") == 1 and "&lt;x&gt;" in svg and "<x>" not in svg
    assert len(svg.split('points="')[1].split('"')[0].split()) == 3
    assert "at most 4 a day" in svg
    assert "polyline" in str(plots.sparkline([("2026-01-01", 2)], label="one day"))
    assert "polyline" not in str(plots.sparkline([], label="none"))
