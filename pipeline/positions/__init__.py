"""Positions: an analyst's codes, a classifier over the index's vectors, and shares with intervals."""
