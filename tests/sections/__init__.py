"""The sections stage: a document's sections and the comments that cite them."""
