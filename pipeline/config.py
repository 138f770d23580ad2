"""Settings: defaults here, overridden by ``luigi.cfg`` ``[docketeer]``, overridden by environment.

Every setting has a default, may be set in the ``[docketeer]`` section of ``luigi.cfg`` and
may be overridden by ``DOCKETEER_<NAME>`` (secrets also by their conventional variable, e.g.
``REGULATIONS_GOV_API_KEY``). ``docketeer config`` prints the effective values and where
each came from, with secrets masked.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import luigi

from pipeline.errors import ConfigError

SECTION = "docketeer"

LUIGI_DEFAULTS = Path(__file__).with_name("luigi_defaults.cfg")


def install_luigi_defaults() -> None:
    """Put the Luigi settings docketeer relies on (``[retcode]``, ``[worker]``, ...) first
    among Luigi's configuration files, wherever the process runs from: Luigi reads only
    ./luigi.cfg, /etc/luigi and $LUIGI_CONFIG_PATH, so from another folder a failed task
    exited 0. First, so that every file a user has (read after it, in Luigi's order) wins.
    Luigi reads [retcode] after ``--module pipeline`` is imported, and this runs at that
    import (``pipeline.config`` is imported by ``pipeline``'s own import then)."""
    from luigi.configuration.cfg_parser import LuigiConfigParser

    paths = LuigiConfigParser._config_paths
    if str(LUIGI_DEFAULTS) in paths:
        return
    paths.insert(0, str(LUIGI_DEFAULTS))
    if LuigiConfigParser._instance is not None:  # already read: read again, ours first
        LuigiConfigParser.reload()


install_luigi_defaults()


@dataclass(frozen=True)
class Setting:
    name: str
    kind: type
    default: Any
    doc: str
    choices: tuple[str, ...] = ()
    secret: bool = False
    env_aliases: tuple[str, ...] = ()
    minimum: float | None = None


SETTINGS: tuple[Setting, ...] = (
    Setting("data_dir", str, "./data", "folder for every file docketeer writes"),
    Setting("state_url", str, "", "state DB: empty = SQLite under data_dir, or postgresql://..."),
    Setting("index_url", str, "", "index DB: empty = embedded PostgreSQL under data_dir, or postgresql://..."),
    Setting("blob_url", str, "", "blob store: empty = data_dir/blobs, a folder, or s3://bucket/prefix"),
    Setting("s3_endpoint_url", str, "", "S3 endpoint for blob_url / mirror_url (empty = AWS)"),
    Setting("source", str, "api", "where details and attachments come from", ("api", "mirror")),
    Setting("api_base", str, "https://api.regulations.gov/v4", "regulations.gov v4 base URL"),
    Setting("api_key", str, "", "regulations.gov API key", secret=True,
            env_aliases=("REGULATIONS_GOV_API_KEY",)),
    Setting("download_hosts", str, "downloads.regulations.gov",
            "comma-separated hosts attachment files may come from besides the API host (https; "
            "write http://host:port to allow plain HTTP)"),
    Setting("download_headers", str, "",
            "headers sent with attachment downloads, a JSON object (empty = a browser's User-Agent, "
            "Accept and Accept-Language: the download host refuses non-browser requests); never the key"),
    Setting("fr_base", str, "https://www.federalregister.gov/api/v1", "Federal Register API base URL"),
    Setting("mirror_url", str, "", "mirrulations-layout mirror: a folder or s3://bucket[/prefix]"),
    Setting("mirror_unsigned", str, "auto", "S3 mirror reads: auto = unsigned first, signed once the bucket refuses; true/false force one way", ("auto", "true", "false")),
    Setting("mirror_concurrency", int, 16, "mirror reads (S3 or folder) and blob writes in flight at once in backfill", minimum=1),
    Setting("s3_retry_mode", str, "standard", "botocore's retry mode for S3 requests", ("standard", "adaptive")),
    Setting("s3_max_attempts", int, 8, "attempts botocore makes per S3 request (first one included)", minimum=1),
    Setting("discover", str, "list", "where docket rows come from", ("list", "fr", "mirror", "none")),
    Setting("dockets", str, "", "comma-separated docket ids for discover=list"),
    Setting("fr_agencies", str, "", "comma-separated Federal Register agency slugs for discover=fr"),
    Setting("fr_since", str, "", "publication date lower bound YYYY-MM-DD for discover=fr"),
    Setting("seal_quiet_days", int, 30, "days after comment close before a quiet docket seals", minimum=0),
    Setting("freshness_seconds", int, 3600, "an open docket is re-pulled once per window", minimum=1),
    Setting("discover_seconds", int, 86400, "discovery runs once per window", minimum=1),
    Setting("lease_seconds", int, 7200, "a (stage, docket) lease expires after this", minimum=1),
    Setting("request_budget", int, 900, "API requests allowed per run (0 = unlimited)", minimum=0),
    Setting("budget_seconds", int, 0, "wall-clock seconds per run (0 = unlimited)", minimum=0),
    Setting("pace_seconds", float, 0.5, "minimum seconds between API calls", minimum=0),
    Setting("request_seconds", float, 600.0, "a total deadline per HTTP request: connect, headers and the whole body", minimum=1),
    Setting("http_attempts", int, 6, "tries of one HTTP request (transient errors, backoff) before its item waits to retry", minimum=1),
    Setting("max_attachment_bytes", int, 200 * 1024 * 1024, "larger attachments are too_large", minimum=1),
    Setting("format_preference", str, "pdf,docx,doc,txt,htm,html,rtf,wpd,xlsx,xls,csv,pptx,msg,tif,tiff,png,jpg,jpeg,gif", "attachment format preference order"),
    Setting("extract_workers", int, 0, "extraction processes (0 = number of cores)", minimum=0),
    Setting("max_pdf_pages", int, 2000, "PDFs with more pages are failed", minimum=1),
    Setting("max_docx_bytes", int, 200 * 1024 * 1024, "DOCX uncompressed size limit", minimum=1),
    Setting("file_seconds", int, 120, "per-file extraction time limit", minimum=1),
    Setting("max_file_chars", int, 2_000_000, "characters of text kept per file (the rest is cut, with a reason)", minimum=1000),
    Setting("max_item_chunks", int, 2000, "chunks indexed per item (the rest is left out and counted)", minimum=1),
    Setting("ocr", bool, True, "OCR image-only PDFs before indexing (needs Debian's tesseract-ocr)"),
    Setting("embedder", str, "minilm", "embedding model (minilm-int8: MiniLM quantised to int8, opt-in)",
            ("minilm", "minilm-int8", "openai", "hashing")),
    Setting("embed_batch", int, 64, "chunks per embed call", minimum=1),
    Setting("search_ef", int, 250, "HNSW candidates a vector search keeps (hnsw.ef_search; more: better recall, "
            "slower): the default reached recall@10 1.0 against an exact search (docs/BENCHMARKS.md)", minimum=1),
    Setting("search_floor", float, None, "cosine similarity a search result needs when it lacks the query's words "
            "(empty = the embedder's calibrated floor: minilm and minilm-int8 0.45, hashing 0.21; docs/OPERATING.md)", minimum=0.0),
    Setting("chunk_chars", int, 1200, "maximum characters per chunk", minimum=200),
    Setting("openai_url", str, "http://127.0.0.1:8080/v1", "OpenAI-compatible embeddings endpoint"),
    Setting("openai_model", str, "text-embedding-3-small", "model name for embedder=openai"),
    Setting("openai_api_key", str, "", "key for embedder=openai", secret=True, env_aliases=("OPENAI_API_KEY",)),
    Setting("log_every_seconds", float, 10.0, "progress log interval", minimum=0.1),
    Setting("retry_base_seconds", int, 3600, "first wait before an item that failed transiently is retried (then x4 each time)", minimum=1),
    Setting("retry_max_attempts", int, 6, "attempts before a transient failure may become permanent", minimum=1),
    Setting("retry_horizon_days", float, 14.0, "... and days since its first failure", minimum=0),
    Setting("max_json_bytes", int, 64 * 1024 * 1024, "larger JSON records (API or mirror) are refused", minimum=1024),
    Setting("max_json_depth", int, 100, "JSON records nested deeper are refused", minimum=8),
    Setting("minilm_runtime", str, "onnx", "how embedder=minilm runs: onnx (exported once into model_cache, "
            "loads in a second) or torch (sentence-transformers); minilm-int8 runs under onnx only", ("onnx", "torch")),
    Setting("model_cache", str, "", "folder of the model files docketeer makes (MiniLM's ONNX export): empty = "
            "data_dir/models; one folder named by every store of a machine exports it once for all"),
    Setting("list_source", str, "auto", "where fetch lists a docket's comments and documents: auto = the "
            "mirror when source = mirror and no API key is set, else the API", ("auto", "api", "mirror")),
    Setting("mirror_agencies", str, "", "comma-separated agencies discover=mirror lists (empty = every agency)"),
    Setting("mirror_fallback", bool, False, "with source = mirror and an API key: take from the API, within "
            "request_budget, the details and files the mirror does not hold yet (else they wait to retry)"),
    Setting("max_body_chars", int, 2_000_000, "characters of an inline comment body kept (the rest is cut, with a reason)", minimum=1000),
    Setting("max_item_chars", int, 5_000_000, "characters kept per item, its body and every file together (the rest is cut, with a reason)", minimum=1000),
    Setting("campaigns", bool, True, "IndexAll also groups campaigns (CampaignGroups) after indexing; CampaignsAll runs them alone"),
    Setting("campaign_threshold", float, 0.5, "word-shingle Jaccard similarity at which a comment joins a campaign group", minimum=0.05),
    Setting("organisations", bool, True, "IndexAll also resolves each comment's organisation (ResolveOrganisations) "
            "after indexing; OrganisationsAll runs them alone"),
    Setting("lineage", bool, True, "IndexAll also ties comments to the documents they answer (LinkRule) after "
            "indexing; LineageAll runs them alone"),
    Setting("lineage_federal_register", bool, False, "lineage also asks the Federal Register (fr_base) which dockets "
            "and RINs each document's FR number names, once per number, and links those dockets (off: no network)"),
    Setting("topics", bool, True, "IndexAll also maps each docket's topics (TopicMap) after campaigns; TopicsAll runs them alone"),
    Setting("topic_min_comments", int, 2, "a docket with fewer distinct comments with text (a campaign's copies "
            "count once) gets no topic map (\"too few comments for topics\"); from this many on, a map of what "
            "there is, however few", minimum=1),
    Setting("topic_similarity", float, 0.5, "cosine similarity to a topic's centre at which a new comment is placed in it", minimum=0.0),
    Setting("sections", bool, True, "IndexAll also splits each docket's documents into sections and ties comments "
            "to them (DocumentSections) after topics; DocumentSectionsAll runs them alone"),
    Setting("section_nearest_floor", float, 0.55, "cosine similarity of a comment's passage to a document's "
            "passage at which the comment is shown nearest that passage's section", minimum=0.0),
    Setting("topic_recluster_share", float, 0.2, "share of new or unplaced comments at which a docket is clustered again", minimum=0.0),
    Setting("positions", bool, True, "IndexAll also estimates each docket's positions (Positions) after topics; "
            "PositionsAll runs them alone"),
    Setting("positions_min_codes", int, 20, "a docket with fewer coded comments with text (or fewer than two "
            "positions with 3 codes each) gets no predicted positions (\"not estimated yet: code N more\")", minimum=2),
    Setting("positions_scope", str, "docket", "the codes the position classifier learns from: the docket's, or "
            "every docket's of its rule (same RIN)", ("docket", "rule")),
    Setting("llm_url", str, "", "an OpenAI-compatible server (Ollama, vLLM, llama.cpp) whose POST /v1/chat/completions "
            "judges each distinct comment text's position with a quoted evidence; empty = no judge, nothing sent "
            "(docs/OPERATING.md, \"The language-model judge\")"),
    Setting("llm_model", str, "", "the model llm_url serves that judges positions (needed with llm_url)"),
    Setting("llm_api_key", str, "", "key sent as a bearer token to llm_url alone (empty: none sent)", secret=True,
            env_aliases=("OPENAI_API_KEY",)),
    Setting("organisations_file", str, "", "the alias file of organisation names (merge, split, canonical name): "
            "empty = organisations.yaml in data_dir, used when it exists"),
    Setting("host_id", str, "", "this host's name in leases and item claims (empty = the hostname); "
            "a holder with another host id is known dead only when its lease expires"),
    Setting("claim_batch", int, 20, "items a second worker on a docket stage claims at once (PostgreSQL state)", minimum=1),
    Setting("mirror_request_budget", int, 0, "mirror requests (LIST pages, GETs) allowed per fetch run (0 = unlimited; "
            "--request-budget on the command line sets it too)", minimum=0),
)
_BY_NAME = {s.name: s for s in SETTINGS}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _convert(setting: Setting, raw: str, origin: str) -> Any:
    text = raw.strip()
    if setting.default is None and not text:  # an optional value left empty: its default
        return None
    try:
        if setting.kind is bool:
            if text.lower() not in _TRUE | _FALSE:
                raise ValueError
            value: Any = text.lower() in _TRUE
        else:
            value = setting.kind(text)
    except ValueError:
        raise ConfigError(
            f"{setting.name} = {text!r} (from {origin}) is not a valid {setting.kind.__name__}"
        ) from None
    if setting.choices and value not in setting.choices:
        raise ConfigError(
            f"{setting.name} = {text!r} (from {origin}) must be one of: {', '.join(setting.choices)}"
        )
    if setting.minimum is not None and value < setting.minimum:
        raise ConfigError(f"{setting.name} = {text!r} (from {origin}) must be >= {setting.minimum:g}")
    return value


def _env_names(setting: Setting) -> tuple[str, ...]:
    return (f"DOCKETEER_{setting.name.upper()}", *setting.env_aliases)


@dataclass(frozen=True)
class Settings:
    values: dict[str, Any]
    origins: dict[str, str] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None

    # Derived locations: nothing is written outside data_dir unless a setting says so.
    @property
    def data_path(self) -> Path:
        return Path(self.values["data_dir"]).expanduser().resolve()

    @property
    def model_cache_path(self) -> Path:
        """Where the model files docketeer makes live: the setting, else data_dir/models (by
        default nothing is written outside the data folder; a folder shared by a machine's
        stores, named in each, exports MiniLM once for all of them)."""
        if self.values["model_cache"]:
            return Path(self.values["model_cache"]).expanduser().resolve()
        return self.data_path / "models"

    @property
    def docket_list(self) -> list[str]:
        return [d.strip() for d in self.values["dockets"].split(",") if d.strip()]

    @property
    def formats(self) -> list[str]:
        return [f.strip().lower() for f in self.values["format_preference"].split(",") if f.strip()]

    def masked(self) -> list[tuple[str, str, str]]:
        """(name, shown value, origin) with secrets masked, for ``docketeer config``: the
        effective value, so a store left to its default place says where it is."""
        derived = self.derived_places()
        rows = []
        for s in SETTINGS:
            value = self.values[s.name]
            origin = self.origins.get(s.name, "default")
            if s.secret:
                shown = "***" if value else "(unset)"
            elif s.name in derived:
                shown, origin = derived[s.name], f"{origin}: under data_dir"
            elif value is None:
                shown = "(empty)"
            elif s.name == "data_dir" and str(self.data_path) != value:
                shown = f"{value} (= {self.data_path})"
            else:
                shown = masked_url(str(value))
            rows.append((s.name, shown, origin))
        return rows

    def derived_places(self) -> dict[str, str]:
        """Where the stores left empty live: the state DB, the index DB and the blobs under
        data_dir (the runtime opens them there; pipeline/store/db.py, index/embedded_server.py)."""
        places = {"state_url": f"sqlite:///{self.data_path / 'state.sqlite'}",
                  "index_url": f"embedded PostgreSQL in {self.data_path / 'index-pg'}",
                  "blob_url": str(self.data_path / "blobs"), "model_cache": str(self.data_path / "models")}
        return {name: place for name, place in places.items() if not self.values[name]}

    def secrets(self) -> list[str]:
        """The keys, and the password of every URL setting (as written and decoded)."""
        keys = [self.values[s.name] for s in SETTINGS if s.secret and self.values[s.name]]
        passwords = [form for s in SETTINGS if s.kind is str and s.name.endswith("_url")
                     for password in url_passwords(self.values[s.name])
                     for form in {password, unquote(password)}]
        # A password of a character or two would mask every such letter of a message; it is
        # masked where it stands in a URL (masked_url) all the same.
        return sorted({*keys, *(p for p in passwords if len(p) >= MIN_MASKED_CHARS)}, key=len, reverse=True)

    def mask(self, text: str) -> str:
        """``text`` with every secret replaced by ***, and the password of any URL in it:
        for logs, run rows and errors."""
        text = masked_url(text)
        for secret in self.secrets():
            text = text.replace(secret, "***")
        return text


MIN_MASKED_CHARS = 3
# ``scheme://user:password@``: the password part of any URL in a text, up to the last ``@``
# before the host (a password may hold ``@`` when not percent-encoded).
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)[^\s/]*@")
# libpq also reads a password from the query string (``?password=...``).
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&]password=)[^&\s]*", re.IGNORECASE)


