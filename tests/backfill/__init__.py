"""The backfill tests: the backfill stage over the API and the mirror (a folder, S3), the
mirror's bound on objects held, concurrent and signed mirror reads, and the attachment dedupe
migration."""
