"""Index stage building blocks: chunking, embedders, the pgvector index DB and search."""
