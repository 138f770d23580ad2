"""The web tests: `docketeer serve`'s pages, its read-only connections, its pure parts, and
the site in headless Chromium."""
