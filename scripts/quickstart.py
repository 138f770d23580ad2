"""The offline quickstart: sample data, a local stand-in for regulations.gov, the real job.

1. Generates a small deterministic corpus (3 closed dockets, 100 comments, PDFs and DOCX, a
   form letter standing for many identical submissions; a fourth docket, the final phase of
   the first one's rule; and one open docket whose comment period is running) in the
   mirrulations layout under data/quickstart/mirror (once): every command of the README's
   tour has something to show on it.
2. Serves it on 127.0.0.1 as regulations.gov v4 + downloads + Federal Register (stand-in).
3. Runs the real command, ``luigi --module pipeline IndexAll --local-scheduler``, against it,
   and says what the run did, from the stage runs it recorded in the store.
4. Runs it again and checks, from Luigi's execution summary, that no task ran (it exits
   non-zero if one did), and says how long that took.
5. Adds 3 comments to the open docket, as its comment period goes on, and runs it once more
   in a new freshness window: it checks in the store that exactly those 3 were backfilled,
   extracted and indexed (it exits non-zero otherwise).
6. Prints a search result.

Everything is written under data/quickstart/ (MiniLM's ONNX export in the store's models/);
nothing leaves this machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The documented entry point is `python scripts/quickstart.py`, which puts scripts/ first on
# sys.path, not the checkout: the one sys.path insertion of the project, so that the sample
# data and the stand-in come from this checkout whatever an installed copy points at.
sys.path.insert(0, str(ROOT))

from devtools.corpus_changes import add_comments  # noqa: E402
from devtools.make_corpus import Manifest, make_corpus  # noqa: E402
from devtools.standin_server import StandinServer  # noqa: E402

OPEN_COMMENTS = 12  # the open docket's comments at first
NEW_COMMENTS = 3  # added to it before the third run
# The first docket is the largest, for a topic map worth reading; its rule (this RIN) goes on
# to a final phase, a docket of its own with comments, so `docketeer rule` shows two phases and
# `docketeer orgs --rule` the organisations that commented on both.
FIRST_SHARE = 0.5
RIN = "0938-ZZ27"
FINAL_COMMENTS = 16
DUPLICATES = 40  # each docket's form-letter copy stands for this many identical submissions


def corpus(root: Path, comments: int) -> Manifest:
    if (root / "manifest.json").exists():
        manifest = Manifest.load(root)
        if manifest.options.get("final_docket") and manifest.options.get("duplicates"):
            return manifest
        print("the sample data is an older quickstart's: generating it again")
    print(f"generating sample data: 3 closed dockets with {comments} comments, one more with "
          f"{FINAL_COMMENTS} on the first one's final rule, and one open docket with {OPEN_COMMENTS} -> {root}")
    return make_corpus(root, dockets=3, comments_per_docket=_split(comments), open_comments=OPEN_COMMENTS,
                       rin=RIN, final_comments=FINAL_COMMENTS, duplicates=DUPLICATES, overwrite=True)


def _split(total: int) -> list[int]:
    """The first docket gets FIRST_SHARE of the comments, the other two the rest."""
    first = round(total * FIRST_SHARE)
    return [first, (total - first + 1) // 2, (total - first) // 2]


def embedder() -> str:
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        print("sentence-transformers is not installed: using the hashing embedder")
        return "hashing"
    return "minilm"


ONE_WINDOW = 10**9  # seconds: a freshness window whose next edge is in 2033


def job_env(server: StandinServer, store: Path, dockets: list[str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
    env.update(
        DOCKETEER_DATA_DIR=str(store),
        DOCKETEER_API_BASE=server.api_base,
        DOCKETEER_FR_BASE=server.fr_base,
        REGULATIONS_GOV_API_KEY="DEMO_KEY",
        DOCKETEER_DISCOVER="list",
        DOCKETEER_DOCKETS=",".join(dockets),
        DOCKETEER_PACE_SECONDS="0",
        DOCKETEER_EMBEDDER=os.environ.get("DOCKETEER_EMBEDDER", embedder()),
        LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    return env


def tasks_that_ran(luigi_stderr: str) -> list[str]:
    """The '- N Task(...)' lines under '* N ran successfully:' (or any other '* N ...' group
    except the complete ones) in Luigi's execution summary: what a run actually did."""
    ran, group = [], None
    for line in luigi_stderr.splitlines():
        stripped = line.strip()
        if stripped.startswith("* "):
            group = stripped
        elif stripped.startswith("- ") and group and "complete ones were encountered" not in group:
            ran.append(f"{group.rstrip(':')}: {stripped[2:]}")
        elif not stripped.startswith("- "):
            group = None if not stripped else group
    return ran


