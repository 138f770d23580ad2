"""Three pieces written by hand beside a library that does the same, timed against it.

    .venv/bin/python -m benchmarks hand_written [--items 20000] [--repeat 5] [--dockets 100000]

* **frontmatter**: combined.md's YAML frontmatter by ``pipeline.extract.frontmatter``
  against ``yaml.dump`` (libyaml's CSafeDumper, the bytes it must equal), on ``--items``
  frontmatters shaped as ``render_combined`` makes them (a comment, 0-3 attachments, OCR on
  some, a title on most, a capped list on a few; titles, file names and reasons as real
  dockets carry them, some of which YAML quotes, so both paths are taken);
* **band keys**: a compared member's stored LSH band keys by ``pipeline.store.campaign_bands``
  (numpy, every member at once) against datasketch's own bucket keys (``MinHashLSH._H``,
  the bytes of each band, one call per band and member) and against those bytes hashed to a
  fixed width as schema v17 stored them (16 hex digits of their SHA-256), for ``--items``
  signatures at the threshold's bands;
* **checksum**: the wrapper's cross-database checksum of the known set (``postgres_md5``:
  ``hashlib.md5`` of the state DB's lines, compared with PostgreSQL's ``md5()`` of the index
  DB's) on the text of ``--dockets`` dockets.

Each figure is the best of ``--repeat`` timings (CPU seconds of this process); results are
one JSON object for docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import time

import numpy as np

from pipeline.campaigns import grouping
from pipeline.extract import frontmatter
from pipeline.extract.frontmatter import dump_frontmatter, yaml_dump
from pipeline.fingerprints import postgres_md5
from pipeline.store.campaign_bands import band_keys

# Titles as regulations.gov gives them, most written plain; "Comment on FR Doc # ..." (" #")
# and a few others are quoted by YAML, so the whole frontmatter goes through yaml.dump.
NAMES = ["Jane Doe", "Pat Lee", "José Álvarez", "Mary O'Neil", "Anonymous Anonymous", "K. Smith-Jones"]
ORGANISATIONS = ["Wisconsin Department of Children & Families", "US China Business Council",
                 "American Iron and Steel Institute  - AISI", "Café Nurses’ Forum (2nd)"]
FILES = ["attachment_1.pdf", "attachment_2.docx", "attachment_3.pdf", "Comment Letter.pdf", "scan 0001.tif"]
REASONS = ["", "", "", "", "corrupt DOCX", "encrypted", "time limit exceeded (30 s)"]


def title(rng: random.Random, n: int) -> str | None:
    roll = rng.random()
    if roll < 0.6:
        return f"Comment from {rng.choice(NAMES)}"
    if roll < 0.75:
        return f"Comment on FR Doc # 2024-{n % 9000 + 1000:05d}"
    if roll < 0.85:
        return rng.choice(ORGANISATIONS)
    return "Anonymous public comment" if roll < 0.95 else None


def frontmatters(count: int, rng: random.Random) -> list[dict]:
    """``count`` frontmatters in render_combined's shape (its keys, in its order)."""
    found = []
    for n in range(count):
        attachments = []
        for a in range(rng.choice((0, 0, 1, 1, 1, 2, 3))):
            reason = rng.choice(REASONS)
            entry = {"file": FILES[a] if rng.random() < 0.9 else rng.choice(FILES), "status": "failed" if reason else "ok",
                     "reason": reason, "chars": rng.randint(0, 40_000), "pages": rng.choice((None, 1, 2, 7, 31))}
            if rng.random() < 0.05:
                entry["ocr"] = {"status": "ok", "reason": "", "chars": rng.randint(1, 9_000)}
            attachments.append(entry)
        fm = {"comment_id": f"EPA-HQ-OAR-2021-0317-{n + 1:04d}", "docket_id": "EPA-HQ-OAR-2021-0317"}
        if (text := title(rng, n)) is not None:
            fm["title"] = text
        fm.update({"chars": rng.randint(0, 60_000), "attachments": attachments,
                   "sources": hashlib.sha256(str(n).encode()).hexdigest(), "extractor": "extract-5"})
        if rng.random() < 0.02:
            fm["capped"] = ["inline body capped at 100000 characters (of 250000)"]
        found.append(fm)
    return found


