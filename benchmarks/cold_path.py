"""The cold run fetch → backfill → extract → index from a mirror folder, against its bare operations.

    .venv/bin/python -m benchmarks cold_path [--comments 2000] [--corpus DIR] [--profile DIR]
        [--workers N] [--json OUT]

A docket of ``--comments`` comments in the mirrulations layout (``devtools.make_corpus``: 70 %
with attachments, mostly text PDFs of 2–4 pages, 10 % DOCX, a few scans and truncated PDFs;
each file its own), read by docketeer's mirror source from the folder (``source = mirror``,
``mirror_url`` = the folder, no API key, so fetch lists from the mirror too), hashing
embedder, embedded PostgreSQL, SQLite state. The stages run through their stage functions
(``fetch_docket``, ``backfill_docket``, ``extract_docket``, ``index_docket``, each with its own
``StageContext``), in this process, one after the other: what a Luigi task adds around them
(lease, run row, marker) is not in these figures.

CPU seconds per stage: this process's (``process_time``: every thread), its child processes'
(``RUSAGE_CHILDREN`` and ``psutil``: the extract pool's fork server) plus the CPU the extract
workers measure of their own calls (``extract_worker_cpu_us``: the workers are the fork
server's children, so the kernel gives their time to it, not to us), and PostgreSQL's
processes (``psutil``, as ``bench_index.postgres_cpu``). The embedded server is started and
the embedder made before the first stage: starting them is not stage work.

Then the bare operations on the same files, in the same run, no database and no state:

* fetch: list the docket's folder, read and parse each record JSON (docket, documents,
  comments) once;
* backfill: copy each attachment to a content-addressed file (read it, sha256 it while
  copying, write it under its hash: where the blob store puts it), no fsync;
* extract: read each PDF's text (``pymupdf.open`` + ``page.get_text()``), each DOCX's
  (python-docx paragraphs and table cells), write one text per comment;
* index: chunk each comment's text (its title, then its text; the stage's token budget) and
  embed each distinct chunk text once with the hashing embedder, in batches of 64.

A second run of the four stages must do nothing (no rows written, nothing embedded): checked.
``--profile DIR`` writes a cProfile of each stage (``DIR/<stage>.prof``; this process only).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import generated_mirror_docket, open_runtime

STAGES = ("fetch", "backfill", "extract", "index")
ATTACHMENT_FOLDERS = ("comments_attachments", "documents_attachments")
EMBED_BATCH = 64


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks cold_path",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--comments", type=int, default=2000)
    parser.add_argument("--corpus", type=Path, help="a corpus folder to reuse (made there if empty)")
    parser.add_argument("--workers", type=int, default=0, help="extract_workers (0: one per core)")
    parser.add_argument("--profile", type=Path, help="write DIR/<stage>.prof")
    parser.add_argument("--mirror-concurrency", type=int, default=0,
                        help="mirror_concurrency (0: the default); 1 reads in the stage's thread")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--until", choices=STAGES, default="index",
                        help="stop after this stage (no bare operations, no rerun): a quick look at one stage")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-cold-", dir="/tmp"))
    try:
        corpus = make_docket(args.corpus or work / "corpus", args.comments)
        figures = run(corpus, work, args.workers, args.profile, args.mirror_concurrency, args.until)
        if args.until != "index":
            print(json.dumps(figures["stages"], indent=1))
            return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_figures(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0 if figures["rerun_clean"] else 1


# --- the docket --------------------------------------------------------------------------------

def make_docket(root: Path, comments: int) -> Path:
    return generated_mirror_docket(root, comments, attachment_share=0.7)


def docket_of(corpus: Path) -> tuple[str, Path]:
    from devtools.make_corpus import Manifest

    docket_id = Manifest.load(corpus).dockets[0].id
    from devtools.mirror_layout import DocketFolders

    return docket_id, DocketFolders.find(corpus, docket_id).base


# --- docketeer's run ---------------------------------------------------------------------------

def _cpu(pg_folder: Path) -> dict[str, float]:
    from benchmarks.bench_index import postgres_cpu

    own = os.times()
    return {"process": time.process_time(), "process_system": own.system, "workers": _children_cpu(),
            "postgres": postgres_cpu(pg_folder), "wall": time.perf_counter()}


def _children_cpu() -> float:
    """CPU seconds of this process's child processes so far: those that ended and were waited
    for (``RUSAGE_CHILDREN``) and those still running (``psutil``), so that a worker ending
    between two readings is counted once."""
    import psutil

    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    running = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            if child.name() != "postgres":  # counted apart, where it is a child at all
                times = child.cpu_times()
                running += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return ended.ru_utime + ended.ru_stime + running


def run(corpus: Path, work: Path, workers: int, profile: Path | None, mirror_concurrency: int = 0,
        until: str = "index") -> dict:
    from pipeline.counters import counters
    from pipeline.engine.stage import StageContext
    from pipeline.extract.pool import WORKER_CPU_US
    from pipeline.runtime import set_runtime
    from pipeline.store import dockets

    docket_id, base = docket_of(corpus)
    data = work / "data"
    env = {"DOCKETEER_DATA_DIR": str(data), "DOCKETEER_SOURCE": "mirror",
           "DOCKETEER_MIRROR_URL": str(corpus), "DOCKETEER_DISCOVER": "none",
           "DOCKETEER_EMBEDDER": "hashing", "DOCKETEER_OCR": "false", "DOCKETEER_PACE_SECONDS": "0",
           "DOCKETEER_REQUEST_BUDGET": "0", "DOCKETEER_EXTRACT_WORKERS": str(workers),
           "DOCKETEER_LOG_EVERY_SECONDS": "600"}
    if mirror_concurrency:
        env["DOCKETEER_MIRROR_CONCURRENCY"] = str(mirror_concurrency)
    runtime = open_runtime(env)
    figures: dict = {"comments": None, "docket": docket_id, "load_before": _load(), "stages": {},
                     "bare": {}, "rerun": {}}
    try:
        from pipeline.index.embedders import make_embedder

        embedder = make_embedder("hashing")
        runtime.index_db()  # the embedded server's start is not index work
        dockets.ensure_dockets([docket_id], "list")
        for attempt in ("cold", "rerun"):
            for stage in STAGES:
                ctx = StageContext(runtime, f"{attempt}-{stage}")
                call = _stage_call(stage, runtime, embedder)
                profiler = None
                if profile and attempt == "cold":
                    import cProfile

                    profiler = cProfile.Profile()
                before = _cpu(data)
                with counters.measure() as io, counters.counting_queries():
                    if profiler:
                        profiler.enable()
                    result = call(ctx, dockets.require_docket(docket_id))
                    if profiler:
                        profiler.disable()
                after = _cpu(data)
                if profiler:
                    profile.mkdir(parents=True, exist_ok=True)
                    profiler.dump_stats(profile / f"{stage}.prof")
                spent = {k: round(after[k] - before[k], 3) for k in after}
                # The extract pool's workers are the fork server's children, waited for by it:
                # their CPU reaches neither RUSAGE_CHILDREN nor a reading after they ended. Each
                # worker measures its calls itself (WORKER_CPU_US, merged into our counters).
                spent["workers"] = round(spent["workers"] + io.get(WORKER_CPU_US, 0) / 1e6, 3)
                figures["stages" if attempt == "cold" else "rerun"][stage] = {
                    "cpu": spent, "counts": result.counts, "clean": result.clean,
                    "io": {k: v for k, v in io.items() if v}}
                print(f"{attempt} {stage}: {spent} {result.counts}", file=sys.stderr, flush=True)
                if stage == until:
                    break
            if until != "index":
                return figures
    finally:
        runtime.close()
        set_runtime(None)
    figures["bare"] = bare_operations(base, work / "bare", embedder)
    figures["load_after"] = _load()
    figures["comments"] = figures["bare"]["fetch"]["counts"]["comment records"]
    # Item work; the rerun's fetch may still seal the docket (a docket row, not item work).
    figures["rerun_clean"] = all(
        not any(s["io"].get(k) for k in ("embedded_texts", "pdf_opens", "blob_writes", "api_calls"))
        and not any(s["counts"].get(k) for k in ("created", "updated", "mirror.new", "mirror.changed", "ok"))
        for s in figures["rerun"].values())
    return figures


def _stage_call(stage: str, runtime, embedder):
    if stage == "fetch":
        from pipeline.fetch.stage import fetch_docket

        return fetch_docket
    if stage == "backfill":
        from pipeline.backfill.stage import backfill_docket

        return backfill_docket
    if stage == "extract":
        from pipeline.extract.stage import extract_docket

        return extract_docket
    from pipeline.index.stage import index_docket

    return lambda ctx, docket: index_docket(ctx, docket, index_db=runtime.index_db(), embedder=embedder)


def _load() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()


# --- the bare operations -----------------------------------------------------------------------

def bare_operations(base: Path, out: Path, embedder) -> dict:
    """The four stages' bare work on the docket folder ``base``, results under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    figures = {}
    started = time.process_time(), time.perf_counter()
    records = bare_read_records(base)
    figures["fetch"] = _bare_figure(started, {"records read": len(records),
                                              "comment records": sum(1 for k in records if k[0] == "comment")})
    started = time.process_time(), time.perf_counter()
    copied = bare_copy_attachments(base, out / "blobs")
    figures["backfill"] = _bare_figure(started, {"files copied": len(copied)})
    started = time.process_time(), time.perf_counter()
    texts = bare_extract(records, copied, out / "texts")
    figures["extract"] = _bare_figure(started, {"texts written": len(texts)})
    started = time.process_time(), time.perf_counter()
    chunks, distinct = bare_index(texts, embedder)
    figures["index"] = _bare_figure(started, {"chunks": chunks, "distinct chunks embedded": distinct})
    return figures


