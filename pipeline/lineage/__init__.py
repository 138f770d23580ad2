"""Rule lineage: each docket's documents and phases, each comment tied to the document it answers."""
