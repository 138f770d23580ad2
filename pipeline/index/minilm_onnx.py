"""all-MiniLM-L6-v2 through ONNX Runtime: sentence-transformers' vectors without torch.

Importing torch and sentence-transformers takes 10-30 s here, longer than any search. The
same weights exported once to ONNX (``export_onnx``: written from the weights without torch,
``minilm_graph``, or for a model it does not know traced by torch) run under ``onnxruntime``
with the Rust ``tokenizers`` library: both import in a fraction of a second.

The model package's ``modules.json`` says what sentence-transformers does with the weights:
Transformer (the tokenizer truncating at ``max_seq_length`` from
``sentence_bert_config.json``), Pooling (``1_Pooling/config.json``: mean over the tokens the
attention mask keeps) and Normalize (L2). ``OnnxMiniLM`` does exactly that, so its vectors
equal sentence-transformers' (cosine >= 0.9999, tests/index/test_minilm_onnx.py) and an index
built with either is searched with the other under the same embedder id.
"""

from __future__ import annotations

import json
import os
import queue
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pipeline.errors import ConfigError

# The cache key (onnx_file's name): the model package's version and this exporter's version.
# Not torch's, transformers' or onnx's: the graph computes the model's function from the same
# weights whatever torch traced it (each export is checked against torch before it is kept,
# MAX_EXPORT_ERROR), and reading the key must not need torch, which an ONNX-only process never
# imports. A change here that alters the graph bumps EXPORT_VERSION.
# Bump when the exported graph changes: a new file is made. onnx-2: attention traced as
# transformers' "eager" matmul-softmax-matmul instead of its SDPA path, whose mask handling
# (Where/IsNaN per layer) ONNX Runtime cannot fuse; 2-5 % more chunks per CPU-second here.
# onnx-3: the graph written from the weights (minilm_graph), no torch: 2-3 s instead of 10-60.
EXPORT_VERSION = "onnx-3"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OPSET = 17
# An exported graph is kept only when its hidden states equal torch's to this much.
MAX_EXPORT_ERROR = 1e-3


def onnx_file(cache_dir: Path, model_version: str) -> Path:
    """Where the export of this model version lives (one file per model and export version:
    its cache key, ``model_cache.cached_file`` makes it)."""
    return Path(cache_dir) / f"all-MiniLM-L6-v2-{model_version}-{EXPORT_VERSION}.onnx"


# Bump when the quantisation changes (its method, its options): a new int8 file is made, and
# the minilm-int8 embedder id, which carries it, re-embeds what the old one indexed.
# int8-1: onnxruntime's quantize_dynamic, signed int8 weights, one scale per output channel.
QUANTISE_VERSION = "int8-1"


def quantised_file(cache_dir: Path, model_version: str) -> Path:
    """Where the int8 copy of ``onnx_file``'s export lives, beside it (its key: the export's
    and the quantisation's versions)."""
    exported = onnx_file(cache_dir, model_version)
    return exported.with_name(f"{exported.stem}-{QUANTISE_VERSION}.onnx")


# Tokens (texts x their longest, padding included) per model call. Measured on 1,200-char
# chunks on a 2-core EPYC with a 32 MiB cache (docs/BENCHMARKS.md): calls of 256 tokens (one
# long chunk, or a few short ones) embed 1.7x more chunks per CPU-second than calls of 4,096;
# a bigger call's attention tensors leave the cache.
BATCH_TOKENS = 256


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class OnnxMiniLM:
    """Tokenise, run the exported transformer, mean-pool under the mask, L2-normalise.

    One session per core, each on one thread, fed small batches of like-length texts from a
    thread pool (ONNX Runtime releases the GIL while it runs): two sessions on two cores
    embed nearly twice as fast, where a second intra-op thread in one session adds 1.2x.
    """

    def __init__(self, model_dir: Path, onnx_path: Path, sessions: int | None = None) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        model_dir = Path(model_dir)
        _require_mean_pooling(model_dir)
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=_max_seq_length(model_dir))
        self.tokenizer.no_padding()  # padded per batch, to its own longest text
        self.pad_id = self.tokenizer.token_to_id("[PAD]") or 0
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only: no warnings in cron logs
        # Idle threads sleep instead of spinning: on a shared machine spinning burns the
        # cores other processes (extract workers, PostgreSQL) are waiting for.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.sessions = queue.SimpleQueue()
        for _ in range(sessions or cores()):
            self.sessions.put(onnxruntime.InferenceSession(
                str(onnx_path), options, providers=["CPUExecutionProvider"]))
        self.workers = sessions or cores()
        self._pool: ThreadPoolExecutor | None = None

    def encode(self, texts: list[str], batch_size: int = 64) -> list[list[float]]:
        """One unit vector per text, in input order. ``batch_size``: at most this many texts
        in one model call (BATCH_TOKENS decides first)."""
        encodings = self.tokenizer.encode_batch(list(texts))
        vectors: list = [None] * len(texts)
        batches = token_batches([len(e.ids) for e in encodings], BATCH_TOKENS, batch_size)
        if self.workers > 1 and len(batches) > 1:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="minilm")
            results = self._pool.map(lambda batch: self._encode_batch([encodings[i] for i in batch]), batches)
        else:
            results = (self._encode_batch([encodings[i] for i in batch]) for batch in batches)
        for batch, batch_vectors in zip(batches, results, strict=True):
            for i, vector in zip(batch, batch_vectors, strict=True):
                vectors[i] = vector.tolist()
        return vectors

    def _encode_batch(self, encodings):
        import numpy as np

        longest = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), longest), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), longest), dtype=np.int64)
        types = np.zeros((len(encodings), longest), dtype=np.int64)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = e.ids, e.attention_mask, e.type_ids
        session = self.sessions.get()  # this call's own: a session runs one call at a time
        try:
            [hidden] = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
        finally:
            self.sessions.put(session)
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)


