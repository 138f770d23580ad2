"""What every ``docketeer`` subcommand module shares: the registry of commands, the store a
command opens (closed by ``main`` on the way out), the argument types, the one-line parser,
the table printer and the terminal-safe output stream."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from datetime import timedelta

from pipeline import text_validity
from pipeline.clock import eastern_instant
from pipeline.errors import DocketeerError
from pipeline.reading import search_arguments

COMMANDS: dict[str, Callable] = {}


def command(func: Callable) -> Callable:
    """Register ``cmd_seal`` as the ``seal`` command (``cmd_a_b`` as ``a-b``)."""
    COMMANDS[func.__name__.removeprefix("cmd_").replace("_", "-")] = func
    return func


class UnknownItem(DocketeerError):
    pass


opened: list = []  # runtimes this command used; main() closes them on the way out


def open_runtime():
    # Imported here: the runtime brings luigi, peewee and psycopg2, which `docketeer --help`
    # and a bad argument do without.
    from pipeline.runtime import existing_runtime

    # Every subcommand reads (or changes) a store that a run made: none creates one.
    runtime = existing_runtime()
    opened.append(runtime)
    return runtime


def close_runtimes() -> None:
    # Stops the embedded index server if this command started it (and nobody else uses it).
    while opened:
        opened.pop().close()


def table(rows: list[list], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def minute(stamp: str) -> str:
    """'2026-12-01T06:00:00.000000Z' -> '2026-12-01 01:00 EST' (as people read instants)."""
    return eastern_instant(stamp)


MAX_DURATION = timedelta(days=36500)  # a hundred years: anything longer is a typo
MAX_K = 1000


def parse_duration(text: str) -> timedelta:
    """'90s', '30m', '1h', '2d' -> timedelta (argparse type: a bad value exits 2 with one line)."""
    match = re.fullmatch(r"(\d+)([smhd])", text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"not a duration like 30m, 1h or 2d: {text!r}")
    unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[match.group(2)]
    seconds = int(match.group(1)) * int(timedelta(**{unit: 1}).total_seconds())
    if seconds > MAX_DURATION.total_seconds():
        raise argparse.ArgumentTypeError(f"{text!r} is longer than {MAX_DURATION.days} days")
    return timedelta(seconds=seconds)


def parse_day(text: str) -> str:
    """--from / --to: a calendar day, YYYY-MM-DD, 1000-01-01 to 9999-12-31 (argparse type)."""
    try:
        given = search_arguments.day(text, "day")
    except search_arguments.BadSearch as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("day: ")) from None
    if not given:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}")
    return given


def parse_k(text: str) -> int:
    """-k: how many hits, 1 to MAX_K (argparse type)."""
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= k <= MAX_K:
        raise argparse.ArgumentTypeError(f"give a number from 1 to {MAX_K}, not {k}")
    return k


def whole_number(high: int | None = None) -> Callable[[str], int]:
    """--page / --per-page: a whole number from 1 (to ``high`` when given; argparse type)."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if n < 1 or (high is not None and n > high):
            raise argparse.ArgumentTypeError(f"give a number from 1{f' to {high:,}' if high else ''}, not {n}")
        return n
    return parse


class OneLineParser(argparse.ArgumentParser):
    """A bad argument is one line on stderr (argparse's usage block is what --help is for)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


class Commands:
    """The subcommands, each with its one-line summary as both the list's help and its own
    ``--help`` description. A command module's ``register(commands)`` adds its own."""

    def __init__(self, subparsers) -> None:
        self._subparsers = subparsers

    def add_parser(self, name: str, *, help: str) -> argparse.ArgumentParser:  # noqa: A002 - argparse's name
        return self._subparsers.add_parser(name, help=help, description=help[:1].upper() + help[1:] + ".")


class TerminalOutput:
    """A text stream that writes through ``text_validity.for_terminal``: what a stored record
    still holds that a terminal acts on (an OSC sequence setting its title, a screen clear,
    BEL) reaches terminals and cron mail as visible escapes (``\\x1b``), and a lone surrogate
    as ``\\ud800`` (inside JSON output, the same escape). Every line a command prints goes
    through it (``main``)."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(text_validity.for_terminal(text))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
