"""Every attribute a real record gives that people look for reaches the store, explain and
the export: the submitter's city and representative, why an item was withdrawn or
restricted, and its content's page count. Each expected value is read from the record's
own JSON under ../shared/realdata, so a new real record is checked by the same rule."""

from __future__ import annotations

import json

from pipeline.ops import cli
from pipeline.sources import records
from pipeline.store.models import Item
from tests.fixtures.chain_runs import run_at
from tests.fixtures.state_fixtures import real_mirror_runtime

# Attribute of the record -> the item's column (the normaliser's names).
FIELDS = {"city": "city", "submitterRep": "submitter_rep", "reasonWithdrawn": "reason_withdrawn",
          "restrictReason": "restrict_reason", "restrictReasonType": "restrict_reason_type",
          "pageCount": "page_count"}


def real_records(realdata, dockets: str = "*") -> dict[str, dict]:
    """item id -> its record's attributes, for every comment and document JSON of the mirror
    (of the ``dockets`` glob's docket folders)."""
    found = {}
    for path in sorted((realdata / "mirror/raw-data").glob(f"*/{dockets}/text-*/*/*.json")):
        if path.parent.name in ("comments", "documents"):
            data = json.loads(path.read_text())["data"]
            found[data["id"]] = data["attributes"]
    return found


def test_the_normaliser_keeps_what_each_real_record_says(realdata):
    for key, attrs in real_records(realdata).items():
        fields = records.detail_fields({"data": {"id": key, "attributes": attrs}})
        for name, column in FIELDS.items():
            assert fields[column] == attrs.get(name), (key, name)


def test_every_real_record_s_fields_reach_the_store_explain_and_the_export(tmp_path, pg_server, realdata,
                                                                           capsys):
    import pyarrow.parquet as pq

    from pipeline.ops.export import export

    with real_mirror_runtime(tmp_path, pg_server, realdata) as (runtime, ids):
        # The records of the dockets the stand-in serves (the API's full shapes).
        given = {k: v for docket in ids for k, v in real_records(realdata, docket).items()}
        # The real records give some of these fields: what the test is about is there to see.
        assert any(a.get("city") for a in given.values()) and any(a.get("reasonWithdrawn") for a in given.values())
        assert any(a.get("submitterRep") for a in given.values()) and any(a.get("pageCount") for a in given.values())
        run_at(1)
        stored = {i.key: i for i in Item.select()}
        assert stored.keys() == given.keys()
        for key, attrs in given.items():
            for name, column in FIELDS.items():
                assert getattr(stored[key], column) == attrs.get(name), (key, name)
        withdrawn = next(k for k, a in given.items() if a.get("reasonWithdrawn"))
        capsys.readouterr()
        assert cli.main(["explain", withdrawn]) == 0
        assert f"withdrawn because {given[withdrawn]['reasonWithdrawn']}" in capsys.readouterr().out
        export(runtime, tmp_path / "export", formats=("parquet",))
        exported = {row["comment_id"]: row for path in (tmp_path / "export").glob("*/comments.parquet")
                    for row in pq.read_table(path).to_pylist()}
        assert exported and exported.keys() <= given.keys()
        for key, row in exported.items():
            for name, column in FIELDS.items():
                assert row[column] == given[key].get(name), (key, name)
