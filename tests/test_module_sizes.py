"""The product's modules stay readable: none under pipeline/ longer than MAX_MODULE_LINES, and
at most MAX_LONG_FUNCTIONS functions in the whole package longer than MAX_FUNCTION_LINES (a
function's lines from its ``def`` to its last, as ``ast`` counts them)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.fixtures.paths import ROOT

PIPELINE = ROOT / "pipeline"
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 60
MAX_LONG_FUNCTIONS = 3
# Modules allowed past MAX_MODULE_LINES, each with its reason (none).
LONG_MODULES_ALLOWED: set[str] = set()


def modules() -> list[Path]:
    return sorted(p for p in PIPELINE.rglob("*.py") if "__pycache__" not in p.parts)


def name_of(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{name_of(path)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]


def test_no_module_is_longer_than_the_limit():
    long = [f"{name_of(path)} ({lines} lines)" for path in modules()
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
            and name_of(path) not in LONG_MODULES_ALLOWED]
    assert long == []


def test_few_functions_are_longer_than_the_limit():
    long = [entry for path in modules() for entry in long_functions(path)]
    assert len(long) <= MAX_LONG_FUNCTIONS, "\n".join(long)
