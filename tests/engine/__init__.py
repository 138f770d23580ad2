"""The engine tests: the one completion rule and the targets, tasks and wrappers that read it
(bulk pruning, the open-docket no-op), invocations, progress, leases and item claims (split
items, several hosts), Luigi as cron and luigid run it (exit codes, summary, lock), request
budgets, a stage declared outside pipeline/, and the whole chain run end to end."""
