"""Search arguments checked once, for ``docketeer search`` and the search page alike."""

from __future__ import annotations

import pytest

from pipeline.clock import eastern_day_bounds
from pipeline.ops import cli
from pipeline.reading import search_arguments
from pipeline.reading.search_arguments import BadSearch


@pytest.mark.parametrize(("text", "reason"), [
    ("9999-12-32", "not a date"), ("0999-01-01", "outside 1000-01-01 to 9999-12-31"),
    ("999-01-01", "not a date"), ("+2025-01-01", "not a date"), ("2025-1-1", "not a date"),
    ("2025-02-30", "not a date"), ("20250101", "not a date")])
def test_a_day_outside_four_digit_years_or_malformed_is_refused(text, reason):
    with pytest.raises(BadSearch, match=reason):
        search_arguments.day(text, "from")


def test_the_calendars_edges_are_searchable_and_padded():
    assert search_arguments.day(" 1000-01-01 ", "from") == "1000-01-01"
    assert search_arguments.day("9999-12-31", "to") == "9999-12-31"
    first, before = eastern_day_bounds("1000-01-01", "9999-12-31")
    assert first.startswith("1000-01-01T") and before is None  # no day after the last one
    # A year below 1000 once came out unpadded ("999-..."): compared as text, it matched nothing.
    assert eastern_day_bounds("1001-03-01", None)[0].startswith("1001-03-01T")


def test_control_characters_and_a_reversed_range_are_refused():
    with pytest.raises(BadSearch, match="control character"):
        search_arguments.query_text("rural\x00hospitals")
    assert search_arguments.query_text("  rural hospitals ") == "rural hospitals"
    with pytest.raises(BadSearch, match="is after"):
        search_arguments.day_range("2026-02-02", "2026-02-01")
    with pytest.raises(BadSearch, match="no campaign 'x'"):
        search_arguments.campaign("x", lambda _: None)


@pytest.mark.parametrize("argv", [["--to", "9999-12-32"], ["--from", "0999-01-01"], ["--to", ""]])
def test_the_command_line_says_a_bad_day_in_one_line_and_exits_2(capsys, argv):
    with pytest.raises(SystemExit) as stopped:
        cli.main(["search", "rural hospitals", *argv])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err


def test_the_command_line_refuses_control_characters_and_a_reversed_range(capsys, sqlite_state):
    assert cli.main(["search", "rural\x01hospitals"]) == 2
    assert "control character" in capsys.readouterr().err
    assert cli.main(["search", "rural", "--from", "2026-02-02", "--to", "2026-02-01"]) == 2
    assert cli.main(["search", "rural", "--org", "Nobody Inc of Nowhere"]) == 2
    assert "no submitter or organisation contains" in capsys.readouterr().err


def test_a_position_is_one_the_stage_gives_and_a_kind_one_the_page_offers():
    from pipeline.positions.codes import POSITIONS

    assert search_arguments.POSITIONS == POSITIONS  # one list: the codes', the filters', the help's
    assert [search_arguments.position(p) for p in POSITIONS] == list(POSITIONS)
    assert search_arguments.position("  ") == ""
    with pytest.raises(BadSearch, match="position 'neutral' is not one of: support, oppose, mixed, no_position"):
        search_arguments.position("neutral")
    assert search_arguments.KINDS == {"both": None, "comments": "comments", "documents": "documents"}


def test_the_command_line_refuses_an_unknown_position_or_kind_in_one_line(capsys, sqlite_state):
    assert cli.main(["search", "rural", "--position", "neutral"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "position 'neutral' is not one of: support, oppose" in err
    with pytest.raises(SystemExit) as stopped:
        cli.main(["search", "rural", "--kind", "letters"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1 and "invalid choice: 'letters'" in err
    assert cli.main(["search", "rural", "--kind", "comments", "--collection", "documents"]) == 2
    assert "--kind comments and --collection documents disagree" in capsys.readouterr().err
    assert cli.main(["search", "rural", "--kind", "documents", "--position", "support"]) == 2
    assert "--position narrows comments: documents have no position" in capsys.readouterr().err
