"""Several organisations in one field: the splitting rules (lists split, list-like single names
kept whole), the alias file's ``split:`` entries, and the stage writing one member row per
organisation, incrementally: a rerun writes nothing, new comments alone are resolved, a changed
``split:`` entry redoes exactly the comments written with that field."""

from __future__ import annotations

import pytest

from devtools.organisation_corpus import PlantedComment, seed_store
from pipeline.counters import ROWS_WRITTEN, counters
from pipeline.engine.stage import StageContext
from pipeline.errors import ConfigError
from pipeline.ops import export as export_module
from pipeline.organisations.aliases import parse_aliases
from pipeline.organisations.matching import organisation_id
from pipeline.organisations.names import candidate, normalise
from pipeline.organisations.splitting import split_names
from pipeline.organisations.stage import STAGE, resolve_docket, unfinished
from pipeline.reading import organisations as organisation_reads
from pipeline.store import dockets
from pipeline.store.models import ItemState, OrganisationMember
from tests.fixtures.state_fixtures import installed, make_runtime

D = "ORG-2026-0001"


@pytest.mark.parametrize(("field", "parts"), [
    ("American Medical Association; American Hospital Association",
     ["American Medical Association", "American Hospital Association"]),
    ("AMA and AHA", ["AMA", "AHA"]),
    ("National Farmers Union, American Farm Bureau Federation, and National Grange Association",
     ["National Farmers Union", "American Farm Bureau Federation", "National Grange Association"]),
    ("Ohio Nurses Association & Ohio Hospital Association", ["Ohio Nurses Association", "Ohio Hospital Association"]),
    ("Sierra Club\nTexas Medical Association", ["Sierra Club", "Texas Medical Association"]),
    ("AMA; AMA", ["AMA"]),  # one organisation written twice is one
    # Real fields: a coalition's members (single-word brands among them; ", PLC" stays with the
    # name before it), three associations, two bodies joined by "and" one of them a brand.
    ("IDEMIA North America, Fiserv, Capital One, Mastercard, Visa, ETA, ICBA, IPA, PLC",
     ["IDEMIA North America", "Fiserv", "Capital One", "Mastercard", "Visa", "ETA", "ICBA", "IPA, PLC"]),
    ("USA Rice, U.S. Wheat Associates, U.S. Grains Council", ["USA Rice", "U.S. Wheat Associates", "U.S. Grains Council"]),
    ("NCTA - The Internet & Television Association and CableLabs",
     ["NCTA - The Internet & Television Association", "CableLabs"]),
    ("American Farm Bureau Federation, National Farmers Union, Sierra Club et al.",
     ["American Farm Bureau Federation", "National Farmers Union", "Sierra Club"]),
    ("Sierra Club, Earthjustice, and Defenders of Wildlife", ["Sierra Club", "Earthjustice", "Defenders of Wildlife"]),
    ("Ohio Nurses Association, Texas Medical Association and Sierra Club",
     ["Ohio Nurses Association", "Texas Medical Association", "Sierra Club"]),
])
def test_a_list_of_organisations_is_split(field, parts):
    assert split_names(field) == parts


@pytest.mark.parametrize("name", [
    "Johnson & Johnson", "Procter and Gamble", "Department of Health and Human Services",
    "Alliance of Farmers and Ranchers", "Wisconsin Department of Children & Families", "Acme, Inc.",
    "Smith and Jones Foundation", "Ohio Nurses Association", "Prairie Seed Company, L.L.C.", "Acme Corp, LLC",
    # Commas inside one name: a firm's surnames, words after "of", a campus, a project of a centre.
    "Smith, Jones & Co.", "Skadden, Arps, Slate, Meagher & Flom LLP", "Bureau of Alcohol, Tobacco and Firearms",
    "Center on Business, Law, and Economics", "University of California, Los Angeles, School of Law",
    "Renewing American Innovation Project, Center for Strategic and International Studies",
    "Los Angeles, California, USA", "BSA | The Software Alliance",
])
def test_a_list_like_single_name_is_kept_whole(name):
    assert split_names(name) == [name]


def test_the_alias_files_split_entries_split_or_keep_a_field():
    aliases = parse_aliases(
        "organisations: []\n"
        "split:\n"
        "  - name: AMA/AHA\n    into: [American Medical Association, American Hospital Association]\n"
        "  - name: Ohio Nurses Association & Ohio Hospital Association\n")
    assert split_names("AMA/AHA", aliases.splits) == ["American Medical Association", "American Hospital Association"]
    assert split_names("Ohio Nurses Association & Ohio Hospital Association", aliases.splits) == \
        ["Ohio Nurses Association & Ohio Hospital Association"]


@pytest.mark.parametrize(("text", "says"), [
    ("split: 3\n", "expected 'split:'"),
    ("split:\n  - into: [A]\n", "needs a 'name'"),
    ("split:\n  - name: X\n    into: A\n", "'into' must be a list"),
])
def test_a_bad_split_entry_is_one_clear_line(text, says):
    with pytest.raises(ConfigError, match=says):
        parse_aliases(text)


def _resolve(runtime, run_id="test"):
    with counters.measure() as io:
        result = resolve_docket(StageContext(runtime=runtime, run_id=run_id), dockets.require_docket(D))
    return dict(result.counts), io.get(ROWS_WRITTEN, 0)


def _members() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for item, org in (OrganisationMember.select(OrganisationMember.item, OrganisationMember.organisation)
                      .order_by(OrganisationMember.item, OrganisationMember.position).tuples()):
        found.setdefault(item, []).append(org)
    return found


