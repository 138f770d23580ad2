"""An analyst's codes: a sheet imports whole or not at all (an unknown id or position, a bad
header: one line, exit 2, nothing written); importing again replaces a comment's code; codes
outlive the comment being fetched and indexed again, and go with the docket's purge alone;
the coding sample leaves coded comments out and is the same for the same seed; the coding
screen records a key press per comment from standard input; `docketeer positions D` shows it."""

from __future__ import annotations

import csv
import io
import json
import sys

import pytest

from devtools.position_corpus import position_comments, seed_positions
from pipeline.engine.stage import StageContext
from pipeline.index.embedders import HashingEmbedder
from pipeline.ops import cli
from pipeline.positions.stage import estimate_docket
from pipeline.runtime import set_runtime
from pipeline.store import dockets
from pipeline.store.models import PositionCode
from tests.fixtures.state_fixtures import make_runtime

D = "FDA-2026-0412"
OTHER = "FDA-2026-0413"
EMBEDDER = HashingEmbedder(384)


@pytest.fixture
def rt(tmp_path, pg_url):
    runtime = make_runtime(tmp_path, index_url=pg_url)
    runtime.state  # noqa: B018 - open and create the schema
    previous = set_runtime(runtime)
    planted = position_comments(D, 30, letter_copies=5)
    seed_positions(runtime, D, planted, EMBEDDER)
    seed_positions(runtime, OTHER, position_comments(OTHER, 4), EMBEDDER)
    runtime.planted = planted
    yield runtime
    set_runtime(previous)
    for docket in (D, OTHER):
        runtime.index_db().purge_docket(docket)
    runtime.close()


def sheet(tmp_path, rows, header="comment_id,position") -> str:
    path = tmp_path / "codes.csv"
    path.write_text(header + "\n" + "".join(f"{a},{b}\n" for a, b in rows))
    return str(path)


def stored() -> dict[str, tuple[str, str]]:
    return {c.item: (c.position, c.coder) for c in PositionCode.select()}