def token_batches(lengths: list[int], batch_tokens: int, max_texts: int) -> list[list[int]]:
    """Indexes of texts by length, longest first, cut into batches whose padded size (texts
    x the longest) stays within ``batch_tokens`` (a longer text alone) and ``max_texts``."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    for i in order:
        batch = batches[-1] if batches else None
        # Sorted longest first: a batch's first text is its longest.
        if batch and len(batch) < max_texts and (len(batch) + 1) * lengths[batch[0]] <= batch_tokens:
            batch.append(i)
        else:
            batches.append([i])
    return batches


def _require_mean_pooling(model_dir: Path) -> None:
    config = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
    modes = [key for key, on in config.items() if key.startswith("pooling_mode_") and on]
    if modes != ["pooling_mode_mean_tokens"]:
        raise ConfigError(f"the ONNX MiniLM runtime does mean pooling only; the model asks {modes}")


def _max_seq_length(model_dir: Path) -> int:
    return int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])


# --- the export (once per model cache) ------------------------------------------------------


def export_onnx(model_dir: Path, target: Path) -> None:
    """Write the model's transformer to ``target``: from its weights without torch when
    ``minilm_graph`` knows its architecture, else traced by torch and checked against it.

    Written under a private name and renamed: a concurrent exporter or reader never sees a
    half-written file. Raises ConfigError when the export cannot be made or does not match.
    """
    from pipeline.index import minilm_graph

    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}")
    try:
        try:
            minilm_graph.check_supported(model_dir)
        except ConfigError:
            _export_with_torch(model_dir, temporary)
        else:
            minilm_graph.write_graph(model_dir, temporary, OPSET)
            _check_written(model_dir, temporary)
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def quantise(model_dir: Path, source: Path, target: Path) -> None:
    """Write the int8 copy of the export ``source`` to ``target``: every MatMul's weights as
    signed int8 with one scale per output channel, activations quantised at run time (dynamic:
    no calibration data, so the same export gives the same bytes on every run).

    Per channel, not per tensor: one scale per column keeps a column of small weights from
    being rounded to a few levels by its matrix's largest. Raises ConfigError when the copy
    does not run."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    advice = _DropPreprocessingAdvice()
    # quantize_dynamic advises, on the root logger, a shape pre-pass for static quantisation;
    # dynamic quantisation of MatMuls does not need it, and a cron log needs no advice.
    root.addFilter(advice)
    try:
        quantize_dynamic(Path(source), Path(target), per_channel=True, weight_type=QuantType.QInt8)
    finally:
        root.removeFilter(advice)
    _check_written(model_dir, Path(target))


class _DropPreprocessingAdvice:
    def filter(self, record) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def _check_written(model_dir: Path, path: Path) -> None:
    """The written graph runs and gives one finite vector per token (its numbers against
    sentence-transformers': tests/index/test_minilm_onnx.py)."""
    import numpy as np
    import onnxruntime
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]") or 0, pad_token="[PAD]")
    encodings = tokenizer.encode_batch(["a short one", "a longer sample sentence to check the graph with"])
    feed = {name: np.array([getattr(e, field) for e in encodings], dtype=np.int64)
            for name, field in zip(INPUTS, ("ids", "attention_mask", "type_ids"), strict=True)}
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    [hidden] = session.run(None, feed)
    if hidden.shape[:2] != feed["input_ids"].shape or not np.isfinite(hidden).all():
        raise ConfigError(f"the written ONNX graph answers {hidden.shape}, not one finite vector per token")


def _export_with_torch(model_dir: Path, path: Path) -> None:
    """Trace the model with torch into ``path``, checked against torch."""
    model, sample = _torch_model_and_sample(model_dir)
    # Computed before the export: after tracing, this torch model answers differently.
    expected = _torch_hidden_states(model, sample)
    _export(model, sample, path)
    _check_export(expected, sample, path)


def _torch_model_and_sample(model_dir: Path):
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from tokenizers import Tokenizer
    from transformers import AutoModel
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()
    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True,
                                      attn_implementation="eager").eval()
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]") or 0, pad_token="[PAD]")
    # Traced with padding in the batch: a mask of all ones could be traced as "no mask".
    encodings = tokenizer.encode_batch(["a short one", "a longer sample sentence to trace the model with"])
    sample = tuple(torch.tensor([getattr(e, name) for e in encodings], dtype=torch.long)
                   for name in ("ids", "attention_mask", "type_ids"))
    return model, sample


class _HiddenStates:
    """The transformer as a function of its three inputs to its last hidden states."""

    def __new__(cls, model):
        import torch

        class Module(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, input_ids, attention_mask, token_type_ids):
                return self.model(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids).last_hidden_state

        return Module()


def _export(model, sample, path: Path) -> None:
    import torch

    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
    with warnings.catch_warnings(), torch.no_grad():
        # The TorchScript exporter warns about itself and its traces; the check below decides.
        warnings.simplefilter("ignore")
        torch.onnx.export(_HiddenStates(model), sample, str(path), input_names=list(INPUTS),
                          output_names=["last_hidden_state"], dynamic_axes=axes,
                          opset_version=OPSET, dynamo=False)


def _torch_hidden_states(model, sample):
    import torch

    with torch.no_grad():
        return _HiddenStates(model)(*sample).numpy()


def _check_export(expected, sample, path: Path) -> None:
    import numpy as np
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    [actual] = session.run(None, {name: t.numpy() for name, t in zip(INPUTS, sample, strict=True)})
    error = float(np.abs(actual - expected).max())
    if error > MAX_EXPORT_ERROR:
        raise ConfigError(f"the ONNX export differs from torch by {error:.2g}: not used")
