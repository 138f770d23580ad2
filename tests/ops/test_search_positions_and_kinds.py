"""``docketeer search --position`` keeps the comments the positions stage placed there, and
``--kind comments|documents|both`` looks where the search page's ``kind=`` looks; each result of
``--json`` says its kind."""

from __future__ import annotations

import json

import pytest

from pipeline.ops import cli
from tests.fixtures.position_search import (
    COMMENTS,
    DOCUMENT,
    QUERY,
    D,
    placed,
    position_search_store,
)

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def rt(tmp_path_factory, pg_server):
    with position_search_store(tmp_path_factory.mktemp("search-positions"), pg_server) as runtime:
        yield runtime


def _search(capsys, *argv: str) -> dict:
    assert cli.main(["search", QUERY, "--docket", D, "-k", str(COMMENTS + 1), "--cold", "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_command_line_narrows_a_search_to_a_position(rt, capsys):
    every = {r["item_id"] for r in _search(capsys)["results"] if r["kind"] == "comment"}
    assert every & placed("support") and every - placed("support")
    for position in ("support", "oppose"):
        document = _search(capsys, "--position", position)
        found = {r["item_id"] for r in document["results"]}
        assert document["position"] == position and found and found <= placed(position)
        assert {r["kind"] for r in document["results"]} == {"comment"}  # a position is a comment's
    assert _search(capsys, "--position", "no_position")["results"] == []  # no comment placed there


def test_kind_looks_in_the_comments_the_documents_or_both(rt, capsys):
    both = _search(capsys)["results"]
    assert {r["kind"] for r in both} == {"comment", "document"}
    assert _search(capsys, "--kind", "both")["results"] == both  # the default, said
    documents = _search(capsys, "--kind", "documents")
    assert [(r["item_id"], r["kind"], r["collection"]) for r in documents["results"]] == [
        (DOCUMENT, "document", "documents")]
    assert documents["collection"] == "documents"
    comments = _search(capsys, "--kind", "comments")["results"]
    assert comments and {r["kind"] for r in comments} == {"comment"}
    assert [r["item_id"] for r in comments] == [r["item_id"] for r in both if r["kind"] == "comment"]
    # The text output says the same items as the JSON's.
    assert cli.main(["search", QUERY, "--docket", D, "-k", "5", "--cold", "--kind", "documents"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line[:4].strip().endswith(".")]
    assert [line.split()[2] for line in lines] == [DOCUMENT]
