"""The lineage tests: documents and phases from the real records, comments tied, incremental counts, the CLI."""
