"""The index tests: the index DB, chunking, embedders, search, indexing by title and abstract, Eastern dates in results."""
