"""A rule document's sections and the comments that cite them."""
