"""The devtools tests: the stand-in server, the corpus generator and the mirror layout."""
