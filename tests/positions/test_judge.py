"""The language-model judge of positions against a stand-in OpenAI-compatible server
(devtools.llm_standin, real HTTP on loopback), over a generated docket of planted support and
oppose comments and one letter campaign: every distinct text asked once (the campaign's letter
once), its evidence quote checked against the text, a fabricated quote flagged, a garbage
answer the item's failure with its reason; the analyst's code wins; a rerun asks nothing and
a changed model asks again; the key goes to the server alone, never into the store or a log;
and without ``llm_url`` nothing at all is sent."""

from __future__ import annotations

import json
import logging
import socket

import pyarrow.parquet as pq
import pytest
from starlette.testclient import TestClient

from devtools.llm_standin import MODEL, LlmStandin
from devtools.position_corpus import position_comments, seed_positions
from pipeline.config import load_settings
from pipeline.engine.stage import StageContext
from pipeline.errors import BadRecord, ConfigError, KeyRejected
from pipeline.ops import cli
from pipeline.ops.export import export
from pipeline.positions import estimates, judge, scores
from pipeline.positions.stage import DECLARATION, ask_judge, estimate_docket, terms
from pipeline.reading import positions as reading
from pipeline.store import dockets, item_states
from pipeline.store.models import PositionJudgement, PositionMember
from pipeline.web import pages
from pipeline.web.app import make_app
from tests.fixtures.position_fixtures import EMBEDDER, D, code_first, position_runtime, run

pytestmark = pytest.mark.postgres
KEY = "sk-test-5f0c2a9d41b7e3"


@pytest.fixture
def standin():
    with LlmStandin(api_key=KEY) as server:
        yield server


def members() -> dict[str, PositionMember]:
    return {m.item: m for m in PositionMember.select().where(PositionMember.docket == D)}


def text_of(comment) -> str:
    return "\n\n".join(comment.paragraphs)


