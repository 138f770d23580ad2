"""``docketeer serve``: a read-only local web page over the stores (search, dockets, comments)."""