def test_a_sheet_imports_whole_or_not_at_all(rt, tmp_path, capsys):
    good = [(f"{D}-0001", "support"), (f"{D}-0002", "oppose")]
    for rows, header, said in (
            ([*good, (f"{D}-9999", "support")], "comment_id,position", f"unknown comment id '{D}-9999'"),
            ([*good, (f"{D}-0003", "favour")], "comment_id,position", "line 4: unknown position 'favour'"),
            (good, "id,stance", "the header must name comment_id and position"),
            ([*good, (f"{D}-0001", "mixed")], "comment_id,position", "line 4: FDA-2026-0412-0001 is coded again")):
        assert cli.main(["positions", "import", sheet(tmp_path, rows, header)]) == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1, err
        assert stored() == {}  # nothing half-imported
    assert cli.main(["positions", "import", str(tmp_path / "missing.csv")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert cli.main(["positions", "import", sheet(tmp_path, good), "--coder", "ana"]) == 0
    assert "imported 2 code(s) by ana" in capsys.readouterr().out
    assert stored() == {f"{D}-0001": ("support", "ana"), f"{D}-0002": ("oppose", "ana")}
    # again, by another coder: the comment's code is replaced, not added
    assert cli.main(["positions", "import", sheet(tmp_path, [(f"{D}-0001", "mixed")]), "--coder", "ben"]) == 0
    assert stored() == {f"{D}-0001": ("mixed", "ben"), f"{D}-0002": ("oppose", "ana")}
    assert PositionCode.get(PositionCode.item == f"{D}-0001").coded_at.endswith("Z")


def test_codes_outlive_a_refetch_and_go_with_the_purge_of_their_docket_alone(rt, tmp_path):
    rows = [(f"{D}-0001", "support"), (f"{OTHER}-0001", "oppose")]
    assert cli.main(["positions", "import", sheet(tmp_path, rows)]) == 0
    seed_positions(rt, D, rt.planted, EMBEDDER)  # the docket's comments stored and indexed again
    estimate_docket(StageContext(runtime=rt, run_id="t"), dockets.require_docket(D))
    assert set(stored()) == {f"{D}-0001", f"{OTHER}-0001"}
    assert cli.main(["forget", D, "--purge"]) == 0
    assert set(stored()) == {f"{OTHER}-0001"}


def draw(tmp_path, capsys, *extra) -> list[dict]:
    out = tmp_path / "sheet.csv"
    assert cli.main(["positions", "sample", D, "--n", "8", "--out", str(out), *extra]) == 0
    capsys.readouterr()
    with out.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_the_sample_leaves_coded_comments_out_and_is_reproducible(rt, tmp_path, capsys):
    first = draw(tmp_path, capsys)
    assert len(first) == 8 and list(first[0]) == ["comment_id", "link", "text", "position"]
    assert all(r["text"] and r["position"] == "" and r["link"].endswith("/comment/" + r["comment_id"]) for r in first)
    assert len({r["comment_id"] for r in first}) == 8
    letters = {c.key for c in rt.planted if c.campaign}
    assert len({r["comment_id"] for r in first} & letters) <= 1  # a campaign is one unit
    assert draw(tmp_path, capsys) == first  # the same store, the same seed: the same sheet
    assert draw(tmp_path, capsys, "--seed", "2") != first
    coded = [(r["comment_id"], "support") for r in first[:3]]
    assert cli.main(["positions", "import", sheet(tmp_path, coded)]) == 0
    again = {r["comment_id"] for r in draw(tmp_path, capsys)}
    assert not again & {k for k, _ in coded}
    # the sheet, filled in, imports as it is
    filled = tmp_path / "filled.csv"
    with filled.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["comment_id", "link", "text", "position"])
        writer.writerows([[r["comment_id"], r["link"], r["text"], "oppose" if i else ""] for i, r in enumerate(first[3:])])
    assert cli.main(["positions", "import", str(filled)]) == 0
    assert len(stored()) == 3 + 4


def test_the_coding_screen_records_a_key_press_per_comment(rt, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("s\no ? z m\nx n q s"))
    assert cli.main(["positions", "code", D, "--coder", "cat"]) == 0
    out = capsys.readouterr().out
    assert "keys: s support" in out and "unknown key 'z'" in out and "5 coded now" in out
    assert sorted(p for p, _ in stored().values()) == ["mixed", "no_position", "off_topic", "oppose", "support"]
    assert {c for _, c in stored().values()} == {"cat"}
    monkeypatch.setattr(sys, "stdin", io.StringIO("s"))  # the keys end: it stops, the code kept
    assert cli.main(["positions", "code", D]) == 0
    assert len(stored()) == 6


def test_the_positions_command(rt, tmp_path, capsys):
    truth = {c.key: c.position for c in rt.planted if not c.campaign}
    assert cli.main(["positions", D]) == 0
    assert "no positions yet" in capsys.readouterr().out
    assert cli.main(["positions", "import", sheet(tmp_path, sorted(truth.items())[:22])]) == 0
    estimate_docket(StageContext(runtime=rt, run_id="t"), dockets.require_docket(D))
    capsys.readouterr()
    assert cli.main(["positions", D, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["classifier"]["fitted"] and shown["codes"]["comments"] == 22
    assert set(shown["estimates"]["submissions"]["design"]) == {"support", "oppose", "mixed", "no_position",
                                                                "off_topic"}
    assert sum(shown["comments"]["all"]["comments"].values()) == 35
    assert shown["by_campaign"] and shown["by_campaign"][0]["comments"]["support"] + \
        shown["by_campaign"][0]["comments"]["oppose"] == 5
    assert cli.main(["positions", D]) == 0
    out = capsys.readouterr().out
    assert "design-based (95% CI)" in out and "model-based (95% CI)" in out and "by campaign" in out
    assert cli.main(["positions", "NOPE-2026-0001"]) == 2
    assert cli.main(["positions", "sample"]) == 2