def test_the_judge_answers_each_distinct_text_once_with_checked_evidence(tmp_path, pg_url, standin, caplog,
                                                                          capsys):
    caplog.set_level(logging.DEBUG)
    planted = position_comments(D, 30, support_share=0.5, letter_copies=10)
    fabricated, garbled = planted[25], planted[28]  # outside the 22 coded
    standin.fabricate_containing = fabricated.paragraphs[1]
    standin.garbage_containing = garbled.paragraphs[1]
    assert [c.key for c in planted if standin.fabricate_containing in text_of(c)] == [fabricated.key]
    assert [c.key for c in planted if standin.garbage_containing in text_of(c)] == [garbled.key]
    with position_runtime(tmp_path, pg_url, llm_url=standin.url, llm_model=MODEL, llm_api_key=KEY) as rt:
        seed_positions(rt, D, planted, EMBEDDER)
        coded = code_first(planted, 22)
        result = run(rt)
        # 30 comments and one letter for its 10 copies: 31 texts, 31 requests, the garbled one failed
        assert standin.requests == 31 and len(standin.texts) == len(set(standin.texts)) == 31
        letter = "\n\n".join(planted[-1].paragraphs)
        assert sum(1 for t in standin.texts if t == letter) == 1
        assert result.counts["judge_asked"] == 30 and result.counts["judge_failed"] == 1
        assert result.counts["coded"] == 22 and result.counts["judged"] == 30 + 10 - 22 - 1
        assert set(standin.authorizations) == {f"Bearer {KEY}"}
        found = members()
        # the analyst's code wins, the judge's answer kept beside it (what it is scored by)
        assert all(found[k].position == p and found[k].source == "coded" and found[k].judged for k, p in coded.items())
        judged = {k: m for k, m in found.items() if m.source == "llm"}
        truth = {c.key: c.position for c in planted}
        assert sum(m.position == truth[k] for k, m in judged.items()) / len(judged) >= 0.9
        assert {m.quote for k, m in judged.items() if k != fabricated.key} == {judge.CHECKED}
        assert all(m.evidence in text_of(next(c for c in planted if c.key == k)) for k, m in judged.items()
                   if k != fabricated.key)
        assert found[fabricated.key].quote == judge.FLAGGED
        copies = [c.key for c in planted if c.campaign]
        assert len({(found[k].unit, found[k].evidence) for k in copies}) == 1
        assert garbled.key not in found
        state = item_states.states_for_docket("positions", D)[garbled.key]
        assert state.state == "failed" and "not a JSON object" in state.reason
        figures = reading.summary(D)
        assert figures["estimates"]["methods"]["model"] == estimates.JUDGE
        shown = figures["judge"]
        assert shown["model"] == MODEL and shown["quotes"] == {"checked": 29, "flagged": 1}
        assert shown["scores"] == scores.score(judge.pairs_of(found.values())) and shown["scores"]["pairs"] == 22

        assert run(rt).counts == {} and standin.requests == 31  # nothing new: nothing asked
        forced = run(rt, force=True)  # the kept answers serve; only the garbled text is asked again
        assert forced.counts["judge_kept"] == 30 and standin.requests == 32
        assert cli.main(["positions", D, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["judge"]["quotes"]["flagged"] == 1
        assert cli.main(["positions", D]) == 0
        assert "quotes 29 checked, 1 flagged" in capsys.readouterr().out

        with TestClient(make_app(rt, pages.WarmSearch(rt)), base_url="http://127.0.0.1") as client:
            page = client.get(f"/comment/{fabricated.key}").text
            assert "the language model&#39;s" in page or "the language model's" in page
            assert '<dd class="evidence flagged">' in page and "(flagged: this quote is not in the comment" in page
            checked = next(k for k, m in judged.items() if k != fabricated.key)
            page = client.get(f"/comment/{checked}").text
            assert '<dd class="evidence">' in page and "flagged" not in page
        export(rt, tmp_path / "out", [D], ("parquet",))
        rows = {r["comment_id"]: r for r in pq.read_table(tmp_path / "out" / D / "comments.parquet").to_pylist()}
        assert (rows[fabricated.key]["position_source"], rows[fabricated.key]["position_quote"]) == ("llm", "flagged")
        assert rows[fabricated.key]["position_evidence"] == found[fabricated.key].evidence
        assert rows[fabricated.key]["position_probability"] is None and rows[garbled.key]["position"] is None

        standin.models.add("standin-judge-2")
        other = load_settings({**_env(rt), "DOCKETEER_LLM_MODEL": "standin-judge-2"})
        assert terms(other) != terms(rt.settings)
        # as the engine runs it: asked before the stage's transaction (prepare), none asked within
        ctx = StageContext(runtime=rt, run_id="engine", settings=other)
        assert DECLARATION.prepare is ask_judge
        ask_judge(ctx, dockets.require_docket(D))
        assert ctx.prepared.asked == 30 and standin.requests == 32 + 31
        assert estimate_docket(ctx, dockets.require_docket(D)).counts["judge_asked"] == 30
        assert standin.requests == 32 + 31
        assert {m for (m,) in PositionJudgement.select(PositionJudgement.model).tuples()} == {MODEL, "standin-judge-2"}
        stored = b"".join(p.read_bytes() for p in (tmp_path / "data").glob("state.sqlite*"))
        assert KEY.encode() not in stored and len(stored) > 0
    assert KEY not in caplog.text


def _env(rt) -> dict[str, str]:
    names = ("data_dir", "state_url", "index_url", "discover", "embedder", "llm_url", "llm_api_key")
    return {f"DOCKETEER_{n.upper()}": str(rt.settings.values[n]) for n in names}


def test_nothing_is_sent_without_llm_url(tmp_path, pg_url, standin, monkeypatch):
    """The stand-in runs, a model and a key are set, llm_url is not: no request, no connection."""
    tried = []

    def guard(sock, address, *args):
        tried.append(address)
        raise OSError(f"a connection was attempted to {address}")

    monkeypatch.setattr(socket.socket, "connect", guard)
    monkeypatch.setattr(socket.socket, "connect_ex", guard)
    planted = position_comments(D, 30, letter_copies=5)
    with position_runtime(tmp_path, pg_url, llm_model=MODEL, llm_api_key=KEY) as rt:
        assert judge.judge_of(rt.settings) is None and judge.terms(rt.settings) == ""
        seed_positions(rt, D, planted, EMBEDDER)
        code_first(planted, 22)
        result = run(rt)
        assert result.counts["predicted"] == 35 - 22 and "judge_asked" not in result.counts
        assert {m.source for m in members().values()} == {"coded", "model"}
        assert {m.evidence for m in members().values()} == {""}
        assert PositionJudgement.select().count() == 0 and reading.summary(D)["judge"] is None
        assert reading.summary(D)["estimates"]["methods"]["model"] == estimates.MODEL
    assert standin.requests == 0 and tried == []


def test_a_server_down_waits_to_retry_and_a_rejected_key_stops_the_run(tmp_path, pg_url, standin):
    planted = position_comments(D, 6)
    with position_runtime(tmp_path, pg_url, llm_url=standin.url, llm_model=MODEL, llm_api_key="sk-wrong") as rt:
        seed_positions(rt, D, planted, EMBEDDER)
        with pytest.raises(KeyRejected) as rejected:
            run(rt)
        assert "sk-wrong" not in str(rejected.value) and standin.requests == 1
        standin.api_key = ""
        standin.fail_next_5xx = 100
        result = run(rt)  # the first text's attempts fail; the others are not asked this run
        assert result.counts["judge_waiting"] == 6 and "judged" not in result.counts
        assert standin.requests == 1 + judge.ATTEMPTS
        states = item_states.states_for_docket("positions", D)
        assert {s.state for s in states.values()} == {"retry"}
        assert all("did not answer" in s.reason or "503" in s.reason for s in states.values())
        assert run(rt).counts == {} and standin.requests == 1 + judge.ATTEMPTS  # not due yet
        standin.fail_next_5xx = 0
        assert run(rt, force=True).counts["judged"] == 6 and len(members()) == 6


def test_answers_are_read_strictly_and_quotes_compared_loosely():
    def said(content):
        return {"choices": [{"message": {"content": content}}]}

    assert judge.read_answer(said('```json\n{"position": "No position", "evidence": " It is late. "}\n```')) == (
        "no_position", "It is late.")
    for content, why in (("I support it", "not a JSON object"), ('{"position": "maybe", "evidence": "x"}',
                                                                  "no known position"),
                         ('{"position": "oppose"}', "no evidence"), (None, "no text")):
        with pytest.raises(BadRecord, match=why):
            judge.read_answer(said(content))
    with pytest.raises(BadRecord):
        judge.read_answer({"choices": []})
    text = "The agency\u2019s  proposal is\nHARMFUL \u2014 withdraw it."
    assert judge.quote_found("\u201cthe agency's proposal is harmful - withdraw it\u201d", text)
    assert not judge.quote_found("the agency's plan is harmful", text) and not judge.quote_found('""', text)


def test_a_judge_needs_a_model_and_an_http_url():
    for env, why in (({"DOCKETEER_LLM_URL": "http://127.0.0.1:1"}, "llm_model is not"),
                     ({"DOCKETEER_LLM_URL": "ftp://x", "DOCKETEER_LLM_MODEL": "m"}, "http:// or https://")):
        with pytest.raises(ConfigError, match=why):
            judge.judge_of(load_settings(env))
    found = judge.judge_of(load_settings({"DOCKETEER_LLM_URL": "http://h:8/v1/", "DOCKETEER_LLM_MODEL": "m",
                                          "OPENAI_API_KEY": KEY}))
    assert found.endpoint == "http://h:8/v1/chat/completions" and KEY not in repr(found)
    assert KEY not in found.fingerprint and found.api_key == KEY
