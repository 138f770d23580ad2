"""Organisations: each comment's organisation, resolved across spellings and dockets."""
