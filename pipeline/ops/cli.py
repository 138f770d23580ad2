"""``docketeer``: the admin command. Questions about the store, seals, search and settings.

Every subcommand prints plain text; unknown ids and bad arguments give one clear line on
stderr and a non-zero exit (2; ``verify`` exits 1 when a check fails); an unexpected error is
one line and exit 1 (``--debug`` shows its traceback).

This module is the dispatcher: each module of ``pipeline/ops/commands/`` registers its own
subcommands (``MODULES``, in the order ``--help`` lists them) and their functions.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys

from pipeline.errors import DocketeerError
from pipeline.ops.commands import (
    analysis,
    dockets,
    item_states,
    maintenance,
    positions,
    publish,
    search,
    sections,
    services,
    settings,
    show,
)
from pipeline.ops.commands.command_line import (
    COMMANDS,
    Commands,
    OneLineParser,
    TerminalOutput,
    close_runtimes,
)
from pipeline.stop_signals import exiting_on, uninterrupted
from pipeline.version import installed_version

MODULES = (settings, dockets, item_states, show, search, services, maintenance, publish, analysis, sections, positions)
# SIGINT stays Python's KeyboardInterrupt ("interrupted", exit 130); these two would end the
# process without its finally, leaving the embedded index server it started running.
EXITING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="docketeer", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show the traceback of an unexpected error")
    parser.add_argument("--version", action="version", version=f"docketeer {installed_version()}")
    parser.add_argument("--reinitialise", action="store_true",
                        help="move an unusable state DB aside (never deleted) and start a new, empty store")
    commands = Commands(parser.add_subparsers(dest="command", required=True))
    for module in MODULES:
        module.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command with its stdout and stderr escaped for terminals (``TerminalOutput``);
    SIGTERM and SIGHUP end it as an error would, its stores closed (``pipeline.stop_signals``)."""
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (TerminalOutput(stream) for stream in streams)
    try:
        with exiting_on(EXITING_SIGNALS):
            return _run(argv)
    finally:
        sys.stdout, sys.stderr = streams


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.reinitialise:
            _reinitialise()
        return COMMANDS[args.command](args)
    except DocketeerError as exc:
        print(f"docketeer: {exc}", file=sys.stderr)
        return 2
    except json.JSONDecodeError as exc:  # a corrupt JSON column: say which, no traceback wall
        print(f"docketeer: unreadable stored JSON: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `docketeer stats | head`: the reader left, nothing is wrong
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:  # Ctrl-C: one line; the finally below still closes the stores
        print("docketeer: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # unexpected (a disk full, a dead DB): one line unless --debug
        if args.debug:
            raise
        print(f"docketeer: {type(exc).__name__}: {exc} (--debug shows the traceback)", file=sys.stderr)
        return 1
    finally:
        with uninterrupted():  # stopping the index server it started, whatever ends the command
            close_runtimes()


def _reinitialise() -> None:
    # Imported here, as the commands import theirs: the settings and the store bring luigi
    # and peewee, which `docketeer --help` does without.
    from pipeline.config import ensure_data_dir, load_settings
    from pipeline.store.db import set_aside_unusable

    current = load_settings()
    aside = set_aside_unusable(current.state_url, ensure_data_dir(current))
    if aside:  # asked for on purpose: the new, empty store is made now (commands never make one)
        from pipeline.runtime import get_runtime

        get_runtime().state  # noqa: B018 - opening it makes it
    print(f"docketeer: the unusable state DB was moved aside to {aside}; a new, empty store starts now"
          if aside else "docketeer: the state DB is usable: nothing was moved aside", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