def run_index_all(env: dict[str, str], label: str) -> tuple[float, list[str]]:
    command = [sys.executable, "-m", "luigi", "--module", "pipeline", "IndexAll",
               "--local-scheduler", "--workers", "2"]
    print(f"\n$ luigi --module pipeline IndexAll --local-scheduler --workers 2   # {label}")
    began = datetime.now(UTC)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        print(done.stderr[-4000:], file=sys.stderr)
        raise SystemExit(f"IndexAll failed with exit status {done.returncode}")
    ran = tasks_that_ran(done.stderr)
    print(f"{seconds:.1f}s: " + "\n  ".join(run_summary(Path(env["DOCKETEER_DATA_DIR"]), began, ran)))
    return seconds, ran


def run_summary(store: Path, since: datetime, ran: list[str]) -> list[str]:
    """What one IndexAll run did, from the stage runs it recorded in the store (their
    counters): dockets pulled, comments new, detailed, extracted and indexed, and the
    follow-on stages that had work."""
    if not ran:
        return ["nothing ran: every task was already complete"]
    with contextlib.closing(sqlite3.connect(store / "state.sqlite")) as db:
        rows = db.execute("SELECT stage, docket, counters FROM run WHERE started_at >= ?",
                          (since.strftime("%Y-%m-%dT%H:%M:%S"),)).fetchall()
    total: dict[str, Counter] = {}
    worked: dict[str, set] = {}
    for stage, docket, counters in rows:
        counts = Counter(json.loads(counters or "{}"))
        total.setdefault(stage, Counter()).update(counts)
        if counts.get("item_state_writes") or counts.get("created"):
            worked.setdefault(stage, set()).add(docket)
    fetch, extract = total.get("fetch", Counter()), total.get("extract", Counter())
    lines = [f"{sum(1 for r in rows if r[0] == 'fetch')} docket(s) pulled; new comments listed: "
             f"{fetch['created']} ({', '.join(sorted(worked.get('fetch', ()))) or 'none'})",
             f"comments and documents detailed {total.get('backfill', Counter())['ok']}, extracted "
             f"{extract['ok'] + extract['ocr_needed'] + extract['failed']} (failed {extract['failed']}, "
             f"scanned {extract['ocr_needed']}), indexed {total.get('index', Counter())['embedded']}"]
    from pipeline.assembly import STAGES  # the stage list, in pipeline order

    chain = ("fetch", "backfill", "extract", "ocr", "index")
    follow = [f"{stage.name} {len(worked[stage.name])}" for stage in STAGES
              if stage.name not in chain and worked.get(stage.name)]
    lines.append("dockets with new work per follow-on stage: " + (", ".join(follow) or "none"))
    return lines


