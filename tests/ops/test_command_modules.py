"""The ``docketeer`` command's layout: each module of ``pipeline/ops/commands/`` registers its
own subcommands and their functions, and the dispatcher stays light to start."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from pipeline.ops import cli
from pipeline.ops.commands.command_line import COMMANDS
from tests.fixtures.paths import ROOT

HEAVY = ("luigi", "peewee", "requests", "tenacity", "psycopg2", "boto3", "botocore", "pgvector", "numpy",
         "starlette", "pyarrow")


def test_every_subcommand_has_its_function_and_every_function_its_subcommand():
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(commands.choices) == set(COMMANDS)


def test_the_help_and_a_bad_argument_import_none_of_the_stack():
    """`docketeer --help` and building the parser load the command modules alone: each
    imports the store, the stages and the web server inside the command that needs them."""
    report = ("import sys; from pipeline.ops import cli; cli.build_parser(); "
              f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
    done = subprocess.run([sys.executable, "-c", report], cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.replace("'", '"')) == []