def _bare_figure(started: tuple[float, float], counts: dict) -> dict:
    return {"cpu": round(time.process_time() - started[0], 3),
            "wall": round(time.perf_counter() - started[1], 3), "counts": counts}


def bare_read_records(base: Path) -> dict[tuple[str, str], dict]:
    """Every record JSON of the docket folder, read and parsed once: (kind, id) → body."""
    records = {}
    for kind, folder in (("docket", "docket"), ("document", "documents"), ("comment", "comments")):
        for entry in os.scandir(base / f"text-{base.name}" / folder):
            if entry.name.endswith(".json"):
                with open(entry.path, "rb") as f:
                    records[(kind, entry.name[:-5])] = json.loads(f.read())
    return records


def bare_copy_attachments(base: Path, blobs: Path) -> dict[str, Path]:
    """Each attachment copied under its sha256 (hashed while copied, no fsync): file name →
    the copy."""
    copied = {}
    for folder in ATTACHMENT_FOLDERS:
        for entry in os.scandir(base / f"binary-{base.name}" / folder):
            if not entry.is_file() or entry.name.endswith(".unavailable"):
                continue
            with open(entry.path, "rb") as f:
                data = f.read()
            sha = hashlib.sha256(data).hexdigest()
            target = blobs / sha[:2] / sha
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            copied[entry.name] = target
    return copied


