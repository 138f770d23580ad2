"""The read side: what the pages (``pipeline/web/``) and the operator's commands
(``pipeline/ops/``) show of the stores. It sits above the stages and may read any of them
(their read queries, their output); no stage imports it."""
