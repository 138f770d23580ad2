"""The organisation tests: names and their normal form, matching, the alias file, the stage on
a planted corpus and on the real dockets, and the ResolveOrganisations task."""
