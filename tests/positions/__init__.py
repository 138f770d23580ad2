"""Positions: importing, sampling and keying an analyst's codes, the Positions stage over a
generated docket of planted positions, the intervals, and the positions command."""
