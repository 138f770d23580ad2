"""The store tests: the state DB (SQLite, PostgreSQL), the blob stores, scratch leftovers, S3
spool files, and the paged reads of state rows."""