def docketeer(env: dict[str, str], *args: str) -> None:
    print(f"\n$ docketeer {' '.join(args)}")
    subprocess.run([sys.executable, "-m", "pipeline.ops.cli", *args], cwd=ROOT, env=env, check=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comments", type=int, default=100)
    parser.add_argument("--fresh", action="store_true", help="start from an empty store")
    parser.add_argument("--query", default="rural hospitals losing funding and closing")
    parser.add_argument("--dir", type=Path, default=ROOT / "data" / "quickstart",
                        help="where the sample data and the store go (default: data/quickstart)")
    args = parser.parse_args(argv)
    base = args.dir.resolve()
    store = base / "store"
    if args.fresh and store.exists():
        shutil.rmtree(store)
    manifest = corpus(base / "mirror", args.comments)
    earlier = (store / "state.sqlite").exists()
    with StandinServer(base / "mirror") as server:
        print(f"stand-in regulations.gov serving {base / 'mirror'} at {server.url}")
        env = job_env(server, store, [d.id for d in manifest.dockets])
        # Runs one and two are judged in one long freshness window: windows are aligned to UTC,
        # so two runs either side of the top of the hour would otherwise be in two hourly
        # windows, and the second would pull the open docket again, as cron's next hour does.
        same_window = {**env, "DOCKETEER_FRESHNESS_SECONDS": str(ONE_WINDOW),
                       "DOCKETEER_DISCOVER_SECONDS": str(ONE_WINDOW)}
        first, first_ran = run_index_all(same_window, "again, on the store of an earlier quickstart" if earlier
                                 else "first run: everything is new")
        second, ran = run_index_all(same_window, "second run: nothing new")
        if ran:  # the claim below is checked, not assumed
            raise SystemExit("the second run was expected to do nothing, but Luigi ran:\n  " + "\n  ".join(ran))
        open_docket = manifest.options["open_docket"]
        started = datetime.now(UTC)
        added = add_comments(base / "mirror", open_docket, NEW_COMMENTS, started)
        server.reload()
        time.sleep(1.1)  # the next one-second window: the open docket is due for a pull
        third, _ = run_index_all({**env, "DOCKETEER_FRESHNESS_SECONDS": "1"},
                                 f"third run: {len(added)} new comments on the open docket {open_docket}")
    done = processed(store, open_docket, added, started)  # the claim below is checked too
    if earlier and not first_ran:
        print(f"\nthe store was already complete: {first:.1f}s and {second:.1f}s, nothing was redone"
              " (use --fresh to start over)")
    elif earlier:  # an earlier quickstart stopped part-way (Ctrl-C): this one finished its work
        print(f"\nfirst run {first:.1f}s finished what an earlier, interrupted quickstart left "
              f"({len(first_ran)} task(s) ran); second run {second:.1f}s: nothing was redone")
    else:
        print(f"\nfirst run {first:.1f}s; second run {second:.1f}s: nothing was redone")
    print(f"third run {third:.1f}s: {len(added)} new comments on {open_docket} -> "
          f"{done['backfill']} backfilled, {done['extract']} extracted, {done['index']} indexed")
    docketeer(env, "dockets")
    # --cold: the quickstart leaves nothing running behind it (no warm search service, which
    # would keep the embedded index server up for its idle minutes).
    docketeer(env, "search", "--cold", args.query, "-k", "3")
    print(f"\nto ask this store yourself: . .venv/bin/activate && "
          f"DOCKETEER_DATA_DIR={_shown(store)} DOCKETEER_EMBEDDER={env['DOCKETEER_EMBEDDER']} docketeer dockets")


def processed(store: Path, docket: str, added: list[str], since: datetime) -> dict[str, int]:
    """How many of the ``added`` comments each stage did, read from the store: their state
    rows (backfill, extract) and the index run of this docket after ``since`` (its counters);
    exits non-zero unless every stage did all of them."""
    with contextlib.closing(sqlite3.connect(store / "state.sqlite")) as db:
        marks = ",".join("?" * len(added))
        done = {stage: db.execute(f"SELECT count(*) FROM item_state WHERE stage = ? AND state = 'ok' "
                                  f"AND item IN ({marks})", (stage, *added)).fetchone()[0]
                for stage in ("backfill", "extract")}
        runs = db.execute("SELECT counters FROM run WHERE stage = 'index' AND docket = ? AND "
                          "started_at >= ? AND clean", (docket, since.strftime("%Y-%m-%dT%H:%M:%S"))).fetchall()
    done["index"] = sum(json.loads(counters or "{}").get("embedded", 0) for (counters,) in runs)
    if set(done.values()) != {len(added)}:
        raise SystemExit(f"{len(added)} new comments on {docket} were expected to be backfilled, "
                         f"extracted and indexed; the store says {done}")
    return done


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # one line, not a traceback: what was done is kept
        print("\nquickstart: interrupted; run it again to finish (what was done is kept, and is "
              "not redone)", file=sys.stderr)
        raise SystemExit(130) from None
