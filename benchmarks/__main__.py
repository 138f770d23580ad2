"""Run one benchmark from the root of a checkout: ``python -m benchmarks NAME [ARGS...]``.

NAME is ``bench`` (the scenarios), ``bench_extract``, ``bench_index``, ``bench_embedders`` or
``serve`` (the web page);
``mirror_backfill``; ``int8`` (MiniLM quantised to int8 against fp32 on real text);
ARGS are that benchmark's own (``python -m benchmarks NAME --help``).

Why a dispatcher rather than ``python -m benchmarks.bench``, which works too: multiprocessing
runs a ``-m`` main module again in every worker process it starts (as ``__mp_main__``), so
each extract worker would first import the benchmark and everything it imports (40-100 ms
per worker start, inside the timings); a main module named ``*.__main__`` is the one it
leaves alone.
"""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = ("bench", "bench_extract", "bench_index", "bench_embedders", "serve", "bench_search", "search_relevance", "formats", "mirrorlist", "mirror_backfill", "bench_scale", "campaigns", "campaigns_real", "serve_browse", "organisations", "search_scale", "lineage", "topics", "documents_unread", "cold_path", "hnsw_build", "organisations_real", "topics_real", "hand_written", "search_judged", "search_floor", "positions_real", "citations_judged", "int8", "scale_generate", "workers")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in BENCHMARKS:
        print(f"usage: python -m benchmarks {{{','.join(BENCHMARKS)}}} [ARGS...]", file=sys.stderr)
        return 2
    name, args = argv[0], argv[1:]
    sys.argv = [f"benchmarks {name}", *args]  # what argparse shows as the program name
    return importlib.import_module(f"benchmarks.{name}").main(args) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
