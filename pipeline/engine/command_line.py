"""A bad `luigi --module pipeline ...` command line: one line on stderr, exit 2, no traceback.

Luigi turns every exception raised while it parses parameters or reaches its scheduler into
"Uncaught exception in luigi" with a traceback and exit 40 (``luigi/retcodes.py``). The
errors an operator can cause are caught before that, where they happen:

* a value that does not parse or is out of range: the parameter's own ``parse``
  (``BoundedIntParameter``, ``DocketIdsParameter``);
* a required parameter left out: ``get_param_values``, which Luigi calls before it makes
  any task (``CheckedParameters``);
* no ``luigid`` to talk to: one TCP connect before the root task is made, instead of three
  RPC attempts 30 s apart and a traceback (``check_scheduler``).

``OneLineUncaught`` is the net for the rest: whatever still reaches Luigi's catch-all is
logged as one line (the traceback stays at DEBUG level, shown with ``--log-level DEBUG``).
"""

from __future__ import annotations

import logging
import socket
import sys
from typing import NoReturn

import luigi
from luigi.parameter import ParameterException

from pipeline.errors import DocketeerError, InvalidIdentifier
from pipeline.ids import validate_id

USAGE_EXIT = 2  # as argparse and a configuration error


def refuse(message: str) -> NoReturn:
    """One line naming what was wrong and what to do, then exit 2."""
    print(f"docketeer: {message} (see --help)", file=sys.stderr)
    raise SystemExit(USAGE_EXIT)