def _comment(n: int, field: str) -> PlantedComment:
    return PlantedComment(f"{D}-{n:04d}", D, "Jo Ng", field, "Comment from Jo Ng", "", None)


FIELDS = ["American Medical Association; American Hospital Association", "American Medical Association",
          "Johnson & Johnson", "Ohio Nurses Association & Ohio Hospital Association", "Procter and Gamble",
          "Jane Doe on behalf of Sierra Club and Texas Medical Association"]


def test_the_stage_writes_one_member_per_organisation_incrementally(tmp_path):
    runtime = make_runtime(tmp_path)
    with installed(runtime):
        runtime.state  # noqa: B018
        seed_store([_comment(n, f) for n, f in enumerate(FIELDS, start=1)])
        counts, _ = _resolve(runtime)
        assert counts == {"assigned": 6, "several_organisations": 3}
        members = _members()
        ama = organisation_id(normalise("American Medical Association"))
        assert members[f"{D}-0001"] == [ama, organisation_id(normalise("American Hospital Association"))]
        assert members[f"{D}-0002"] == [ama]  # the same organisation, alone or in a list
        assert len(members[f"{D}-0003"]) == len(members[f"{D}-0005"]) == 1
        assert len(members[f"{D}-0004"]) == len(members[f"{D}-0006"]) == 2
        summary = {s.name: s.comments for s in organisation_reads.organisations_summary(D)}
        assert summary["American Medical Association"] == 2 and summary["Sierra Club"] == 1

        assert _resolve(runtime, "again") == ({}, 0)  # a rerun reads and writes nothing
        seed_store([_comment(7, "AMA and AHA")])
        counts, written = _resolve(runtime, "new")
        assert counts == {"assigned": 1, "several_organisations": 1}
        assert len(_members()[f"{D}-0007"]) == 2

        # A split: entry keeps one field whole and splits another: those comments alone redone.
        (runtime.settings.data_path / "organisations.yaml").write_text(
            "split:\n  - name: Ohio Nurses Association & Ohio Hospital Association\n"
            "  - name: Procter and Gamble\n    into: [Procter, Gamble]\n")
        assert unfinished(runtime, D) == 2
        counts, _ = _resolve(runtime, "split")
        assert counts == {"assigned": 2, "several_organisations": 1}
        redone = {i for (i,) in ItemState.select(ItemState.item).where(
            (ItemState.stage == STAGE) & (ItemState.run_id == "split")).tuples()}
        assert redone == {f"{D}-0004", f"{D}-0005"}
        members = _members()
        assert len(members[f"{D}-0004"]) == 1 and len(members[f"{D}-0005"]) == 2
        assert _resolve(runtime, "again") == ({}, 0)

        tables = export_module.docket_tables(runtime, D)
        rows = [r for r in tables["comment_organisations"] if r["comment_id"] == f"{D}-0001"]
        assert [(r["position"], r["organisation"]) for r in rows] == \
            [(0, "American Medical Association"), (1, "American Hospital Association")]
        counted = {r["comment_id"]: r["organisation_count"] for r in tables["comments"]}
        assert counted[f"{D}-0001"] == 2 and counted[f"{D}-0004"] == 1
    runtime.close()


def test_serve_shows_the_resolved_organisation_in_every_spelling(tmp_path):
    """The organisation page and feed, by any spelling or the id, list every comment resolved
    to it (a field naming it beside another included), and its spellings with their counts."""
    from starlette.testclient import TestClient

    from pipeline.web import browse, pages
    from pipeline.web.app import make_app

    runtime = make_runtime(tmp_path)
    with installed(runtime):
        runtime.state  # noqa: B018
        seed_store([_comment(n, f) for n, f in enumerate(
            ["American Medical Association", "Amer. Med. Assn.", "American Medical Association; Sierra Club",
             "Sierra Club", "Procter and Gamble"], start=1)])
        _resolve(runtime)
        ama = organisation_id(normalise("American Medical Association"))
        page = browse.organisation_page("AMERICAN MEDICAL ASSN", 1)
        assert page.organisation_id == ama and page.name == "American Medical Association"
        assert page.total == 3 and sorted(r.key for r in page.rows) == [f"{D}-0001", f"{D}-0002", f"{D}-0003"]
        assert dict(page.variants) == {"American Medical Association": 2, "Amer. Med. Assn.": 1}
        with TestClient(make_app(runtime, pages.WarmSearch(runtime)), base_url="http://127.0.0.1") as client:
            by_id = client.get("/organisation", params={"id": ama})
            assert by_id.status_code == 200 and "3 comments naming this organisation" in by_id.text
            assert "Amer. Med. Assn." in by_id.text
            feed = client.get("/feed/organisation", params={"name": "Amer. Med. Assn."})
            assert feed.status_code == 200 and feed.text.count("<entry>") == 3
            comment = client.get(f"/comment/{D}-0003")
            assert f'href="/organisation?id={ama}"' in comment.text and "Sierra Club" in comment.text
            # A name the stage never resolved: the comments written with it, as before.
            assert client.get("/organisation", params={"name": "Nobody At All"}).status_code == 404
    runtime.close()


def test_the_planted_lists_split_into_their_names_and_list_like_names_stay_whole():
    import random

    from devtools.organisation_corpus import (
        LIST_LIKE_NAMES,
        multi_organisation_fields,
        planted_names,
    )

    rng = random.Random(3)
    for field, parts in multi_organisation_fields(rng, planted_names(rng, 200), 150):
        written = candidate(field, None, None, None).raw  # "... on behalf of" dropped first, as the stage does
        assert [normalise(n) for n in split_names(written)] == [normalise(p) for p in parts], field
    assert all(split_names(name) == [name] for name in LIST_LIKE_NAMES)
