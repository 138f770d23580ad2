"""Developer tools: everything that stands in for the outside world in tests, benchmarks and
the quickstart. ``standin_server`` is a local regulations.gov v4 (plus downloads and the
Federal Register search) serving any folder in the mirrulations layout; it reads that folder
with its own code, never with ``pipeline.sources.mirror``, so it stays an independent oracle
for the production parser. ``make_corpus`` generates deterministic sample dockets (topics in
``corpus_topics``), ``corpus_changes`` edits them the way an open docket changes upstream,
and ``mirror_builder`` writes small hand-made dockets for tests; all three write through
``mirror_layout``, the one module that knows where a mirror keeps each file. Shipped with the
package (the quickstart needs it without the ``test`` extra); the pipeline never imports it.
"""