class BoundedIntParameter(luigi.OptionalIntParameter):
    """An optional whole number within [minimum, maximum]; unset is None (the visualiser
    shows it as such, not as a -1 that means "unset")."""

    def __init__(self, *args, minimum: int = 0, maximum: int = 10**9, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.minimum, self.maximum = minimum, maximum

    @property
    def flag(self) -> str:
        # Luigi's __set_name__ records the attribute: the messages name what the user typed.
        return "--" + (self._attribute_name or "value").replace("_", "-")

    def parse(self, x):
        try:
            value = super().parse(x)
        except ValueError:
            refuse(f"{self.flag} {x!r} is not a whole number")
        if value is not None and not self.minimum <= value <= self.maximum:
            refuse(f"{self.flag} {value} is out of range: give a number from {self.minimum} "
                   f"to {self.maximum}")
        return value


class DocketIdsParameter(luigi.Parameter):
    """Docket ids (comma-separated when ``many``), each checked to be a well-formed id
    before anything runs (a malformed one used to fail its task later, exit 30)."""

    def __init__(self, *args, many: bool = True, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.many = many

    def parse(self, x):
        for docket in (d.strip() for d in x.split(",") if d.strip()) if self.many else [x]:
            try:
                validate_id(docket, "docket id")
            except InvalidIdentifier as exc:
                refuse(f"{exc}: a docket id looks like CMS-2026-2377")
        return x


class CheckedParameters:
    """A task whose missing or malformed parameter is one line, not Luigi's traceback."""

    @classmethod
    def get_param_values(cls, params, args, kwargs):
        try:
            return super().get_param_values(params, args, kwargs)
        except ParameterException as exc:
            refuse(_plain(str(exc)))


def _plain(message: str) -> str:
    # "Redrive[args=(), kwargs={}]: requires the 'docket' parameter to be set" -> the words
    # after the task's repr, with Luigi's parameter name written as the flag the user types.
    head, _, rest = message.partition("]: ")
    text = f"{head.split('[')[0]} {rest}" if rest else head
    return text.replace("requires the '", "requires --").replace("' parameter", "").replace("_", "-")


_checked_scheduler = False


def check_scheduler() -> None:
    """On the command line without --local-scheduler, a luigid must answer: else one line."""
    global _checked_scheduler
    from luigi.cmdline_parser import CmdlineParser

    if _checked_scheduler or CmdlineParser.get_instance() is None:
        return  # checked already, or an in-process luigi.build(), which names its scheduler
    _checked_scheduler = True
    core = luigi.interface.core()
    if core.local_scheduler or core.scheduler_url:
        return
    try:
        socket.create_connection((core.scheduler_host, core.scheduler_port), timeout=3).close()
    except OSError:
        refuse(f"no Luigi scheduler answers at {core.scheduler_host}:{core.scheduler_port}: "
               "start one with `luigid`, or pass --local-scheduler")


class OneLineUncaught(logging.Filter):
    """Luigi's "Uncaught exception in luigi" for an error with a plain meaning: one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if record.msg == "Uncaught exception in luigi" and _plain_meaning(exc):
            logging.getLogger("docketeer").debug("uncaught", exc_info=record.exc_info)
            record.msg = f"docketeer: {type(exc).__name__}: {exc}"
            record.args, record.exc_info, record.exc_text = (), None, None
        return True


def _plain_meaning(exc: BaseException | None) -> bool:
    from luigi.rpc import RPCError

    return isinstance(exc, DocketeerError | ParameterException | RPCError)


CONTINUING_LABEL = ".continuing-"


def docket_task_label(family: str, docket: str, continuing: str = "") -> str:
    """A docket task's label: its class and its docket, and, for a task that works on what a
    stage a spent budget stopped got, that stage (``ExtractText.CMS-2026-0001.continuing-backfill``)."""
    return f"{family}.{docket}{CONTINUING_LABEL}{continuing}" if continuing else f"{family}.{docket}"


def task_named_by_its_label(argv: list[str]) -> None:
    """``luigi --module pipeline.tasks FetchComments.CMS-2026-0001 --docket CMS-2026-0001``
    runs ``FetchComments``: a docket task's label (its ``task_family`` in luigid, the
    visualiser's node name, and so the family in its "Command to re-run") is its class and
    its docket (``docket_task_label``), while Luigi's registry knows the class alone. Only a
    task named by the very docket its ``--docket`` gives is read so (a Luigi namespace,
    ``ns.Task``, never is). ``argv`` is the list Luigi parses, changed in place (Luigi parses
    it again after importing ``--module``)."""
    dockets = {value for flag, value in zip(argv, argv[1:], strict=False) if flag == "--docket"}
    dockets |= {arg.removeprefix("--docket=") for arg in argv if arg.startswith("--docket=")}
    for i, arg in enumerate(argv):
        family, dot, rest = arg.partition(".")
        labelled = any(rest == d or rest.startswith(d + CONTINUING_LABEL) for d in dockets)
        if dot and labelled and family.isidentifier() and not arg.startswith("-"):
            argv[i] = family


def luigi_command_line_args() -> list[str] | None:
    """The argument list the `luigi` command (``luigi.cmdline.luigi_run``, as the console
    script and ``python -m luigi`` call it: with its default, ``sys.argv[1:]`` taken when
    Luigi was imported) is parsing, or None when Luigi is driven some other way."""
    cmdline = sys.modules.get("luigi.cmdline")
    defaults = getattr(getattr(cmdline, "luigi_run", None), "__defaults__", None) or ()
    return defaults[0] if defaults and isinstance(defaults[0], list) else None


def stop_if_already_running(argv: list[str]) -> None:
    """The same `luigi` command already running (Luigi's process lock, ``lock_pid_dir``):
    one line naming its pid, then [retcode] already_running, before anything is scheduled.
    Luigi checks again when it takes the lock (two started in the same instant still meet
    there), but it says only "Pid(s) {…} already running" on stdout."""
    from luigi import lock

    config = luigi.configuration.get_config()
    if ("--no-lock" in argv or "--take-lock" in argv or config.getboolean("core", "no_lock", False)
            or config.getint("core", "lock_size", 1) != 1
            or not config.has_option("core", "lock_pid_dir")):
        return
    pid_dir = config.get("core", "lock_pid_dir")
    my_pid, my_cmd, pid_file = lock.get_info(pid_dir)
    try:
        with open(pid_file) as listed:
            pids = {int(p) for p in listed.read().split() if p.strip().isdigit()}
    except OSError:
        return
    others = sorted(p for p in pids if p != my_pid and lock.getpcmd(p) == my_cmd)
    if others:
        code = config.getint("retcode", "already_running", 10)
        print(f"docketeer: the same command is already running as pid {', '.join(map(str, others))} "
              f"(lock in {pid_dir}); this run did nothing (exit {code})", file=sys.stderr)
        raise SystemExit(code)


def interrupt_is_one_line() -> None:
    """Ctrl-C (SIGINT) during a `luigi` run: one line, not the traceback of wherever the
    worker was. What was done is kept: a stage writes its rows as it goes, and a row left
    ``pending`` is repaired by the next run. The process still ends as Python ends on an
    interrupt (killed by SIGINT), which is what a shell and cron expect."""
    previous = sys.excepthook

    def one_line(kind, value, traceback) -> None:
        if issubclass(kind, KeyboardInterrupt):
            print("docketeer: interrupted; what was done is kept, and the next run continues",
                  file=sys.stderr)
            return
        previous(kind, value, traceback)

    sys.excepthook = one_line
