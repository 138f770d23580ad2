"""Retake the README's picture (docs/serve.png): the search page of ``docketeer serve`` on the
quickstart's store, with results and facets, by headless Chromium.

    python scripts/quickstart.py                      # the store the picture shows
    python -m devtools.screenshot_serve               # -> docs/serve.png

It starts ``docketeer serve`` on a free loopback port, waits for its home page, has
``chromium --headless`` take the search page, and stops the server. The embedder is the one
the quickstart used (``DOCKETEER_EMBEDDER``, else MiniLM when installed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WINDOW = "1400,1000"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(url: str, server: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"docketeer serve stopped (exit status {server.returncode}) before it answered")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"docketeer serve did not answer {url} within {seconds:.0f}s")


def screenshot(store: Path, out: Path, query: str, browser: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
    env.update(DOCKETEER_DATA_DIR=str(store), PYTHONPATH=str(ROOT))
    if os.environ.get("DOCKETEER_EMBEDDER"):
        env["DOCKETEER_EMBEDDER"] = os.environ["DOCKETEER_EMBEDDER"]
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "pipeline.ops.cli", "serve", "--port", str(port)],
                              cwd=ROOT, env=env)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(f"{base}/", server)
        url = f"{base}/search?{urllib.parse.urlencode({'q': query})}"
        with urllib.request.urlopen(url, timeout=120):  # the first search loads the model: not in the picture
            pass
        subprocess.run([browser, "--headless", "--no-sandbox", "--hide-scrollbars",
                        f"--screenshot={out}", f"--window-size={WINDOW}", url],
                       check=True, capture_output=True, timeout=120)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"{url} -> {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=ROOT / "data" / "quickstart" / "store")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "serve.png")
    parser.add_argument("--query", default="rural hospitals losing funding")
    args = parser.parse_args(argv)
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        print("screenshot_serve: no chromium on PATH (Debian: apt-get install chromium)", file=sys.stderr)
        return 2
    if not (args.store / "state.sqlite").exists():
        print(f"screenshot_serve: no store at {args.store} (run scripts/quickstart.py first)", file=sys.stderr)
        return 2
    screenshot(args.store.resolve(), args.out.resolve(), args.query, browser)
    return 0


if __name__ == "__main__":
    sys.exit(main())
