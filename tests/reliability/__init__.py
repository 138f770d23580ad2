"""The reliability suite: kills, faults and hostile stores, each scenario a row of docs/RELIABILITY.md."""
