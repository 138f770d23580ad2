"""The export's campaign text carries page breaks as plain text does (form feeds), never
extract's ``<!-- page N -->`` markers."""

from __future__ import annotations

import duckdb
import pytest

from pipeline.campaigns import queries as campaign_rows
from pipeline.ops import cli
from pipeline.ops.export import page_breaks
from tests.fixtures.pipeline_fixtures import built_store


def test_page_markers_become_form_feeds_between_pages():
    text = "<!-- page 1 -->\nFirst page.\n<!-- page 2 -->\nSecond page,\nstill.\n"
    assert page_breaks(text) == "First page.\n\f\nSecond page,\nstill."
    assert page_breaks("Inline text.\n<!-- page 1 -->\nThe file.") == "Inline text.\n\f\nThe file."
    assert page_breaks("No markers at all.") == "No markers at all." and page_breaks("") == ""


@pytest.mark.postgres
def test_exported_representative_text_has_no_markers(tmp_path, pg_server, capsys):
    with built_store(tmp_path, pg_server, dockets=1, comments=8) as store:  # IndexAll groups campaigns
        stored = [c for d in store.dockets for c in campaign_rows.campaigns_of(d, min_size=1)]
        assert any("<!-- page" in c.representative_text for c in stored)  # the form letter is a PDF
        dest = tmp_path / "export"
        assert cli.main(["export", str(dest), "--format", "csv"]) == 0
        with duckdb.connect() as con:
            texts = [row[0] for row in con.execute(
                f"SELECT representative_text FROM read_csv_auto('{dest}/*/campaigns.csv')").fetchall()]
    assert len(texts) == len(stored)
    assert not [t for t in texts if t and "<!--" in t]
    assert any(t and "\f" in t for t in texts)
