"""The parent's main script as the extract fork server is told of it (``server_preload``
imports it once for every worker): named here, in a module with no side effects, so that
the stage's own process can set it without importing what the server preloads (PyMuPDF,
warmed up: about 15 MiB and its import time in a process that reads no file itself)."""

from __future__ import annotations

from multiprocessing import spawn

MAIN_PATH_VARIABLE = "DOCKETEER_EXTRACT_MAIN_PATH"


def main_path() -> str | None:
    """The path multiprocessing would run in each worker, exactly as it will compare it."""
    return spawn.get_preparation_data("docketeer-extract").get("init_main_from_path")
