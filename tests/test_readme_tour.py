"""The README's commands run, as written, on the store the quickstart builds, and each shows
something: the quickstart runs once (hashing embedder) into a temporary folder, then every
``docketeer …`` line of the README's "Two commands" and "A short tour" sections runs against
its store. The commands are read from README.md, so a command added there is checked here."""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = ("## Two commands", "## A short tour")
# The quickstart's sample at its smallest that still gives every tour command something to
# show (two topics, an organisation on two dockets, a campaign, both phases of the rule), as
# CI's run from a fresh clone asks for it: a third of the default's comments, half its time.
COMMENTS = 30

pytestmark = pytest.mark.slow


def readme_commands() -> list[list[str]]:
    """The ``docketeer`` lines of the README's sh blocks in SECTIONS, as argv (comments cut)."""
    text = (ROOT / "README.md").read_text()
    commands = []
    for title in SECTIONS:
        section = text.split(title, 1)[1].split("\n## ", 1)[0]
        for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S):
            commands += [shlex.split(line, comments=True) for line in block.splitlines()
                         if line.startswith("docketeer ")]
    return commands


COMMANDS = readme_commands()


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    base = tmp_path_factory.mktemp("quickstart")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCKETEER_", "LUIGI_"))}
    env.update(PYTHONPATH=str(ROOT), DOCKETEER_EMBEDDER="hashing")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "quickstart.py"), "--dir", str(base),
                           "--comments", str(COMMENTS)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    env.update(DOCKETEER_DATA_DIR=str(base / "store"))
    work = base / "work"  # the folder the commands run in (export writes there)
    work.mkdir()
    yield env, work, done.stdout
    subprocess.run([sys.executable, "-m", "pipeline.ops.cli", "search", "--stop"], env=env, cwd=work,
                   capture_output=True, timeout=60)


def test_the_readme_names_the_tour_commands():
    names = {argv[1] for argv in COMMANDS}
    assert {"dockets", "explain", "search", "serve", "campaigns", "orgs", "rule", "topics"} <= names


def test_the_quickstart_says_what_each_run_did(quickstart):
    _, _, out = quickstart
    assert "nothing ran: every task was already complete" in out
    third = out.split("# third run", 1)[1]
    assert "new comments listed: 3 (" in third and "indexed 3" in third


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv[1:]))
def test_a_readme_command_runs_and_shows_something(quickstart, argv):
    env, work, _ = quickstart
    assert argv[0] == "docketeer"
    if argv[1] == "serve":
        return check_serve(env, work, argv[1:])
    done = subprocess.run([sys.executable, "-m", "pipeline.ops.cli", *argv[1:]], env=env, cwd=work,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), f"{argv} printed nothing"
    CHECKS.get(argv[1], lambda out, argv, work: None)(done.stdout, argv, work)


def _rows(out: str) -> list[list[str]]:
    """The rows under a table's header line, split on runs of two or more spaces."""
    lines = [line for line in out.splitlines() if line.strip()]
    return [re.split(r"\s{2,}", line.strip()) for line in lines[1:]]


def check_topics(out, argv, work):
    topics = [line for line in out.splitlines() if re.match(r"t\d+\s", line)]
    assert len(topics) >= 2, out


def check_rule(out, argv, work):
    phases = {line.split()[1] for line in out.splitlines() if re.match(r"\d{4}-\d\d-\d\d\s", line)}
    assert {"proposed", "final"} <= phases, out


def check_orgs(out, argv, work):
    header = out.splitlines()[0].split()
    rows = _rows(out)
    assert rows, out
    if "--rule" in argv:  # organisations that commented on both phases: on both dockets
        assert header[1:] == ["proposed", "final"], out
        assert all(int(row[1]) >= 1 and int(row[2]) >= 1 for row in rows), out
    elif "--docket" in argv:
        assert all(int(row[header.index("comments")]) >= 1 for row in rows), out
    else:  # every docket: the same organisation commenting on several
        assert any(int(row[header.index("dockets")]) >= 2 for row in rows), out


def check_campaigns(out, argv, work):
    header = out.splitlines()[0].split()
    rows = _rows(out)
    assert any(int(row[header.index("submissions")]) > int(row[header.index("comments")]) for row in rows), out


def check_dockets(out, argv, work):
    assert len(_rows(out)) >= 5, out


def check_search(out, argv, work):
    assert ("--json" in argv and '"results"' in out) or re.search(r"^\s+1\. ", out, flags=re.M), out


def check_explain(out, argv, work):
    assert argv[2] in out and "extract" in out, out


def check_export(out, argv, work):
    assert (work / argv[2] / "README.txt").exists()
    assert list((work / argv[2]).glob("*/comments.parquet")), out


CHECKS = {"topics": check_topics, "rule": check_rule, "orgs": check_orgs, "campaigns": check_campaigns,
          "dockets": check_dockets, "search": check_search, "explain": check_explain, "show": check_explain,
          "export": check_export}


def check_serve(env, work, args):
    """``docketeer serve`` as written, on a free port (8080 may be taken): its home page names
    the dockets; then it is stopped."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "pipeline.ops.cli", *args, "--port", str(port)],
                              env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        page = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
                    page = answer.read().decode()
                break
            except OSError:
                time.sleep(0.3)
        assert "CMS-2026-0001" in page, (server.poll(), page[:500])
    finally:
        server.terminate()
        server.wait(timeout=30)
