"""The operator command tests: `docketeer` subcommands (verify, redrive, forget, export,
explain, snapshot) and every bad command."""
