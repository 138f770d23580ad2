"""The optional language-model judge of positions: an OpenAI-compatible chat server (Ollama,
vLLM, llama.cpp's server) asked, once per distinct text, for a comment's position and a
verbatim quote of the comment that shows it.

Off unless ``llm_url`` is set: without it nothing here opens a connection. With it, each text
goes to ``POST {llm_url}/v1/chat/completions`` (the first ``MAX_CHARS`` of it), the key (if
any) as a bearer token to that host alone (``HttpTransport``'s session drops it on a redirect
elsewhere and masks it in every message). The answer is checked: a position of
``codes.POSITIONS`` and a quote found in the stored text (white space, quote marks and case
aside) is ``checked``, a quote not found ``flagged`` (kept, and shown marked). An answer that is
no such JSON object is the item's permanent failure with the reason; a server that does not
answer is transient (the rest of the run's texts wait for a later run); a rejected key or an
unknown model stops the run with one line.

Answers are kept per (docket, text fingerprint, judge fingerprint) (``PositionJudgement``): a
run asks only for texts it has no answer to, and a changed url, model or prompt asks again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pipeline.errors import BadRecord, ConfigError, PermanentHTTPError
from pipeline.failures import TRANSIENT, Failure, item_failure
from pipeline.fingerprints import digest
from pipeline.positions.codes import POSITIONS

PROMPT_VERSION = "judge-1"  # bump when the prompt or the answer's reading changes: every text is asked again
MAX_CHARS = 12_000  # of a text sent: the stance is said early, and a long exhibit would cost the most
TIMEOUT = (10.0, 300.0)  # connect, and one read: a local model on a CPU answers slowly
ATTEMPTS = 3
CHECKED, FLAGGED = "checked", "flagged"
SYSTEM = (
    "You read one public comment on a proposed federal rule and say the commenter's position on the "
    "rule. Answer with one JSON object and nothing else: {\"position\": \"...\", \"evidence\": \"...\"}. "
    "position is one of: support (wants the rule adopted as proposed, or stronger or sooner), oppose "
    "(wants it withdrawn, rejected or blocked; sharing the goal but not this rule is oppose), mixed "
    "(supports some parts and opposes others), no_position (about the rule but takes no side), "
    "off_topic (says nothing about the rule). evidence is the sentence or phrase of the comment that "
    "shows the position, copied word for word from the comment (never paraphrased)."
)


@dataclass(frozen=True)
class Judge:
    url: str  # the server's base, as set (without a trailing /v1)
    model: str
    api_key: str = field(default="", repr=False)

    @property
    def endpoint(self) -> str:
        return f"{self.url}/v1/chat/completions"

    @property
    def fingerprint(self) -> str:
        """What a kept answer was asked of: the server, the model and the prompt (never the key)."""
        return digest(PROMPT_VERSION, self.url, self.model)


def judge_of(settings) -> Judge | None:
    """The judge the settings name, or None when ``llm_url`` is empty (no judge, nothing sent);
    a url that is no http(s) URL, or no model, is one clear ConfigError."""
    url = (settings.llm_url or "").strip().rstrip("/")
    if not url:
        return None
    if not re.match(r"https?://[^/\s]+", url):
        raise ConfigError(f"llm_url must be an http:// or https:// URL of an OpenAI-compatible server, not {url!r}")
    if not (settings.llm_model or "").strip():
        raise ConfigError("llm_url is set but llm_model is not: set DOCKETEER_LLM_MODEL to a model the server serves")
    base = url[:-3] if url.endswith("/v1") else url
    return Judge(base, settings.llm_model.strip(), settings.llm_api_key or "")


def terms(settings) -> str:
    """The judge's part of the positions stage's terms: empty without one, so a store that
    never set ``llm_url`` keeps its fingerprints."""
    found = judge_of(settings)
    return "" if found is None else f":llm={found.fingerprint}"


@dataclass(frozen=True)
class Judgement:
    position: str
    evidence: str
    quote: str  # CHECKED | FLAGGED


# --- one text --------------------------------------------------------------------------------

def transport_of(judge: Judge):
    from pipeline.sources.http import HttpTransport

    return HttpTransport(timeout=TIMEOUT, max_attempts=ATTEMPTS, backoff_cap=30.0, secrets=(judge.api_key,),
                         service="language model", request_seconds=600.0)


def ask(transport, judge: Judge, text: str) -> Judgement:
    """The judge's position and evidence for ``text``, its quote checked against ``text``."""
    body = {"model": judge.model, "temperature": 0, "response_format": {"type": "json_object"},
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text[:MAX_CHARS]}]}
    headers = {"Authorization": f"Bearer {judge.api_key}"} if judge.api_key else None
    try:
        answer = transport.post_json("llm.chat", judge.endpoint, body, headers=headers)
    except PermanentHTTPError as exc:
        if exc.status == 404:  # Ollama and vLLM: no such model; elsewhere: no such endpoint
            raise ConfigError(f"the language model server answered 404 ({exc}): is llm_model {judge.model!r} "
                              f"served at llm_url {judge.url}?") from None
        raise
    position, evidence = read_answer(answer)
    return Judgement(position, evidence, CHECKED if quote_found(evidence, text) else FLAGGED)


