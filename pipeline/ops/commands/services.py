"""``docketeer stop``: stop what a store has running in the background (``pipeline.ops.stop``).

``search --stop`` does the same (``search.py``). The store's modules are imported inside the
command: ``docketeer --help`` does without them."""

from __future__ import annotations

from pipeline.ops.commands.command_line import command


def register(commands) -> None:
    commands.add_parser("stop", help="stop the store's warm search service and embedded index server "
                                     "(one a run or docketeer serve uses is named and left running)")


@command
def cmd_stop(args) -> int:
    print("\n".join(stopped_lines()))
    return 0


def stopped_lines() -> list[str]:
    """What ``docketeer stop`` stopped or found running in the data folder, a line each."""
    from pipeline.ops.stop import stop_store
    from pipeline.runtime import current_settings, require_existing_store

    settings = current_settings()
    require_existing_store(settings)
    return stop_store(settings.data_path)
