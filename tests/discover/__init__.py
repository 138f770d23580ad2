"""The discovery tests: docket rows from the configured list, a Federal Register search
(through the stand-in server) and a mirror listing. Their fixtures are the test file's own."""
