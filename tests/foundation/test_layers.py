"""The package's layers (docs/architecture.md): a module may import its own layer and those below.

Read from the source (every `import` and `from ... import`, also inside functions), so a lazy import
that climbs a layer fails here as surely as a top-level one. There is no import cycle between
modules either, and a suite module imports nothing of the package but the authoring API.
"""

from __future__ import annotations

import ast
from pathlib import Path

import torchcts

PACKAGE = Path(torchcts.__file__).parent

# Bottom to top; docs/architecture.md draws the same list.
LAYERS: list[tuple[str, ...]] = [
    ("torchcts", "torchcts.errors", "torchcts.levels", "torchcts.settings", "torchcts.safe_io",
     "torchcts.process", "torchcts.untrusted", "torchcts.releases"),
    ("torchcts.model",),
    ("torchcts.compat",),
    ("torchcts.oracle",),
    ("torchcts.manifest",),
    ("torchcts.backends", "torchcts.sim"),
    ("torchcts.cases",),
    ("torchcts.results",),
    ("torchcts.workers",),
    ("torchcts.engine",),
    ("torchcts.coverage",),
    ("torchcts.evidence",),
    ("torchcts.cli",),
    ("torchcts.__main__",),
]

# Documented upward imports (docs/architecture.md), as (module, what it imports): none today. The
# sim's fault-selection variable, which once made sim/faults.py import engine/selftest.py, is read
# from torchcts/settings.py on the bottom layer.
ALLOWED_UPWARD: set[tuple[str, str]] = set()

# A suite's one door into the package (docs/internals.md, "Cases"): no exception.
SUITES_PACKAGE = "torchcts.cases.suites"
SUITE_API = "torchcts.cases.api"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Every torchcts module `path` imports, resolved to absolute names."""
    return imports_in(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py")


def imports_in(source: str, mod: str, is_package: bool = False) -> set[str]:
    package = mod if is_package else mod.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.add(target)
            # `from torchcts.x import y` may name a submodule y
            found.update(f"{target}.{a.name}" for a in node.names if _is_module(f"{target}.{a.name}"))
    return {f for f in found if f == "torchcts" or f.startswith("torchcts.")}


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (PACKAGE.parent / rel).with_suffix(".py").is_file() or (PACKAGE.parent / rel / "__init__.py").is_file()


def layer_of(mod: str) -> int:
    best, level = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and len(p) > best:
                best, level = len(p), i
    assert level >= 0, f"{mod} is on no layer: add it to LAYERS and docs/architecture.md"
    return level


def all_modules() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{mod} (layer {layer_of(mod)}) imports {dep} (layer {layer_of(dep)})"
        for mod, deps in graph.items()
        for dep in sorted(deps)
        if layer_of(dep) > layer_of(mod) and (mod, dep) not in ALLOWED_UPWARD
    ]


def suite_imports_beside_the_api(graph: dict[str, set[str]]) -> list[str]:
    """Each import of the package by a suite module that is not cases/api.py nor a private helper of
    its own suite package (field/_common.py: constants its modules share), standard library and
    third-party imports being outside the graph."""
    def own_helper(mod: str, dep: str) -> bool:
        package, _, name = dep.rpartition(".")
        return name.startswith("_") and package == mod.rpartition(".")[0] and package != SUITES_PACKAGE

    return [
        f"{mod} imports {dep} (export it from {SUITE_API} and import it there)"
        for mod, deps in graph.items()
        if mod.startswith(SUITES_PACKAGE + ".")
        for dep in sorted(deps)
        if dep != SUITE_API and not own_helper(mod, dep)
    ]


def test_no_module_imports_a_higher_layer() -> None:
    assert upward_imports(all_modules()) == []


def test_the_allowed_upward_import_still_exists() -> None:
    """An exception that the code no longer needs is removed from ALLOWED_UPWARD."""
    graph = all_modules()
    for mod, dep in ALLOWED_UPWARD:
        assert dep in graph.get(mod, set()), f"{mod} no longer imports {dep}: drop the exception"


def test_no_import_cycle_between_modules() -> None:
    graph = all_modules()
    # a package's __init__ importing its own submodules is how a package exposes them, not a cycle
    edges = {m: {d for d in deps if d in graph and d != m and not d.startswith(m + ".")} for m, deps in graph.items()}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for dep in sorted(edges[node]):
            if state.get(dep) == 1:
                cycles.append([*stack[stack.index(dep):], dep])
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[node] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])
    assert cycles == []


def test_the_layer_test_sees_an_upward_import() -> None:
    """The check itself works: a lower module importing a higher one, even lazily, is found."""
    assert upward_imports({"torchcts.oracle.compare": {"torchcts.cli.common"}}) != []
    assert upward_imports({"torchcts.cli.run": {"torchcts.engine.execute", "torchcts.errors"}}) == []
    lazy = "def f():\n    from ..cli import common\n    from torchcts.cli.common import require_device\n"
    assert imports_in(lazy, "torchcts.results.probe") == {"torchcts.cli", "torchcts.cli.common"}
    assert upward_imports({"torchcts.results.probe": imports_in(lazy, "torchcts.results.probe")}) != []


def test_a_suite_imports_only_the_authoring_api() -> None:
    graph = all_modules()
    assert sum(m.startswith(SUITES_PACKAGE + ".") for m in graph) > 20  # the suites were read
    assert suite_imports_beside_the_api(graph) == []


def test_the_suite_test_sees_another_import() -> None:
    """The check itself works: a suite importing another suite or a lower layer, even lazily, is found."""
    lazy = ("from torchcts.cases.api import CaseSet\nimport torch\n"
            "def f():\n    from torchcts.cases.suites.rng import ALPHA\n    from ..helpers import expect\n")
    found = suite_imports_beside_the_api({"torchcts.cases.suites.probe": imports_in(lazy, "torchcts.cases.suites.probe")})
    assert [f.split()[2] for f in found] == ["torchcts.cases.helpers", "torchcts.cases.suites.rng"]
    clean = "import torch\nfrom torchcts.cases.api import CaseSet, compat\n"
    assert suite_imports_beside_the_api({"torchcts.cases.suites.probe": imports_in(clean, "torchcts.cases.suites.probe")}) == []


# The data model's only doors out of itself (torchcts/model/__init__.py says why): the error line
# of a record's internal error and the one bounded parser of untrusted JSON.
MODEL_PACKAGE = "torchcts.model"
MODEL_MAY_IMPORT = {"torchcts.errors", "torchcts.untrusted"}


def model_imports_beside_itself(graph: dict[str, set[str]]) -> list[str]:
    """Each import of the package by the data model that is neither the model nor one of its two leaves."""
    return [f"{mod} imports {dep}" for mod, deps in graph.items()
            if mod == MODEL_PACKAGE or mod.startswith(MODEL_PACKAGE + ".")
            for dep in sorted(deps)
            if dep != "torchcts" and not dep.startswith(MODEL_PACKAGE) and dep not in MODEL_MAY_IMPORT]


def test_the_data_model_imports_nothing_but_itself() -> None:
    graph = all_modules()
    assert {"torchcts.model.record", "torchcts.model.status", "torchcts.model.case"} <= set(graph)
    assert model_imports_beside_itself(graph) == []
    # the check itself works: a model module importing the manifest (a lower layer than most) is found
    assert model_imports_beside_itself({"torchcts.model.run": {"torchcts.manifest.schema", "torchcts.model.status"}}) \
        == ["torchcts.model.run imports torchcts.manifest.schema"]
