"""Every benchmark and its harness. Runnable modules are ``bench*`` (``python -m
benchmarks.bench`` from the root of a checkout, see docs/BENCHMARKS.md); ``common`` is the
shared harness (stores, in-process Luigi runs, measured records) and the other modules are
the contenders and state builders the scenarios use. The pipeline never imports it.
"""
