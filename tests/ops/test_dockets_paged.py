"""``docketeer dockets`` a page at a time: the page's dockets in id order, a last line saying
where the page is, ``--all`` streamed in chunks, a page past the last refused in one line, and
the same statements for a page whatever the number of dockets known."""

from __future__ import annotations

import pytest

from pipeline.counters import INDEX_QUERIES, STATE_QUERIES, counters
from pipeline.ops import cli
from pipeline.ops.commands import dockets as dockets_command
from tests.fixtures.state_fixtures import indexed_runtime, known_dockets

pytestmark = pytest.mark.postgres


def run(capsys, *argv: str) -> tuple[int, list[str], str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def listed(lines: list[str]) -> list[str]:
    return [line.split()[0] for line in lines[1:-1]]


def test_a_page_of_dockets_in_order_with_where_it_is(tmp_path, pg_server, capsys):
    with indexed_runtime(tmp_path, pg_server):
        ids = known_dockets(120)
        code, lines, _ = run(capsys, "dockets")
        assert code == 0 and listed(lines) == ids[:50]
        assert lines[-1] == "page 1 of 3 (120 dockets): --page 2 for more"
        assert lines[0].split()[:2] == ["docket", "agency"] and "indexed" in lines[0]
        code, lines, _ = run(capsys, "dockets", "--page", "2")
        assert code == 0 and listed(lines) == ids[50:100]
        assert lines[-1] == "page 2 of 3 (120 dockets): --page 3 for more"
        code, lines, _ = run(capsys, "dockets", "--page", "3")
        assert listed(lines) == ids[100:] and lines[-1] == "page 3 of 3 (120 dockets)"
        code, lines, _ = run(capsys, "dockets", "--per-page", "7", "--page", "2")
        assert listed(lines) == ids[7:14] and lines[-1] == "page 2 of 18 (120 dockets): --page 3 for more"


def test_a_page_past_the_last_is_one_line_and_exit_2(tmp_path, pg_server, capsys):
    with indexed_runtime(tmp_path, pg_server):
        known_dockets(120)
        code, lines, err = run(capsys, "dockets", "--page", "4")
        assert code == 2 and lines == []
        assert err.splitlines() == ["docketeer: no page 4: 120 dockets make 3 pages of 50"]
        with pytest.raises(SystemExit) as refused:
            run(capsys, "dockets", "--page", "0")
        err = capsys.readouterr().err
        assert refused.value.code == 2 and err.splitlines() == [
            "docketeer dockets: argument --page: give a number from 1, not 0 (see docketeer dockets --help)"]


def test_all_streams_every_docket_in_chunks_under_one_header(tmp_path, pg_server, capsys, monkeypatch):
    monkeypatch.setattr(dockets_command, "ALL_CHUNK", 50)
    with indexed_runtime(tmp_path, pg_server):
        ids = known_dockets(120)
        code, lines, _ = run(capsys, "dockets", "--all")
        assert code == 0 and listed(lines) == ids
        assert sum(line.startswith("docket ") for line in lines) == 1
        assert lines[-1] == "120 dockets"


def test_a_page_costs_the_same_statements_at_3_dockets_as_at_120(tmp_path, pg_server, capsys):
    """Each column's read is one statement filtered to the page's dockets (the index counts
    too: one grouped query, not one a docket)."""
    spent = []
    for n in (3, 120):
        with indexed_runtime(tmp_path / str(n), pg_server):
            known_dockets(n)
            with counters.counting_queries(), counters.measure() as io:
                code, lines, _ = run(capsys, "dockets")
            assert code == 0 and len(listed(lines)) == min(n, 50)
            spent.append((io.get(STATE_QUERIES, 0), io.get(INDEX_QUERIES, 0)))
    assert spent[0] == spent[1] and spent[0][1] == 1, spent