def read_answer(answer: dict) -> tuple[str, str]:
    """(position, evidence) from a chat completion, or BadRecord saying what was wrong with it."""
    try:
        content = answer["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise BadRecord("the language model's answer has no choices[0].message.content") from None
    if not isinstance(content, str):
        raise BadRecord("the language model's answer has no text")
    said = " ".join(content.split())[:160]
    start, end = content.find("{"), content.rfind("}")
    try:
        found = json.loads(content[start:end + 1]) if 0 <= start < end else None
    except ValueError:
        found = None
    if not isinstance(found, dict):
        raise BadRecord(f"the language model's answer is not a JSON object: {said!r}")
    position = re.sub(r"[\s-]+", "_", str(found.get("position", "")).strip().lower())
    evidence = found.get("evidence")
    if position not in POSITIONS:
        raise BadRecord(f"the language model's answer has no known position ({', '.join(POSITIONS)}): {said!r}")
    if not isinstance(evidence, str) or not evidence.strip():
        raise BadRecord(f"the language model's answer has no evidence quote: {said!r}")
    return position, evidence.strip()


_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
                         "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
                         "\u2013": "-", "\u2014": "-", "\u00a0": " "})


def normalised(text: str) -> str:
    """``text`` as quotes are compared: curly quotes and dashes straight, case folded, white
    space one space."""
    return " ".join(text.translate(_QUOTES).casefold().split())


def quote_found(evidence: str, text: str) -> bool:
    """Whether ``evidence`` (its own surrounding quote marks aside) stands in ``text``."""
    quote = normalised(evidence).strip("\"' ")
    return bool(quote) and quote in normalised(text)


# --- a docket's texts --------------------------------------------------------------------------

@dataclass
class Verdicts:
    found: dict[str, Judgement] = field(default_factory=dict)  # unit -> the judge's answer
    failed: dict[str, Failure] = field(default_factory=dict)  # unit -> why it has none
    asked: int = 0  # requests that got an answer (a text asked once, whatever its units)
    kept: int = 0  # units answered from the kept answers


def judge_units(judge: Judge, texts: dict[str, str], kept: dict[str, Judgement],
                save: Callable[[str, str, Judgement], None], check_time: Callable[[], None]) -> Verdicts:
    """The judge's answer for each unit of ``texts`` (unit -> its text): a kept answer of the
    same text (``kept``: text fingerprint -> answer) when there is one, else asked (one request
    per distinct text) and saved at once (``save(text fingerprint, unit, answer)``), so a run
    stopped half-way keeps what it was told. After a transient failure no more is asked this
    run: the server is down or overloaded, and every other text would wait out the retries."""
    verdicts = Verdicts()
    transport, waiting = None, None
    for unit in sorted(texts):
        key = digest(texts[unit])
        if key in kept:
            verdicts.found[unit] = kept[key]
            verdicts.kept += 1
            continue
        if waiting is not None:
            verdicts.failed[unit] = waiting
            continue
        check_time()
        transport = transport or transport_of(judge)
        try:
            answer = ask(transport, judge, texts[unit])
        except Exception as exc:  # noqa: BLE001 - the taxonomy decides; run-stopping ones go up
            failure = item_failure(exc)
            verdicts.failed[unit] = failure
            if failure.kind == TRANSIENT:
                waiting = Failure(failure.kind, failure.state, f"the language model did not answer: {failure.reason}")
            continue
        verdicts.asked += 1
        save(key, unit, answer)
        kept[key] = verdicts.found[unit] = answer
    return verdicts


def pairs_of(members: Iterable) -> list[tuple[str, str]]:
    """(code, the judge's position) of each coded member the judge answered for: what the
    judge is scored by, as the classifier is by its cross-validated pairs."""
    return [(m.position, m.judged) for m in members if m.source == "coded" and m.judged]