def url_passwords(url: str) -> list[str]:
    """The passwords a URL holds: its userinfo's and a libpq ``password=`` query parameter."""
    if "://" not in url:
        return []
    found = [match.group(0)[len(match.group("head")):-1] for match in _URL_PASSWORD.finditer(url)]
    try:
        query = urlsplit(url).query
    except ValueError:
        query = ""
    found += [value for key, value in parse_qsl(query) if key.lower() == "password" and value]
    return [p for p in found if p]


def masked_url(text: str) -> str:
    """``text`` with the password of every URL in it shown as ***."""
    text = _URL_PASSWORD.sub(lambda m: f"{m.group('head')}***@", text)
    return _QUERY_PASSWORD.sub(lambda m: f"{m.group('head')}***", text)


def load_settings(environ: dict[str, str] | None = None) -> Settings:
    """Resolve every setting: default < luigi.cfg [docketeer] < environment."""
    env = os.environ if environ is None else environ
    parser = luigi.configuration.get_config()
    known = set(_BY_NAME)
    if parser.has_section(SECTION):
        for option in parser.options(SECTION):
            if option not in known and option.replace("-", "_") not in known:
                raise ConfigError(f"unknown setting [{SECTION}] {option} in luigi.cfg")
    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for s in SETTINGS:
        value, origin = s.default, "default"
        if parser.has_option(SECTION, s.name):
            origin = "luigi.cfg"
            value = _convert(s, parser.get(SECTION, s.name), origin)
        for name in _env_names(s):
            if name in env and env[name] != "":
                origin = f"env {name}"
                value = _convert(s, env[name], origin)
                break
        if s.secret and value:
            check_secret(value, _env_names(s)[-1])
        values[s.name], origins[s.name] = value, origin
    return Settings(values, origins)


