"""A local stand-in for an OpenAI-compatible chat server (``POST /v1/chat/completions``, as
Ollama, vLLM and llama.cpp's server answer it), for the positions judge's tests and demos.

It answers over real HTTP on loopback, deterministically from keywords of the comment (the
last message's content): each sentence that opposes the rule (oppose, withdraw, reject,
abandon, "do not finalize") or supports it (support, adopt, applaud, finalize), the side with
more sentences wins (no side: no_position), and its first sentence is the evidence, quoted as
the text has it. The answer is a chat completion whose message content is
``{"position": ..., "evidence": ...}``.

Switches (attributes, safe to set while it runs): ``fabricate_containing`` (a text holding
this string gets a quote that is not in it), ``garbage_containing`` (... a content that is no
JSON), ``fail_next_5xx`` (the next N requests answer 503), ``api_key`` (requests without
``Authorization: Bearer <api_key>`` answer 401), ``models`` (the model names served; another
answers 404, as Ollama does). It counts what it was asked: ``requests`` (every request),
``texts`` (the comments asked about, in order) and ``authorizations`` (the headers seen).

    python -m devtools.llm_standin --port 11434
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler

from devtools.loopback_http import LoopbackHttpServer

OPPOSING = ("oppose", "withdraw", "reject", "abandon", "do not finalize")
SUPPORTING = ("support", "adopt", "applaud", "finalize")
FABRICATED = "I have always trusted this agency to do the right thing for every family."
GARBAGE = "Sure! I think this commenter is basically in favour, more or less."
MODEL = "standin-judge"


def judge(text: str) -> tuple[str, str]:
    """(position, evidence) for ``text``, from its sentences' keywords."""
    sides: dict[str, list[str]] = {"support": [], "oppose": []}
    for sentence in re.split(r"(?<=[.!?])\s+", text.strip()):
        lowered = sentence.lower()
        if any(word in lowered for word in OPPOSING):
            sides["oppose"].append(sentence)
        elif any(word in lowered for word in SUPPORTING):
            sides["support"].append(sentence)
    support, oppose = len(sides["support"]), len(sides["oppose"])
    if not support and not oppose:
        return "no_position", text.strip().split("\n")[0][:200]
    position = "support" if support > oppose else "oppose" if oppose > support else "mixed"
    return position, (sides["oppose"] if position == "oppose" else sides["support"])[0]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "llm-standin"
    sys_version = ""
    disable_nagle_algorithm = True

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        self.server.standin.handle(self)

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        pass  # tests assert on the counts instead


class LlmStandin(LoopbackHttpServer):
    """An OpenAI-compatible chat completions endpoint answering from keywords."""

    HANDLER = _Handler
    THREAD_NAME = "llm-standin"

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, api_key: str = "",
                 models: tuple[str, ...] = (MODEL,)) -> None:
        self.host, self.port = host, port
        self.api_key = api_key
        self.models = set(models)
        self.fabricate_containing: str | None = None
        self.garbage_containing: str | None = None
        self.fail_next_5xx = 0
        self.requests = 0
        self.texts: list[str] = []
        self.authorizations: list[str] = []
        self._lock = threading.Lock()

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        authorization = handler.headers.get("Authorization") or ""
        with self._lock:
            self.requests += 1
            self.authorizations.append(authorization)
            failing = self.fail_next_5xx > 0
            self.fail_next_5xx -= failing
        if handler.path != "/v1/chat/completions":
            return _send(handler, 404, {"error": {"message": f"no route {handler.path}"}})
        if failing:
            return _send(handler, 503, {"error": {"message": "overloaded"}})
        if self.api_key and authorization != f"Bearer {self.api_key}":
            return _send(handler, 401, {"error": {"message": "invalid api key", "code": "invalid_api_key"}})
        try:
            asked = json.loads(body)
            model, text = asked["model"], asked["messages"][-1]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            return _send(handler, 400, {"error": {"message": "not a chat completion request"}})
        if model not in self.models:
            return _send(handler, 404, {"error": {"message": f"model '{model}' not found"}})
        with self._lock:
            self.texts.append(text)
        return _send(handler, 200, self.completion(model, text))

    def completion(self, model: str, text: str) -> dict:
        position, evidence = judge(text)
        if self.fabricate_containing and self.fabricate_containing in text:
            evidence = FABRICATED
        content = json.dumps({"position": position, "evidence": evidence})
        if self.garbage_containing and self.garbage_containing in text:
            content = GARBAGE
        return {"id": f"chatcmpl-{self.requests}", "object": "chat.completion", "created": int(time.time()),
                "model": model, "choices": [{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant", "content": content}}]}


def _send(handler: BaseHTTPRequestHandler, status: int, answer: dict) -> None:
    body = json.dumps(answer).encode()
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
        handler.wfile.flush()
    except (BrokenPipeError, ConnectionResetError):
        handler.close_connection = True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=11434)
    parser.add_argument("--api-key", default="", help="answer 401 to requests without this bearer token")
    args = parser.parse_args(argv)
    server = LlmStandin(host=args.host, port=args.port, api_key=args.api_key).start()
    print(f"language-model stand-in at {server.url} (model {MODEL})", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
