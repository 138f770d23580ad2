"""The tests' own layout: a test file imports helpers from tests/fixtures/, never another test
file; fixtures reach tests through ``pytest_plugins`` in tests/conftest.py (or a folder's
conftest.py), never through an import kept alive by ``noqa: F401``; every folder holding test
files is a package whose ``__init__.py`` says what it tests."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.fixtures.paths import ROOT

TESTS = ROOT / "tests"
NOQA_F401 = re.compile(r"#\s*noqa:[^#]*\bF401\b")


def python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def files_of_tests() -> list[Path]:
    return [p for p in python_files() if p.name.startswith("test_")]


def module_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def imported_modules(path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names an import statement brings in (relative ones made absolute), each with
    the names imported from it, as ``package.module`` and ``package.module.name``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        package = module_of(path).split(".")[:-node.level]
        base = ".".join([*package, *([node.module] if node.module else [])])
    else:
        base = node.module or ""
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def is_test_module(dotted: str) -> bool:
    return dotted.split(".")[0] == "tests" and any(part.startswith("test_") for part in dotted.split("."))


def fixtures_of(module: str) -> set[str]:
    """The pytest fixtures a module under tests/ defines (empty when it is no file there)."""
    path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
    if not path.is_file():
        return set()
    return {node.name for node in ast.parse(path.read_text(encoding="utf-8")).body
            if isinstance(node, ast.FunctionDef)
            and any("fixture" in ast.unparse(d) for d in node.decorator_list)}


def test_no_test_file_imports_another_test_module():
    """Nor does a conftest.py or a helper: what two test files share lives in tests/fixtures/."""
    offending = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                tested = [dotted for dotted in imported_modules(path, node) if is_test_module(dotted)]
                if tested:
                    offending.append(f"{path.relative_to(ROOT)}:{node.lineno}: {', '.join(tested)}")
    assert offending == []


def test_no_fixture_is_reached_by_an_import():
    """Neither ``from tests... import fixture  # noqa: F401`` nor ``fixture = module.fixture``."""
    offending = []
    for path in python_files():
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        tree = ast.parse(source)
        aliases: dict[str, str] = {}  # a name bound to a module under tests/ -> that module
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            statement = "\n".join(lines[node.lineno - 1:node.end_lineno])
            from_tests = [d for d in imported_modules(path, node) if d.split(".")[0] == "tests"]
            if from_tests and NOQA_F401.search(statement):
                offending.append(f"{where}: an import kept by noqa: F401")
            if isinstance(node, ast.ImportFrom) and from_tests:
                base = from_tests[0]
                fixtures = fixtures_of(base)
                offending += [f"{where}: imports the fixture {a.name}" for a in node.names if a.name in fixtures]
                for alias in node.names:
                    aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "tests" and alias.asname:
                        aliases[alias.asname] = alias.name
        for node in tree.body:
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute)
                    and isinstance(node.value.value, ast.Name) and node.value.value.id in aliases
                    and node.value.attr in fixtures_of(aliases[node.value.value.id])):
                offending.append(f"{path.relative_to(ROOT)}:{node.lineno}: binds the fixture {node.value.attr}")
    assert offending == []


def test_every_folder_of_test_files_is_a_package_that_says_what_it_tests():
    """Its ``__init__.py`` has a docstring; a conftest.py exists only where it holds something
    (fixtures or hooks of that folder alone), never a docstring by itself."""
    folders = sorted({path.parent for path in files_of_tests()})
    assert TESTS in folders and len(folders) > 1
    missing = [f"{folder.relative_to(ROOT)}/__init__.py" for folder in folders
               if folder != TESTS and not ast.get_docstring(_parsed(folder / "__init__.py"))]
    assert missing == []
    hollow = [c.relative_to(ROOT).as_posix() for c in TESTS.rglob("conftest.py")
              if all(isinstance(node, ast.Expr) for node in _parsed(c).body)]
    assert hollow == []


def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8")) if path.is_file() else ast.Module(body=[], type_ignores=[])


def test_pytest_plugins_is_declared_in_the_root_conftest_only():
    """pytest reads ``pytest_plugins`` in the rootdir's conftest.py alone."""
    declaring = []
    for path in python_files():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            if any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in targets):
                declaring.append(path.relative_to(ROOT).as_posix())
    assert declaring == ["tests/conftest.py"]


def test_the_tests_mirror_the_packages():
    """Each package of ``pipeline/`` has its folder of tests, and each folder of tests names a
    package of ``pipeline/`` or of the checkout (``devtools``, ``benchmarks``), besides the
    shared fixtures and the reliability suite."""
    packages = {p.name for p in (ROOT / "pipeline").iterdir() if (p / "__init__.py").is_file()}
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert packages - folders == set()
    assert folders - packages == {"devtools", "benchmarks", "fixtures", "reliability"}