def check_secret(value: str, name: str) -> None:
    """A key with whitespace or control characters would break the request header, and the
    error would print it: refused at start, in one line that does not show it."""
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in value):
        raise ConfigError(f"{name} contains whitespace or a control character; check how it was set")


def ensure_data_dir(settings: Settings) -> Path:
    """Create the data folder and prove it is writable, or raise one clear ConfigError."""
    path = settings.data_path
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".write-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(f"data_dir {path} is not writable: {exc.strerror or exc}") from None
    return path


class docketeer(luigi.Config):  # noqa: N801 - luigi names the config section after the class
    """The ``[docketeer]`` luigi.cfg section; see SETTINGS for every option and its default.

    Declared so that luigi knows the section; values are resolved by ``load_settings`` so
    that environment variables can override the file.
    """


LUIGI_LOCK_FOLDER = "luigi-lock"


def lock_luigi_in_data_folder(environ: dict[str, str] | None = None, *, create: bool = False) -> None:
    """Point Luigi's process lock (``[core] lock_pid_dir``, /tmp/luigi by default) into the
    data folder. Luigi keys the lock on the command line alone, so the same command on
    another data folder found it taken and exited 10 having done nothing, and it wrote
    outside the data folder. Luigi reads the setting in ``interface._schedule_and_run``
    (``core()``), after ``--module pipeline`` was imported: this runs at that import. A
    ``lock_pid_dir`` the user set is kept. ``create``: make the folder (Luigi makes only
    the last level), for a ``luigi`` command line only, so that importing writes nothing."""
    parser = luigi.configuration.get_config()
    if parser.has_option("core", "lock_pid_dir"):
        return
    try:
        data_path = load_settings(environ).data_path
    except ConfigError:  # the runtime says so in one line when the first task starts
        return
    if create:
        try:
            data_path.mkdir(parents=True, exist_ok=True)
        except OSError:  # the same: ensure_data_dir reports it
            return
    if not parser.has_section("core"):
        parser.add_section("core")
    parser.set("core", "lock_pid_dir", str(data_path / LUIGI_LOCK_FOLDER))
