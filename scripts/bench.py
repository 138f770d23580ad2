"""The scale benchmarks by name, from a checkout: ``python scripts/bench.py NAME [ARGS...]``.

NAME is one of ``benchmarks/bench_scale.py``'s scenarios (``noop-many``, ``noop-open-large``,
``memory``, ``memory-work``); ARGS are that benchmark's own options (``--work DIR``,
``--repeat R``, ``--json OUT``, ...; ``python scripts/bench.py NAME --help``). It is
``python -m benchmarks bench_scale --only NAME ARGS`` with this checkout first on the import
path, so the package, the stand-in and the benchmarks come from it (the ``luigi`` processes
the benchmark starts too), whatever an installed copy points at; relative paths in ARGS are
the caller's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ("noop-many", "noop-open-large", "memory", "memory-work")  # bench_scale's


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in SCENARIOS:
        print(f"usage: python scripts/bench.py {{{','.join(SCENARIOS)}}} [ARGS...]", file=sys.stderr)
        return 2
    # This checkout first on the path (inherited by every process the benchmark starts).
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + (os.pathsep + path if path else "")}
    # Replaced, not a child: the benchmark's exit status and signals are this command's.
    os.execve(sys.executable, [sys.executable, "-m", "benchmarks", "bench_scale",
                               "--only", argv[0], *argv[1:]], env)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