def bare_extract(records: dict, copied: dict[str, Path], out: Path) -> dict[str, tuple[str, str]]:
    """Each comment's text: its inline text and its files' texts, written to a file of its
    own. Returns comment id → (title, text)."""
    out.mkdir(parents=True, exist_ok=True)
    by_comment: dict[str, list[str]] = {}
    for name in sorted(copied):
        comment_id = name.split("_attachment_")[0]
        by_comment.setdefault(comment_id, []).append(name)
    texts = {}
    for (kind, item_id), body in records.items():
        if kind != "comment":
            continue
        attrs = body["data"]["attributes"]
        parts = [attrs.get("comment") or ""]
        for name in by_comment.get(item_id, []):
            parts.append(read_file_text(copied[name], name))
        text = "\n\n".join(p for p in parts if p)
        (out / f"{item_id}.txt").write_text(text)
        texts[item_id] = (attrs.get("title") or "", text)
    return texts


def read_file_text(path: Path, name: str) -> str:
    """The bare read of one file: PyMuPDF's text of each page, or python-docx's paragraphs and
    table cells; a file neither reads is empty text."""
    if name.endswith(".docx"):
        import docx

        document = docx.Document(str(path))
        lines = [p.text for p in document.paragraphs]
        lines += [cell.text for table in document.tables for row in table.rows for cell in row.cells]
        return "\n".join(lines)
    import pymupdf

    try:
        with pymupdf.open(path) as pdf:
            return "\n".join(page.get_text().strip() for page in pdf)
    except Exception:  # noqa: BLE001 - a truncated PDF: no text, as the stage gives none
        return ""


