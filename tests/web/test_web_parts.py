"""The web page's pure parts: Eastern days, the per-day series, the SVG, the highlighted
passage and the bounded query string."""

from __future__ import annotations

import pytest

from pipeline.web import highlight, pages, plots


def test_utc_hours_fold_into_eastern_days():
    # 03:00 UTC on 10 March is still 9 March in New York (EST, UTC-5); 05:00 is the 10th.
    per_hour = {"2026-03-10T03": 2, "2026-03-10T05": 3, "2026-07-01T03": 1, "garbage": 9}
    assert pages.eastern_days(per_hour) == {"2026-03-09": 2, "2026-03-10": 3, "2026-06-30": 1}


def test_daily_series_fills_quiet_days_with_zero():
    assert plots.daily_series({"2026-01-05": 4, "2026-01-08": 1}) == [
        ("2026-01-05", 4), ("2026-01-06", 0), ("2026-01-07", 0), ("2026-01-08", 1)]
    assert plots.daily_series({}) == []


def test_bar_chart_has_one_bar_per_day_and_escapes_its_labels():
    svg = str(plots.bar_chart([("<b>", 3), ("2026-01-06", 0)], label="x & <y>"))
    assert svg.count("<rect") == 2 and "&lt;b&gt;: 3" in svg and "x &amp; &lt;y&gt;" in svg
    assert "<b>" not in svg and "nothing to plot" in str(plots.bar_chart([], label="x"))


def test_passage_marks_query_words_around_the_first_match():
    text = "Intro words. " * 40 + "The rule in 42 U.S.C. 1395ww hurts rural Hospitals. " + "Outro. " * 40
    pieces = highlight.passage(text, "42 U.S.C. 1395ww hospital")
    marked = [t for t, hit in pieces if hit]
    assert marked == ["42", "U.S.C", "1395ww", "Hospitals"]
    assert pieces[0] == ("… ", False) and pieces[-1] == (" …", False)
    assert sum(len(t) for t, _ in pieces) <= highlight.PASSAGE_CHARS + 4


def test_passage_without_a_match_is_the_start_and_page_markers_are_dropped():
    pieces = highlight.passage("<!-- page 3 -->\nPlain text here.", "zebra")
    assert pieces == [("Plain text here.", False)]
    assert highlight.query_terms('the "wage index" OR -floor') == ["floor", "index", "wage"]


def test_search_form_bounds_what_it_is_given():
    form = pages.SearchForm.parse({"q": " x " * 400, "page": "100000", "to": "2026-03-01"}).checked()
    assert len(form.q) <= 500 and form.page == pages.MAX_PAGE and form.date_from == ""
    filters = form.filters()
    # The end date is inclusive, in Eastern time: the filter stops at the next Eastern midnight.
    assert filters.posted_from is None and filters.posted_before == "2026-03-02T05:00:00Z"
    assert pages.SearchForm.parse({"page": "-3"}).page == 1
    assert form.query_string(page=2)["page"] == "2" and "docket" not in form.query_string()


@pytest.mark.parametrize(("first", "unit", "bars"), [
    ("2025-06-01", "day", 214), ("2024-01-01", "week", 105), ("2010-01-01", "month", 192),
    ("1900-01-01", "year", 126), ("0002-01-01", "6 years", 338)])
def test_a_plot_is_bounded_whatever_span_its_dates_cover(first, unit, bars):
    # A comment posted in year 2 once made one bar per day since then (313 MB of SVG).
    got_unit, points = plots.dated_series({first: 2, "2025-12-31": 3})
    assert (got_unit, len(points)) == (unit, bars) and len(points) <= plots.MAX_BARS
    assert sum(n for _, n in points) == 5 and points[0][1] == 2 and points[-1][1] == 3
    svg = str(plots.bar_chart(points, label="x"))
    assert svg.count("<rect") == bars and len(svg) < 100 * plots.MAX_BARS
    assert str(plots.bar_chart([("d", 1)] * 10 * plots.MAX_BARS, label="x")).count("<rect") == plots.MAX_BARS


def test_an_impossible_stored_date_is_not_plotted_and_shows_no_date():
    from pipeline import clock

    assert pages.eastern_days({"0001-01-01T00": 4, "2026-01-05T12": 1}) == {"2026-01-05": 1}
    assert clock.eastern_date("0001-01-01T00:00:00Z") == "" and clock.eastern_instant("0001-01-01T00:00:00Z") == ""


def test_the_whole_calendar_is_still_at_most_max_bars():
    unit, points = plots.dated_series({"0001-01-01": 2, "9999-12-31": 3})
    assert unit == "25 years" and len(points) == plots.MAX_BARS and points[-1] == ("9976-9999", 3)
