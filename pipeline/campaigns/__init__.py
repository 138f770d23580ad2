"""Campaign groups: which comments of a docket are one form letter (``text``: what a comment is
compared by; ``grouping``: the groups, built and kept incrementally)."""
