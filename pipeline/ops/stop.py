"""``docketeer stop`` (and ``docketeer search --stop``): stop what a store has running in the
background, the warm search service and the embedded index server, and say what was found,
each with its pid, one line each.

The search service goes first: it holds the index server, which it stops on its way out
when no other process uses it. The index server is then stopped here only when no live
process holds it (``embedded_server.stop_unused``): one left behind by a holder killed with
SIGKILL is stopped, one a run or ``docketeer serve`` uses is named with them and left to
them (the last of them stops it). ``docketeer serve`` is not stopped from here: it was
started in a terminal or by a service manager, and is stopped there.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.index import embedded_server, search_service


def stop_store(data_dir: Path) -> list[str]:
    """Stop the store's search service and embedded index server; the lines to print."""
    data_dir = Path(data_dir).resolve()
    server_before = embedded_server.running_pid(data_dir / "index-pg")
    lines = _service_lines(search_service.stop(data_dir))
    server = embedded_server.stop_unused(data_dir)
    if server.stopped or (server.pid is None and server_before is not None):
        lines.append(f"stopped the embedded index server (pid {server.pid or server_before})")
    elif server.pid is not None:
        lines.append(f"the embedded index server (pid {server.pid}) is left running: "
                     f"in use by {', '.join(_described(pid) for pid in server.users)}")
    return lines or [f"nothing is running for {data_dir}: no search service, no embedded index server"]


def _service_lines(service: search_service.ServiceStop) -> list[str]:
    if service.pid is None:
        return []
    if service.refused:
        return [f"{_described(service.pid)} was not stopped: {service.refused}"]
    if not service.stopped:
        return [f"the search service (pid {service.pid}) was asked to stop and is still stopping"]
    return [f"stopped the search service (pid {service.pid})"]


def _described(pid: int) -> str:
    """A process as a person recognises it: ``pid 812 (luigi --module pipeline IndexAll)``."""
    import psutil

    try:
        words = [Path(word).name if n == 0 else word for n, word in enumerate(psutil.Process(pid).cmdline())]
    except psutil.Error:
        return f"pid {pid}"
    if words[:3] == [words[0], "-m", "pipeline.ops.cli"]:  # `python -m pipeline.ops.cli serve`
        words = ["docketeer", *words[3:]]
    elif len(words) > 1 and words[1].endswith(("/docketeer", "/luigi")):  # a console script under python
        words = words[1:]
        words[0] = Path(words[0]).name
    command = " ".join(words)
    return f"pid {pid} ({command[:80]})" if command else f"pid {pid}"
