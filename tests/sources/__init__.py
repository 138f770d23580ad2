"""The source tests: the regulations.gov and Federal Register clients, records, the mirror
source, hostile sources, and fidelity on the real records and recorded exchanges."""
