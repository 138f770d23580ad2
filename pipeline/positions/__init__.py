"""Positions: an analyst's codes, a classifier over the index's vectors, and shares with intervals."""

# The positions a comment can take. What each means is docs/OPERATING.md's ("Positions"); the
# order is the one shown. Here, not in ``codes``, so that the filters and ``docketeer --help``
# name them without loading the store.
POSITIONS = ("support", "oppose", "mixed", "no_position", "off_topic")
