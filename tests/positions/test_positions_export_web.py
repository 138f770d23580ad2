"""A docket's positions where people read them: the export (each comment's position, source and
probability; ``positions.parquet`` with the stored shares and intervals, both estimates
labelled, the figures ``positions D --json`` gives) and the web (the docket page's shares or
"not estimated yet: code N more", the comment page's position). Over a generated docket of
planted support and oppose comments and one letter campaign (hashing vectors)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from starlette.testclient import TestClient

from devtools.position_corpus import position_comments, seed_positions
from pipeline.ops.export import COLUMNS, EXPORT_VERSION, export, readme
from pipeline.reading import positions as reading
from pipeline.store.models import PositionMember
from pipeline.web import pages
from pipeline.web.app import make_app
from tests.fixtures.position_fixtures import EMBEDDER, D, code_first, position_runtime, run

pytestmark = pytest.mark.postgres


@pytest.fixture
def rt(tmp_path, pg_url):
    with position_runtime(tmp_path, pg_url) as runtime:
        yield runtime


def _exported(rt, tmp_path) -> tuple[list[dict], list[dict]]:
    export(rt, tmp_path / "out", [D], ("parquet", "csv"))
    folder = tmp_path / "out" / D
    assert json.loads((folder / "export.json").read_text())["version"] == EXPORT_VERSION == "export-11"
    assert (folder / "positions.csv").exists()
    return (pq.read_table(folder / "comments.parquet").to_pylist(),
            pq.read_table(folder / "positions.parquet").to_pylist())


def test_export_and_pages_with_fitted_positions(rt, tmp_path):
    planted = position_comments(D, 60, support_share=0.4, letter_copies=30)
    seed_positions(rt, D, planted, EMBEDDER)
    coded = code_first(planted, 24)
    run(rt)
    stored = {m.item: m for m in PositionMember.select().where(PositionMember.docket == D)}
    comments, shares = _exported(rt, tmp_path)
    assert len(comments) == 90
    for row in comments:
        member = stored[row["comment_id"]]
        assert (row["position"], row["position_source"], row["position_probability"]) == (
            member.position, member.source, member.probability)
    assert {r["comment_id"]: r["position"] for r in comments if r["position_source"] == "coded"} == coded
    assert {r["position_source"] for r in comments} == {"coded", "model"}
    # the shares are the stored figures, as `positions D --json` gives them, both estimates labelled
    figures = reading.summary(D)["estimates"]
    assert len(shares) == 2 * 2 * 5 and {(r["measure"], r["estimate"]) for r in shares} == {
        (m, e) for m in ("comments", "submissions") for e in ("design", "model")}
    for r in shares:
        assert {k: r[k] for k in ("share", "low", "high")} == figures[r["measure"]][r["estimate"]][r["position"]]
        assert r["total"] == figures[r["measure"]]["total"] and r["method"] == figures["methods"][r["estimate"]]
        assert r["low"] <= r["share"] <= r["high"]
    assert "position_probability" in readme() and "positions.parquet" in readme()

    with TestClient(make_app(rt, pages.WarmSearch(rt)), base_url="http://127.0.0.1") as client:
        html = client.get(f"/docket/{D}").text
        support = figures["submissions"]["model"]["support"]
        assert "<h2>Positions</h2>" in html and "design-based" in html and "model-based" in html
        assert (f'{support["share"]:.0%} <span class="interval">({support["low"]:.0%}–{support["high"]:.0%})'
                in html)
        assert "not estimated yet" not in html
        key = next(k for k, m in stored.items() if m.source == "model")
        page = client.get(f"/comment/{key}").text
        assert (f'<dd class="position">{stored[key].position}, the classifier\'s '
                f'(probability {stored[key].probability:.2f})</dd>') in page
        coded_key = sorted(coded)[0]
        assert f'<dd class="position">{coded[coded_key]}, coded by an analyst</dd>' in client.get(
            f"/comment/{coded_key}").text


def test_too_few_codes_export_empty_shares_and_the_page_says_code_more(rt, tmp_path):
    planted = position_comments(D, 40, letter_copies=10)
    seed_positions(rt, D, planted, EMBEDDER)
    with TestClient(make_app(rt, pages.WarmSearch(rt)), base_url="http://127.0.0.1") as client:
        assert "<h2>Positions</h2>" not in client.get(f"/docket/{D}").text  # the stage never ran here
        comments, shares = _exported(rt, tmp_path)
        assert shares == [] and {(r["position"], r["position_source"], r["position_probability"])
                                 for r in comments} == {(None, None, None)}
        coded = code_first(planted, 5)
        run(rt)
        html = client.get(f"/docket/{D}").text
        assert "<h2>Positions</h2>" in html and "not estimated yet: code 15 more" in html
        assert 'class="position-shares"' not in html
        uncoded = next(c.key for c in planted if c.key not in coded)
        assert 'class="position"' not in client.get(f"/comment/{uncoded}").text
    comments, shares = _exported(rt, tmp_path / "again")  # a new run: the export changed
    assert shares == []
    assert {r["comment_id"]: r["position"] for r in comments if r["position"]} == coded
    assert [c for c, *_ in COLUMNS["comments"]][-5:] == ["position", "position_source", "position_probability",
                                                         "position_evidence", "position_quote"]
