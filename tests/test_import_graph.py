"""The product's import graph has no cycle, function-local imports included, and the layout's
rooms keep their walls: every import runs down the layers of pipeline/layers.py (or stays
in its layer), the engine names no stage, no stage imports a later stage's ``stage``
module, and nothing below the operator commands imports them."""

from __future__ import annotations

import ast
from pathlib import Path

from pipeline.layers import LAYERS, layer_of
from tests.fixtures.paths import ROOT

PACKAGES = ("pipeline", "targets", "devtools")
LAYERED = ("pipeline", "targets")  # what pipeline/layers.py places


def product_modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imports_of(path: Path, module: str, known: dict[str, Path]) -> set[str]:
    """The product modules ``module`` imports anywhere in its file (a function's body too):
    ``from a.b import c`` counts ``a.b.c`` when that is a module, else ``a.b``."""
    return imports_in(ast.parse(path.read_text(encoding="utf-8")), path, module, known)


def imports_in(tree: ast.AST, path: Path, module: str, known: dict[str, Path]) -> set[str]:
    found = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                     for alias in node.names]
        else:
            continue
        found |= {name for name in names if name in known and name != module}
    return found


def import_graph() -> dict[str, set[str]]:
    known = product_modules()
    return {module: imports_of(path, module, known) for module, path in known.items()}


def cycle_in(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of the graph as the modules along it, or [] (a depth-first search).

    A package's ``__init__`` runs before any of its modules, but importing a module does
    not import its siblings: the edges are exactly the import statements."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*path[path.index(target):], target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_the_graph_is_read_whole():
    """The reader sees what it must: a function-local import and a ``from pkg import module``."""
    graph = import_graph()
    assert "pipeline.fetch.walk" in graph["pipeline.fetch.mirror"]  # a package's module by name
    assert "pipeline.engine.registry" in graph["pipeline.engine.docket_task"]
    assert "pipeline.store.documents" in graph["pipeline.store.db"]  # inside a function
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle_in({"a": {"b"}, "b": set()}) == []


def test_no_product_module_imports_itself_back():
    assert cycle_in(import_graph()) == []


def test_the_engine_names_no_stage():
    """The stages, their order and discovery are the assembly's (pipeline/assembly.py)."""
    stages = layer_of("pipeline.fetch")
    offending = [f"{module} -> {target}" for module, imported in import_graph().items()
                 if module.startswith(("pipeline.engine", "targets")) for target in imported
                 if layer_of(target) is not None and layer_of(target) >= stages]
    assert offending == []


def test_no_stage_knows_the_stages_downstream_of_it():
    """A stage's output is read through the store by whoever comes later; its own code never
    imports a later stage's ``stage`` module (libraries a later stage owns, such as extract's
    readers that backfill asks which formats it can read, are shared within the stages).
    The order is the assembly's, discovery first."""
    from pipeline import assembly

    order = ["discover", *(stage.name for stage in assembly.STAGES)]
    offending = []
    for module, imported in import_graph().items():
        parts = module.split(".")
        if len(parts) < 3 or parts[1] not in order:
            continue
        for target in imported:
            other = target.split(".")
            if (len(other) == 3 and other[1] in order and other[2] == "stage"
                    and order.index(other[1]) > order.index(parts[1])):
                offending.append(f"{module} -> {target}")
    assert offending == []


def test_nothing_below_the_operator_commands_imports_them():
    ops = layer_of("pipeline.ops")
    offending = [f"{module} -> {target}" for module, imported in import_graph().items()
                 if module.startswith(LAYERED) and layer_of(module) < ops for target in imported
                 if target.startswith("pipeline.ops")]
    assert offending == []


def test_an_extras_package_is_imported_by_its_feature_alone():
    """pyarrow is the export extra's (setup.cfg): only the export module imports it, so the
    main job and every other command run without it."""
    importers = set()
    for module, path in product_modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(name.split(".")[0] == "pyarrow" for name in names):
                importers.add(module)
    assert importers == {"pipeline.ops.export"}
def test_only_the_pages_and_the_commands_read_through_the_read_side():
    """``pipeline/reading/`` sits above the stages: no stage, nor anything they stand on,
    imports it."""
    above = ("pipeline.reading", "pipeline.web", "pipeline.ops")
    offending = [f"{module} -> {target}" for module, imported in import_graph().items()
                 if not module.startswith(above) for target in imported if target.startswith("pipeline.reading")]
    assert offending == []


def test_the_pages_and_the_commands_reach_no_stage_module():
    """What the pages and the commands show of a stage's output they read through
    ``pipeline/reading/`` (a comment's text, the search's embedder), never its ``stage``."""
    offending = [f"{module} -> {target}" for module, imported in import_graph().items()
                 if module.startswith(("pipeline.web", "pipeline.ops")) for target in imported
                 if target.count(".") == 2 and target.endswith(".stage") and target != "pipeline.engine.stage"]
    assert offending == []
# --- The layers (pipeline/layers.py) -------------------------------------------------------


# Imports up the table that a move under way still holds (none: it only shrinks).
STILL_TO_MOVE: set[tuple[str, str]] = set()


def upward_imports() -> list[tuple[str, int, str, str, str]]:
    """Every import in pipeline/ and targets/ (a function's too) that runs up the layers:
    (file, line, module, imported module, 'lower layer < upper layer')."""
    known = product_modules()
    found = []
    for module, path in known.items():
        if not module.startswith(LAYERED) or (own := layer_of(module)) is None:
            continue
        for line, imported in import_lines(path, module, known):
            theirs = layer_of(imported)
            if theirs is not None and theirs > own:
                found.append((str(path.relative_to(ROOT)), line, module, imported,
                              f"{LAYERS[own][0]} < {LAYERS[theirs][0]}"))
    return found


def import_lines(path: Path, module: str, known: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, product module) of each import in ``module``'s file, as ``imports_of`` reads them."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            single = ast.Module(body=[node], type_ignores=[])
            found += [(node.lineno, name) for name in imports_in(single, path, module, known)]
    return found


def test_every_module_has_a_layer():
    unplaced = [m for m in product_modules() if m.startswith(LAYERED) and layer_of(m) is None]
    assert unplaced == []


def test_no_import_runs_up_the_layers():
    offending = [f"{file}:{line}: {module} imports {imported} ({layers})"
                 for file, line, module, imported, layers in upward_imports()
                 if (module, imported) not in STILL_TO_MOVE]
    assert offending == [], "\n".join(offending)


def test_the_known_upward_imports_are_still_there():
    """An entry of STILL_TO_MOVE that no longer occurs is taken out (the list only shrinks)."""
    found = {(module, imported) for _, _, module, imported, _ in upward_imports()}
    assert STILL_TO_MOVE - found == set()


def test_the_layers_see_an_upward_import():
    assert layer_of("pipeline.store.db") < layer_of("pipeline.campaigns.grouping")
    assert layer_of("pipeline") == layer_of("pipeline.tasks") == len(LAYERS) - 1
    assert layer_of("pipeline.sources.http") == 1 and layer_of("targets") == layer_of("pipeline.engine.wrapper")
