"""docketeer: a Luigi pipeline keeping a local, searchable copy of regulations.gov comments.

Importing this package is cheap, because every import of a submodule runs it first: an
extract worker that imports ``pipeline.extract.readers`` to read a PDF must not pay for
luigi, peewee, requests and the tasks on the way.

The task names are still exported here (``from pipeline import IndexAll``), but loaded on
first use (the module ``__getattr__`` below): every task ``pipeline.tasks`` makes for the
stages the assembly lists (``pipeline.assembly``), with discovery and Redrive.
``luigi --module pipeline IndexAll`` needs more: Luigi's command line does ``__import__("pipeline")`` and then looks ``IndexAll`` up
in its task registry (``luigi/cmdline_parser.py``: ``_attempt_load_module``, then
``Register.get_task_cls``), so the classes must be defined by the time the import returns;
a lazy attribute is never asked for. Luigi itself is imported before it imports us, so
when ``luigi`` is already loaded this package registers the tasks at import. A process
without Luigi loaded (an extract worker, a script) gets the light package. The cost: in a
process that imports this package first and Luigi later, only a task name's first use
registers the tasks, so there ``luigi --module pipeline`` in-process would not find them
(``--module pipeline.tasks`` does).
"""

import os
import sys

# A PDF or embedding library may bring onnxruntime along (pymupdf 2 does), whose telemetry
# on Linux and macOS writes a device id under ~/.cache and a file in $TMPDIR at import and
# reports to Microsoft: set before anything imports it, this opts out (a user's own
# ORT_DISABLE_TELEMETRY setting wins). docketeer writes only to its data folder.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


def __getattr__(name: str):
    """A task class (``pipeline.tasks.TASK_NAMES``: discovery, Redrive, each stage's two, as
    the assembly lists the stages), imported (and so registered with Luigi) on first use.
    ``installed_version`` is ``pipeline.version``'s, still found here by the commands."""
    if name == "installed_version":
        from pipeline.version import installed_version

        return installed_version
    if name == "__all__":  # ``from pipeline import *``: the task classes
        return list(_tasks().TASK_NAMES)
    if not name[:1].isupper() or name not in _tasks().TASK_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_tasks(), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_tasks().TASK_NAMES})


def _tasks():
    from pipeline import tasks

    return tasks


def _register_tasks() -> None:
    _tasks()


def _is_luigi_command_line() -> bool:
    """``luigi --module pipeline ...`` or ``python -m luigi --module pipeline ...`` that will
    run (``--help`` only prints, and must leave no data folder behind)."""
    script = os.path.basename(sys.argv[0]) if sys.argv else ""
    asks_help = any(arg.startswith("--help") for arg in sys.argv)
    return "--module" in sys.argv and not asks_help and (
        script == "luigi" or sys.argv[0].endswith("luigi/__main__.py"))


def _temporary_files_in_data_folder() -> None:
    """A run's temporary files (its own, its workers', the programs they run) go under the data folder."""
    from pipeline.config import load_settings
    from pipeline.errors import ConfigError
    from pipeline.store.leftovers import temporary_files_in

    try:
        temporary_files_in(load_settings().data_path)
    except (ConfigError, OSError):  # the runtime says so in one line when the first task starts
        pass


def _docket_task_labels_map_to_their_class() -> None:
    """The visualiser's "Command to re-run" names a docket task by its label
    (``FetchComments.CMS-2026-0001``): that command runs ``FetchComments``."""
    from pipeline.engine.command_line import luigi_command_line_args, task_named_by_its_label

    argv = luigi_command_line_args()
    if argv is not None:
        task_named_by_its_label(argv)


def _stop_if_already_running() -> None:
    from pipeline.engine.command_line import luigi_command_line_args, stop_if_already_running

    stop_if_already_running(luigi_command_line_args() or sys.argv[1:])


if "luigi" in sys.modules:  # Luigi is importing us (see the docstring): define the tasks now
    _register_tasks()
    if _is_luigi_command_line():
        _docket_task_labels_map_to_their_class()
    from pipeline.config import lock_luigi_in_data_folder

    lock_luigi_in_data_folder(create=_is_luigi_command_line())
    if _is_luigi_command_line():
        _stop_if_already_running()
        _temporary_files_in_data_folder()
        from pipeline.engine.command_line import interrupt_is_one_line

        interrupt_is_one_line()
