"""SIGTERM, SIGINT and SIGHUP end a docketeer process the way an error does: its ``finally``
blocks run, so the stores it opened are closed and the embedded index server it holds is let
go (stopped, when no other process uses it).

Python's default for SIGTERM and SIGHUP ends the process at once, without ``finally`` or
``atexit``: the index server it started was left running, re-parented to PID 1, until some
later docketeer process happened to join and leave it. Here each of them raises
``SystemExit(128 + signal)`` in the main thread instead (the shell's exit status for it).
A second signal while the stores close is ignored: it would cut the server's stop short.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def exit_on(signum: int, _frame=None) -> None:
    """The handler: leave through ``SystemExit``, so that every ``finally`` runs."""
    raise SystemExit(128 + signum)


def _main_thread() -> bool:
    # signal.signal may only be called from the main thread (tests call commands on others).
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def exiting_on(signals: tuple[int, ...] = STOP_SIGNALS) -> Iterator[None]:
    """While the block runs, ``signals`` raise ``SystemExit`` (``exit_on``); the handlers
    there before are put back after it."""
    if not _main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, exit_on) for signum in signals}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def uninterrupted() -> Iterator[None]:
    """While the block runs (the stores closing on the way out), the stop signals are
    ignored: the process is ending already, and a second Ctrl-C or ``kill`` must not leave
    the index server half stopped."""
    if not _main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
