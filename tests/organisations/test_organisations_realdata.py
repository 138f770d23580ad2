"""Organisations on the real dockets in ../shared/realdata (skipped without them), through the
Luigi tasks: every real comment resolved from its record's field or its title, a second run
pruned, --force redoing them, verify passing, the alias file applied as written, and the
export and ``docketeer orgs`` showing what the state DB holds."""

from __future__ import annotations

import json

import duckdb
from starlette.testclient import TestClient

from pipeline.counters import STAGE_CALLS, counters
from pipeline.engine import markers
from pipeline.engine.invocation import Invocation
from pipeline.ops import cli, verify
from pipeline.organisations.matching import organisation_id
from pipeline.organisations.names import normalise
from pipeline.reading import organisations as organisation_reads
from pipeline.store.models import Item, OrganisationMember
from pipeline.tasks import OrganisationsAll, ResolveOrganisations
from pipeline.web import pages
from pipeline.web.app import make_app
from tests.fixtures.state_fixtures import real_mirror_runtime, run_invocation

EXPECTED = {  # comment -> its organisations as shown, in field order
    "ACF-2025-0038-0004": ["Wisconsin Department of Children & Families"],  # the title alone names it
    "DOS-2022-0004-0003": ["Raytheon Technologies Corporation"],  # read while its files wait
    "USTR-2015-0010-0002": ["US-China Business Council"],
    "USTR-2015-0010-0003": ["American Insurance Association"],
    # Three trade associations testifying together: a list of three names is three.
    "USTR-2015-0010-0004": ["USA Rice", "U.S. Wheat Associates", "U.S. Grains Council"],
    "USTR-2015-0010-0005": ["American Iron and Steel Institute"],
}


def test_real_comments_are_resolved_exported_and_listed(tmp_path, pg_server, realdata, capsys):
    with real_mirror_runtime(tmp_path, pg_server, realdata) as (runtime, ids):
        # The dockets whose mirror holds their docket record: the stand-in answers 404 for the
        # others (the CDO dockets, NIST), recorded as not found; their comments' organisations
        # are tested without a server in test_organisations_real_signatures.py.
        ids = [d for d in ids if any((realdata / "mirror" / "raw-data").glob(f"*/{d}/text-{d}/docket"))]
        assert run_invocation(OrganisationsAll())
        shown = {item: [name for _, name in named] for docket in ids
                 for item, named in organisation_reads.docket_organisations(docket).items()}
        assert {k: v for k, v in shown.items() if k in EXPECTED} == EXPECTED
        comments = {i.key for i in Item.select().where(Item.kind == "comment")}
        assert set(shown) <= comments
        for docket in ids:
            assert markers.read_marker(docket, "organisations").version == 1

        with counters.measure() as io:
            assert run_invocation(OrganisationsAll())
        assert io.get(STAGE_CALLS, 0) == 0  # every docket's marker holds: no task ran
        report = verify.run_checks(runtime)
        assert report.passed and "organisations markers" in [c.name for c in report.checks], \
            "\n".join(report.lines())
        with counters.measure() as io:
            assert run_invocation(OrganisationsAll(force=True))
        assert io[STAGE_CALLS] == len(ids)
        assert markers.read_marker(ids[0], "organisations").version == 2
        assert ResolveOrganisations(docket=ids[0], invocation=Invocation()).complete()

        # The alias file, as written: a field kept whole (its split: entry wins over the list
        # rule), a rename and a merge, those comments alone redone.
        (runtime.settings.data_path / "organisations.yaml").write_text(
            "organisations:\n  - name: USA Rice Federation\n"
            "    variants: ['USA Rice, U.S. Wheat Associates, U.S. Grains Council', American Insurance Association]\n"
            "split:\n  - name: 'USA Rice, U.S. Wheat Associates, U.S. Grains Council'\n")
        assert not ResolveOrganisations(docket="USTR-2015-0010", invocation=Invocation()).complete()
        assert run_invocation(OrganisationsAll())
        rice = organisation_id(normalise("USA Rice Federation"))
        now = {m.item: m.organisation for m in OrganisationMember.select()}
        assert now["USTR-2015-0010-0004"] == now["USTR-2015-0010-0003"] == rice
        assert now["USTR-2015-0010-0005"] == organisation_id(normalise("American Iron and Steel Institute"))

        dest = tmp_path / "export"
        assert cli.main(["export", str(dest)]) == 0
        with duckdb.connect() as con:
            exported = dict(con.execute(f"SELECT comment_id, organisation FROM read_parquet('{dest}/*/comments.parquet') "
                                        f"WHERE organisation_id IS NOT NULL").fetchall())
        assert exported["USTR-2015-0010-0004"] == "USA Rice Federation"
        assert exported["ACF-2025-0038-0004"] == EXPECTED["ACF-2025-0038-0004"][0]

        capsys.readouterr()
        assert cli.main(["orgs", "--json"]) == 0
        listed = {o["organisation"]: o for o in json.loads(capsys.readouterr().out)["organisations"]}
        assert listed["USA Rice Federation"]["comments"] == 2
        assert {v["written"] for v in listed["USA Rice Federation"]["variants"]} == {
            "USA Rice, U.S. Wheat Associates, U.S. Grains Council", "American Insurance Association"}
        assert listed["USA Rice Federation"]["dockets"] == ["USTR-2015-0010"]
        # Where each came from: the record's field, or the title it was guessed from.
        assert {(o["source"], o["evidence"]) for o in listed["USA Rice Federation"]["origins"]} == {
            ("field", "USA Rice, U.S. Wheat Associates, U.S. Grains Council"), ("field", "American Insurance Association")}
        assert listed["Wisconsin Department of Children & Families"]["origins"] == [
            {"source": "title", "evidence": "Wisconsin Department of Children & Families", "comments": 1}]
        assert cli.main(["orgs", "--docket", "ACF-2025-0038"]) == 0
        table = capsys.readouterr().out
        assert "Wisconsin Department of Children & Families" in table and "USA Rice" not in table
        assert "title: Wisconsin Department of Children & Families" in table
        assert cli.main(["orgs", "--docket", "NOPE-2026-0001"]) == 2
        assert "unknown docket: NOPE-2026-0001" in capsys.readouterr().err

        # The comment page names the organisation resolved, beside the one written.
        with TestClient(make_app(runtime, pages.WarmSearch(runtime)), base_url="http://127.0.0.1") as client:
            merged = client.get("/comment/USTR-2015-0010-0003").text
            titled = client.get("/comment/ACF-2025-0038-0004").text
        assert "organisation resolved" in merged and "USA Rice Federation" in merged
        assert "American Insurance Association" in merged  # as written
        assert "Wisconsin Department of Children &amp; Families" in titled and "from its title" in titled
