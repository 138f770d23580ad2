"""The benchmark tests: the scripts under benchmarks/ run end to end and the S3 rig's listings
(their figures are never asserted)."""
