"""The warm search service answers as the in-process search does, refuses other settings,
and stops when asked (the model it keeps is the point: here the hashing embedder stands in)."""

from __future__ import annotations

import os
import time

import pytest

from pipeline.index import search_service
from pipeline.index.search import filters_of, format_hits, search
from pipeline.index.search_results import hit_records
from pipeline.index.stage import embedder_from
from tests.fixtures.pipeline_fixtures import built_store


@pytest.fixture
def store(tmp_path_factory, pg_server, monkeypatch):
    root = tmp_path_factory.mktemp("svc")
    if search_service.socket_path(root / "data") is None:
        pytest.skip("temporary folder too deep for a unix socket")
    with built_store(root, pg_server) as built:
        for name, value in built.env().items():  # the service is started with our settings
            monkeypatch.setenv(name, value)
        yield built


def test_warm_service_answers_like_the_in_process_search_and_stops(store):
    rt = store.runtime
    request = {"query": "hospital funding", "collection": None, "docket": None, "k": 3,
               "embedder": embedder_from(rt.settings).id, "index": search_service.index_key(rt.settings, rt.data_dir)}
    hits = search(rt.index_db(), embedder_from(rt.settings), "hospital funding", k=3)
    expected = format_hits(hits).rstrip()
    try:
        answer = search_service.ask(rt.data_dir, request)  # started, then asked
        assert answer["text"] == expected
        assert answer["records"] == hit_records(hits)  # what `search --json` prints
        started = time.monotonic()
        assert search_service.ask(rt.data_dir, request, start=False)["text"] == expected
        assert time.monotonic() - started < 1.5
        assert search_service.ask(rt.data_dir, {**request, "embedder": "other"}, start=False) is None
        # Its filters are the command's: Washington's days and an organisation.
        days = sorted({r["posted_day"] for r in hit_records(search(rt.index_db(), embedder_from(rt.settings),
                                                                   "hospital funding", k=50)) if r["posted_day"]})
        narrowed = {**request, "k": 50, "from": days[0], "to": days[0], "org": None}
        filtered = search(rt.index_db(), embedder_from(rt.settings), "hospital funding", k=50,
                          filters=filters_of(narrowed))
        answer = search_service.ask(rt.data_dir, narrowed, start=False)
        assert answer["filtered"] and answer["records"] == hit_records(filtered)
        assert {r["posted_day"] for r in answer["records"]} == {days[0]}
    finally:
        search_service.ask(rt.data_dir, {"stop": True}, start=False)
    deadline = time.monotonic() + 10
    while search_service.socket_path(rt.data_dir).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not search_service.socket_path(rt.data_dir).exists()
    assert os.path.exists(rt.data_dir / "search-service.log")
