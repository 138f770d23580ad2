"""The lineage tests."""
