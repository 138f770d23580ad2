"""The read side's tests: browsing, reports, the organisation filter and the search's arguments, on
SQLite and PostgreSQL alike."""
