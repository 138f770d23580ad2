"""The ``docketeer`` subcommands, one module per group; ``pipeline/ops/cli.py`` lists them once
and dispatches. ``command_line`` holds what they share: the argument types, the one-line
parser, the table printer, the terminal-safe output and the store a command opens."""