def falls_back(mapping: dict) -> bool:
    """Whether the hand-written writer hands ``mapping`` to yaml.dump."""
    try:
        frontmatter._mapping(mapping, "", [], set())
    except frontmatter._NotCertain:
        return True
    return False


def best_of(repeat: int, run) -> float:
    times = []
    for _ in range(repeat):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return min(times)


def per_call(seconds: float, calls: int) -> float:
    return round(seconds / calls * 1e6, 2)


def frontmatter_figures(args, rng: random.Random) -> dict:
    mappings = frontmatters(args.items, rng)
    same = sum(dump_frontmatter(m) == yaml_dump(m) for m in mappings)
    written = best_of(args.repeat, lambda: [dump_frontmatter(m) for m in mappings])
    library = best_of(args.repeat, lambda: [yaml_dump(m) for m in mappings])
    return {"frontmatters": len(mappings), "byte_identical": same,
            "through_yaml_dump": sum(map(falls_back, mappings)),
            "hand_written_us_per_call": per_call(written, len(mappings)),
            "yaml_dump_us_per_call": per_call(library, len(mappings)),
            "hand_written_s_total": round(written, 3), "yaml_dump_s_total": round(library, 3),
            "speedup": round(library / written, 1)}


def band_key_figures(args, rng: random.Random) -> dict:
    bands, rows = grouping.lsh_params(0.5)  # the default threshold's bands
    lsh = grouping.MinHashLSH(num_perm=grouping.NUM_PERM, params=(bands, rows))
    # datasketch keeps a signature's 32-bit hash values in a uint64 array, as it hands them over
    signatures = np.asarray(np.random.default_rng(rng.randrange(2**32)).integers(
        0, 2**32, size=(args.items, grouping.NUM_PERM)), dtype=np.uint64)
    ranges = lsh.hashranges

    def library_bytes():
        return [[lsh._H(s[start:end]) for start, end in ranges] for s in signatures]

    def library_hashed():
        return [[f"{b}:{hashlib.sha256(lsh._H(s[start:end])).hexdigest()[:16]}"
                 for b, (start, end) in enumerate(ranges)] for s in signatures]

    written = best_of(args.repeat, lambda: band_keys(signatures, ranges))
    as_bytes = best_of(args.repeat, library_bytes)
    hashed = best_of(args.repeat, library_hashed)
    return {"members": args.items, "bands": f"{bands}x{rows}",
            "hand_written_us_per_member": per_call(written, args.items),
            "datasketch_bytes_us_per_member": per_call(as_bytes, args.items),
            "datasketch_bytes_sha256_us_per_member": per_call(hashed, args.items),
            "hand_written_s_total": round(written, 3), "datasketch_bytes_s_total": round(as_bytes, 3),
            "datasketch_bytes_sha256_s_total": round(hashed, 3),
            "stored_key_bytes": {"hand_written": 8, "datasketch_bytes": rows * 8, "v17_text": len("0:") + 16}}


def checksum_figures(args, rng: random.Random) -> dict:
    seal = "2026-01-01T00:00:00+00:00"
    lines = "\n".join(f"EPA-HQ-OAR-{2000 + n % 26}-{n:04d}\x1f{seal if rng.random() < 0.9 else ''}\x1f"
                      f"{hashlib.sha256(str(n).encode()).hexdigest()}" for n in range(args.dockets))
    seconds = best_of(args.repeat, lambda: postgres_md5(lines))
    return {"dockets": args.dockets, "text_mb": round(len(lines.encode()) / 1e6, 1),
            "hashlib_md5_s": round(seconds, 4), "library": "hashlib.md5 (Python) and md5() (PostgreSQL)"}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000, help="frontmatters and members (default 20,000)")
    parser.add_argument("--dockets", type=int, default=100_000, help="dockets in the checksum's text")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20261207)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    load_before = os.getloadavg()
    results = {"frontmatter": frontmatter_figures(args, rng), "band_keys": band_key_figures(args, rng),
               "checksum": checksum_figures(args, rng),
               "load_average_before": load_before, "load_average_after": os.getloadavg()}
    print(json.dumps(results, indent=2))
    return 0
