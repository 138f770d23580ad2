"""The process's runtime, as the engine reaches it.

The runtime (``pipeline.runtime``) opens every store a stage uses, the index DB, the index
stage's own, too: so it sits above the stages, and the engine, below them, cannot import it.
It hands itself over instead when it is imported (``runs_with``); every process that runs
tasks has imported it by then (``pipeline.tasks`` does).
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline.config import Settings, load_settings

_open: Callable[[], object] | None = None
_settings: Callable[[], Settings] = load_settings


def runs_with(open_runtime: Callable[[], object], current_settings: Callable[[], Settings]) -> None:
    """``open_runtime()``: the process's runtime, opened on first use; ``current_settings()``:
    its settings, without opening any store."""
    global _open, _settings
    _open, _settings = open_runtime, current_settings


def runtime():
    """The process's runtime (``pipeline.runtime.get_runtime``)."""
    if _open is None:
        raise RuntimeError("no runtime: the engine runs tasks once pipeline.runtime is imported "
                           "(pipeline.tasks imports it)")
    return _open()


def current_settings() -> Settings:
    """The installed runtime's settings, or loaded afresh: without opening any store."""
    return _settings()
