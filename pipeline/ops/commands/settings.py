"""``docketeer config``: the effective settings and where each came from."""

from __future__ import annotations

from pipeline.ops.commands.command_line import command, table


def register(commands) -> None:
    commands.add_parser("config", help="effective settings and where each came from (secrets masked)")


@command
def cmd_config(args) -> int:
    # Imported here: the settings bring luigi's configuration, which `docketeer --help` does without.
    from pipeline.config import load_settings

    rows = [[name, value, origin] for name, value, origin in load_settings().masked()]
    print(table(rows, ["setting", "value", "from"]))
    return 0