def bare_index(texts: dict[str, tuple[str, str]], embedder) -> tuple[int, int]:
    """Chunk each text (title, then text) with the stage's budget; embed each distinct chunk
    text once. Returns (chunks, distinct chunk texts)."""
    from pipeline.fingerprints import digest
    from pipeline.index.chunking import chunk_text
    from pipeline.index.embedders import embed_in_batches, token_budget_of
    from pipeline.index.stage import chunk_overlap

    tokens = token_budget_of(embedder)
    chunks = 0
    distinct: dict[str, str] = {}
    for title, text in texts.values():
        sections = [("Title", title)] if title else []
        sections.append(("", text))
        for chunk in chunk_text(sections, max_chars=1200, overlap=chunk_overlap(1200), tokens=tokens):
            chunks += 1
            distinct.setdefault(digest(chunk.text), chunk.text)
    embed_in_batches(embedder, list(distinct.values()), EMBED_BATCH)
    return chunks, len(distinct)


# --- the table ---------------------------------------------------------------------------------

def stage_cpu(figure: dict) -> float:
    cpu = figure["cpu"]
    return cpu["process"] + cpu["workers"] + cpu["postgres"]


def print_figures(figures: dict) -> None:
    print(f"docket {figures['docket']}: {figures['comments']} comments; load {figures['load_before']} "
          f"→ {figures['load_after']}")
    print("| stage | docketeer CPU-s: process + workers + PostgreSQL = total | wall s | bare CPU-s "
          "| **docketeer / bare** | docketeer's counts | bare counts |")
    print("|---|---|---|---|---|---|---|")
    totals = [0.0, 0.0, 0.0, 0.0]
    for stage in STAGES:
        mine, bare = figures["stages"][stage], figures["bare"][stage]
        cpu, total = mine["cpu"], stage_cpu(mine)
        totals[0] += total
        totals[1] += bare["cpu"]
        totals[2] += cpu["wall"]
        totals[3] += cpu["process"] + cpu["workers"]
        counts = dict(mine["counts"])
        for key in ("rows_written", "api_calls", "blob_writes", "pdf_opens", "embedded_texts", "state_queries"):
            counts[key] = mine["io"].get(key, 0)
        print(f"| {stage} | {cpu['process']:.2f} + {cpu['workers']:.2f} + {cpu['postgres']:.2f} = {total:.2f} "
              f"| {cpu['wall']:.2f} | {bare['cpu']:.2f} | **{total / bare['cpu']:.2f}x** | "
              f"{json.dumps(counts)} | {json.dumps(bare['counts'])} |")
    print(f"| total | {totals[0]:.2f} (without PostgreSQL {totals[3]:.2f}) | {totals[2]:.2f} | {totals[1]:.2f} "
          f"| **{totals[0] / totals[1]:.2f}x** ({totals[3] / totals[1]:.2f}x without PostgreSQL) | | |")
    rerun = {stage: {"counts": r["counts"], "rows_written": r["io"].get("rows_written", 0),
                     "cpu": round(stage_cpu(r), 2)} for stage, r in figures["rerun"].items()}
    print(f"rerun ({'nothing done' if figures['rerun_clean'] else 'WORK DONE'}): {json.dumps(rerun)}")
