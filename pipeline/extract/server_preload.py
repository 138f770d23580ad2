"""Imported by the extract fork server, once: what every worker would otherwise redo. Never
imported by the stage's own process (its side effects are the server's: ``main_script``
names the path for the parent).

* The parent's main script. multiprocessing runs it again in every new worker (as
  ``__mp_main__``, so its ``if __name__ == "__main__"`` block stays out) so that pickled
  objects from it can be found. Our workers never need it, yet under ``luigi`` that is
  ``import luigi`` per worker: 70-300 ms each, on every stage run. Preloading ``"__main__"``
  is meant to pay it once in the server, but on Python 3.11 the server is never given the
  path (CPython gh-137996), so this module does it: the parent puts the path in
  ``MAIN_PATH_VARIABLE`` for the server's start, the server imports the script here, and
  each worker then finds it already loaded and skips it.
* MuPDF's first text extraction in a process loads its fonts and caches (measured: the
  first PDF of a fresh worker took 15 ms, the next ones 8 ms). Done here on a one-line
  PDF made in memory, every worker forks with it done.
"""

from __future__ import annotations

import os
from multiprocessing import process, spawn

from pipeline.extract.main_script import MAIN_PATH_VARIABLE


def _import_main() -> None:
    path = os.environ.pop(MAIN_PATH_VARIABLE, None)
    if not path:
        return
    process.current_process()._inheriting = True
    try:
        spawn.import_main_path(path)
    except Exception:  # noqa: BLE001 - then each worker imports it itself, as without us
        pass
    finally:
        del process.current_process()._inheriting


def _warm_mupdf() -> None:
    import pymupdf

    try:
        with pymupdf.open() as made:
            made.new_page().insert_text((72, 72), "docketeer warms the text extraction up")
            data = made.tobytes()
        with pymupdf.open("pdf", data) as doc:
            doc[0].get_text()
    except Exception:  # noqa: BLE001 - only a head start; the readers report real errors
        pass


_import_main()
_warm_mupdf()
