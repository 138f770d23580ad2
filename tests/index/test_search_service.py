"""The warm search service answers as the in-process search does, refuses other settings,
and stops when asked (the model it keeps is the point: here the hashing embedder stands in)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from pipeline.index import search_service
from pipeline.index.search import answer_text, filters_of, format_hits, search, search_answer
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
        # And the comments of the resolved organisations the command sends with an organisation.
        chosen = [hits[0].item_key]
        resolved = {**request, "k": 50, "org": "no name holds this", "org_items": chosen}
        answer = search_service.ask(rt.data_dir, resolved, start=False)
        assert answer["org_items"] and [r["item_key"] for r in answer["records"]] == chosen
        # And the relevance floor of the search in-process: unrelated words match nothing.
        unrelated = search_answer(rt.index_db(), embedder_from(rt.settings), "zebra giraffe volcano", k=3)
        answer = search_service.ask(rt.data_dir, {**request, "query": "zebra giraffe volcano"}, start=False)
        assert answer["records"] == [] and answer["text"] == answer_text(unrelated).rstrip()
        assert answer["text"].startswith("no good match") and answer["floor"] == unrelated.floor
    finally:
        search_service.ask(rt.data_dir, {"stop": True}, start=False)
    deadline = time.monotonic() + 10
    while search_service.socket_path(rt.data_dir).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not search_service.socket_path(rt.data_dir).exists()
    assert os.path.exists(rt.data_dir / "search-service.log")


def postgres_serving(pgdata) -> list:
    """The PostgreSQL processes running over ``pgdata``."""
    import psutil

    found = []
    for process in psutil.process_iter(["name", "cmdline"]):
        try:
            if "postgres" in (process.info["name"] or "") and str(pgdata) in " ".join(process.info["cmdline"] or []):
                found.append(process)
        except psutil.Error:
            pass
    return found


@pytest.fixture
def embedded_store(tmp_path, monkeypatch):
    """A store whose index is the embedded server (the default): the service starts it."""
    from tests.fixtures.state_fixtures import make_runtime

    data = tmp_path / "data"
    if search_service.socket_path(data) is None:
        pytest.skip("temporary folder too deep for a unix socket")
    for name, value in {"DOCKETEER_DATA_DIR": str(data), "DOCKETEER_EMBEDDER": "hashing",
                        "DOCKETEER_INDEX_URL": "", "DOCKETEER_STATE_URL": "",
                        "DOCKETEER_DISCOVER": "none"}.items():
        monkeypatch.setenv(name, value)
    rt = make_runtime(tmp_path)
    rt.state  # noqa: B018 - the state DB
    rt.index_db()  # the embedded server's folder and schema, then stopped
    rt.close()
    assert not postgres_serving(data / "index-pg")
    return data


def _start_service(data):
    child = search_service._start(data)
    deadline = time.monotonic() + 120
    while not search_service.socket_path(data).exists():
        assert child.poll() is None and time.monotonic() < deadline, (data / "search-service.log").read_text()
        time.sleep(0.1)
    assert postgres_serving(data / "index-pg"), "the service runs the index server"
    return child


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_signal_stops_the_service_and_its_index_server(embedded_store, signum):
    child = _start_service(embedded_store)
    child.send_signal(signum)
    child.wait(timeout=60)
    assert not search_service.socket_path(embedded_store).exists()
    assert not postgres_serving(embedded_store / "index-pg")


def test_search_stop_stops_the_service_and_its_index_server(embedded_store):
    child = _start_service(embedded_store)
    done = subprocess.run([sys.executable, "-m", "pipeline.ops.cli", "search", "--stop"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"stopped the search service (pid {child.pid})"
    assert done.stdout.splitlines()[1].startswith("stopped the embedded index server (pid ")
    assert child.wait(timeout=10) == 0
    assert not postgres_serving(embedded_store / "index-pg")
    again = subprocess.run([sys.executable, "-m", "pipeline.ops.cli", "search", "--stop"],
                           capture_output=True, text=True, timeout=120)
    assert again.stdout.strip() == (f"nothing is running for {embedded_store}: no search service, "
                                    "no embedded index server")
