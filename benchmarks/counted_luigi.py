"""`luigi ARGS` as a new process whose statements are counted: ``python -m
benchmarks.counted_luigi OUT.json ARGS...`` runs Luigi's own command line (``luigi_run``, what
the ``luigi`` script runs) inside ``counters.counting_queries()`` and writes the process's
counters to OUT.json at exit, so a benchmark can count what a cron-started process read
(its timed runs stay plain ``luigi``: counting costs a little per statement)."""

from __future__ import annotations

import atexit
import json
import sys
from pathlib import Path

from luigi.cmdline import luigi_run

from pipeline.counters import counters


def main(argv: list[str]) -> None:
    out, args = Path(argv[0]), argv[1:]
    atexit.register(lambda: out.write_text(json.dumps(counters.snapshot())))
    with counters.counting_queries():
        luigi_run(args)  # exits with Luigi's retcode


if __name__ == "__main__":
    main(sys.argv[1:])
