"""The extract tests: the extract stage, the attachment readers and formats, the fork-server
pool, combined.md, and the caps on text and chunks."""
