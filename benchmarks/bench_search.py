"""`docketeer search` latency with the MiniLM embedder: cold (torch, ONNX) and warm, as a user sees it.

    .venv/bin/python -m benchmarks bench_search [--store data/quickstart/store] [--repeat 3]

Each figure is the whole command, from process start to exit, on a store indexed with
MiniLM (the quickstart's: ``python scripts/quickstart.py``): ``search --cold`` with
``minilm_runtime=torch`` (sentence-transformers, what every search cost before the warm
service) and with ``minilm_runtime=onnx``; then ``search`` through the warm search service
(started by the first, untimed, search and stopped at the end). ONNX's one-off export is
made before timing and reported apart.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

QUERY = "rural hospitals losing funding and closing"


def command_seconds(env: dict[str, str], *args: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one command. On a shared machine the wall time
    stretches with the load; the CPU time (user + system of the command) does not."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pipeline.ops.cli", *args], env=env,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or "1." not in done.stdout:
        raise SystemExit(f"search failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return elapsed, _children_cpu() - cpu_before


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def report(label: str, runs: list[tuple[float, float]]) -> None:
    wall, cpu = [w for w, _ in runs], [c for _, c in runs]
    print(f"{label:<36} wall median {statistics.median(wall):6.2f} s (min {min(wall):.2f}, "
          f"max {max(wall):.2f})  CPU median {statistics.median(cpu):5.2f} s  n={len(runs)}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="data/quickstart/store")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    store = Path(args.store).resolve()
    if not (store / "state.sqlite").exists():
        raise SystemExit(f"no store at {store}: run `python scripts/quickstart.py` first")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
    env.update(DOCKETEER_DATA_DIR=str(store), DOCKETEER_EMBEDDER="minilm",
               PYTHONPATH=str(Path.cwd()))
    search = ("search", QUERY, "-k", "5")
    torch_env = {**env, "DOCKETEER_MINILM_RUNTIME": "torch"}
    onnx_env = {**env, "DOCKETEER_MINILM_RUNTIME": "onnx"}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    report("first search (ONNX export if needed)", [command_seconds(onnx_env, *search, "--cold")])
    report("cold, torch (sentence-transformers)", [command_seconds(torch_env, *search, "--cold")
                                                    for _ in range(args.repeat)])
    report("cold, onnx", [command_seconds(onnx_env, *search, "--cold") for _ in range(args.repeat)])
    started = command_seconds(onnx_env, *search)
    try:
        report("warm service start (first search)", [started])
        report("warm (service running)", [command_seconds(onnx_env, *search) for _ in range(args.repeat)])
    finally:
        from pipeline.index import search_service

        search_service.ask(store, {"stop": True}, start=False)


if __name__ == "__main__":
    main()
