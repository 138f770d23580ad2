"""The extraction floor: a plain loop over the very files the extract stage reads.

PDFs through ``pymupdf.open`` + ``page.get_text()``, DOCX through ``python-docx`` paragraphs
(PyMuPDF does not read DOCX), nothing else: no status, no combined.md, no state rows.
``workers > 1`` runs the same loop in a process pool, one file list slice per process.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from pipeline.store import items
from pipeline.store.blobs import attachment_key


def docket_files(blobs, docket: str) -> list[Path]:
    """The local blob path of every attachment of every item, in item order (repeats kept:
    the stage reads a file once per comment that attached it, so the loop does too)."""
    paths = []
    for rows in items.docket_attachments(docket).values():
        for row in rows:
            if row.sha256 and row.filename.lower().endswith((".pdf", ".docx")):
                paths.append((blobs.local_path(attachment_key(row.sha256)), row.filename))
    return paths


def read_plain(path: Path, filename: str) -> int:
    """Characters of text in one file, or 0 when the file does not open."""
    try:
        if filename.lower().endswith(".pdf"):
            import pymupdf

            with pymupdf.open(path, filetype="pdf") as doc:
                return sum(len(page.get_text()) for page in doc)
        import docx

        return sum(len(p.text) for p in docx.Document(str(path)).paragraphs)
    except Exception:  # corrupt files are part of the corpus: the floor skips them
        return 0


def _read_many(jobs: list[tuple[Path, str]]) -> int:
    return sum(read_plain(path, name) for path, name in jobs)


def plain_loop(files: list[tuple[Path, str]], workers: int = 1) -> int:
    """Read every file; returns total characters (so the work cannot be optimised away)."""
    if workers <= 1:
        return _read_many(files)
    slices = [files[i::workers] for i in range(workers)]
    with multiprocessing.get_context("forkserver").Pool(workers) as pool:
        return sum(pool.map(_read_many, slices))
