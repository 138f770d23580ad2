"""Whether a lease's holder still lives: the one rule every path that takes over or joins a
(stage, docket) lease applies (``leases.acquire`` taking over, ``claims.session_of`` joining).

A holder is ``host_id:pid``. One on this host id whose process is gone is dead at once (a
killed run, or one whose state server died under it); one on another host id cannot be
asked, so it is known dead only when its lease expires (renewed on every progress report
while it lives)."""

from __future__ import annotations

import os
import socket

from pipeline.clock import iso, utcnow


def host_id() -> str:
    """This host's identity: the ``host_id`` setting, else the hostname. Two processes on one
    machine with different ids act as two hosts (tests, containers sharing a kernel)."""
    from pipeline.engine.process_runtime import current_settings

    return current_settings().host_id or socket.gethostname()


def holder_alive(holder: str, expires_at: str) -> bool:
    """The lease of ``holder`` (until ``expires_at``) stands: unexpired, and its process alive
    when it is on this host."""
    if expires_at <= iso(utcnow()):
        return False
    host, _, pid = holder.rpartition(":")
    if host == host_id() and pid.isdigit():
        return _alive(int(pid))
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
