"""Topic maps: the issues a docket's comments raise, how many raised each, and who."""
