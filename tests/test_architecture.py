"""The layout shows the architecture: imports go one way, small modules, imports inside functions
only where start-up time (or the worker's device) asks for them.

The import graph is read from the source with :mod:`ast` (nothing is imported), so a new cycle or
an upward import fails here with the modules named, before it fails somewhere at run time.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("reference", "mutants", "fuzz", "lse_fuzz")
# The most lines of a module, and of a function (nested functions counted in the one that holds them).
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80

# Lower layers never import higher ones; a module may import its own layer or any lower one.
LAYERS = [
    # lse_fuzz._errors holds only the base of every project exception and imports nothing: it is at
    # the bottom so every layer can derive from it, in lse_fuzz because PackageClash (raised when
    # ``reference`` is another project's package) derives from it too.
    ("reference", "lse_fuzz._errors"),
    ("mutants",),
    # fuzz.interpreter: what Triton does under the fuzzer (its leaf modules import only each other).
    ("fuzz._version", "fuzz._lazy", "fuzz.defaults", "fuzz.option_table", "fuzz.interpreter"),
    ("fuzz.failures", "fuzz.validate", "fuzz.outcomes", "fuzz.target", "fuzz.gpu_memory", "fuzz.layouts",
     "fuzz.calls", "fuzz.gradient", "fuzz.costs"),
    ("fuzz.contract",),
    ("fuzz.strategies", "fuzz.lse_input", "fuzz.recipes", "fuzz.batching", "fuzz.profiles", "fuzz.timing",
     "fuzz.shrinking", "fuzz.shares", "fuzz.stream"),
    ("fuzz.checks", "fuzz.reproducer", "fuzz.merge"),  # a reproducer file names checks and a plan: the memory probes load one
    ("fuzz.memory",),  # the GPU's memory phase: the probes, compute-sanitizer, the CPU's checks as fallback
    # fuzz.isolation from the bottom up: what its subpackages share, then the guard (which the fork
    # server's client tells of every child), the fork server, the worker and the pool (both forked
    # from it), and last its face, the package itself.
    ("fuzz.isolation.environment", "fuzz.isolation.wire", "fuzz.isolation.processes"),
    ("fuzz.isolation.guard",),
    ("fuzz.isolation.fork_server",),
    ("fuzz.isolation.worker",),
    ("fuzz.isolation.pool",),
    ("fuzz.result", "fuzz.run", "fuzz.runner", "fuzz.isolation"),
    ("fuzz.grading",),
    ("fuzz.mutation",),
    ("mutants.patched",),  # the bundled mutants' TARGETs: the catalog's data loaded by the engine's patch loader
    # An op's command-line runs (fuzz.merge's runner is in the checks' layer): a child process per run.
    ("fuzz.commands", "fuzz.cli", "fuzz.plugin", "fuzz.__main__", "fuzz", "fuzz.merge.command", "fuzz.merge.child",
     "fuzz.merge.child_run", "fuzz.merge.mutants", "fuzz.merge.grade", "fuzz.merge.batch"),
    ("lse_fuzz",),  # the public surface: entry points and re-exports
]

# Imports inside functions, each on purpose (module -> why); anything else is a module in the
# wrong place dodging a cycle.
DELIBERATE = {
    "fuzz.cli": "the sub-commands are imported when the parser is built, each one's heavy imports in its run()",
    "fuzz.commands.check": "`lse-fuzz --help` must not import torch and triton",
    "fuzz.commands.grade": "`lse-fuzz --help` must not import torch and triton",
    "fuzz.commands.replay": "`lse-fuzz --help` must not import torch and triton",
    "fuzz.commands.mutate": "`lse-fuzz --help` must not import torch and triton",
    "fuzz.commands.mutants": "`lse-fuzz --help` must not import torch and triton",
    "fuzz.merge.child": "Triton's mode is set from --device before anything imports Triton",
    "fuzz.plugin": "pytest loads the plugin in every run; torch only when an option asks for it",
    "lse_fuzz.cli": "fuzz is imported only once it is known to be lse-fuzz's own (lse_fuzz._packages)",
    "fuzz.isolation.worker.process": "the target loader imports the kernels only after the worker set its device mode",
    "fuzz.mutation.report": "jsonschema is an optional dependency: only validating a report needs it",
    "fuzz.mutation.bundled": "listing the catalog must not define the reference kernels (Triton's mode is fixed then)",
    "fuzz.memory.probe": "with --interpreter, Triton's mode is set before the target (and Triton) are imported",
}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _resolve(module: str, node: ast.ImportFrom | ast.Import, is_package: bool) -> list[str]:
    """The project modules an import statement loads."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = module.split(".") if is_package else module.split(".")[:-1]
        if node.level:
            base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = [f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in MODULES else prefix for alias in node.names]
    targets = []
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name:
            targets.append(name)
    return targets


def _imports(module: str) -> tuple[set[str], list[tuple[str, int]]]:
    """(modules imported at module level, [(module imported inside a function, line)])."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    top: set[str] = set()
    inner: list[tuple[str, int]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in _resolve(module, child, is_package):
                    if target != module:
                        (inner.append((target, child.lineno)) if in_function else top.add(target))
            else:
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return top, inner


GRAPH = {module: _imports(module) for module in MODULES}


def _layer(module: str) -> int:
    best = None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (index, len(prefix))
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best[0]


def test_no_import_goes_up_a_layer():
    upward = [f"{module} (layer {_layer(module)}) imports {target} (layer {_layer(target)})"
              for module, (top, inner) in GRAPH.items()
              for target in top | {t for t, _ in inner}
              if _layer(target) > _layer(module) and not module.startswith(f"{target}.")]
    assert not upward, "\n".join(upward)


def test_the_module_level_import_graph_has_no_cycle():
    cycles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(GRAPH[module][0]):
            if module.startswith(f"{target}."):
                continue  # a submodule importing its own package's __init__ is how packages work
            if state.get(target) == 1:
                cycles.append(" -> ".join(stack[stack.index(target):] + [target]))
            elif target not in state:
                walk(target)
        stack.pop()
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            walk(module)
    assert not cycles, "\n".join(cycles)


def test_imports_inside_functions_are_deliberate():
    stray = [f"{MODULES[module].relative_to(ROOT)}:{line} imports {target} inside a function"
             for module, (_, inner) in GRAPH.items() if module not in DELIBERATE
             for target, line in inner]
    assert not stray, "\n".join(stray)


def _behind_the_face(module: str, targets) -> list[str]:
    """The modules inside fuzz.isolation that ``module``, outside it, imports (not the package itself)."""
    if module == "fuzz.isolation" or module.startswith("fuzz.isolation."):
        return []
    return sorted(target for target in targets if target.startswith("fuzz.isolation."))


def test_callers_outside_isolation_use_its_face():
    """``from fuzz.isolation import Pool``, never ``fuzz.isolation.pool.pool``: the subpackages are
    free to move what they hold (the tests of fuzz.isolation itself may reach inside)."""
    reaching_in = [f"{module} imports {target}: import it from fuzz.isolation (add it to its __all__)"
                   for module, (top, inner) in GRAPH.items()
                   for target in _behind_the_face(module, top | {t for t, _ in inner})]
    assert not reaching_in, "\n".join(reaching_in)


def test_the_architecture_checks_can_fail():
    """The checks above read what they claim to: a planted cycle and an upward import are seen."""
    assert "fuzz.outcomes" in GRAPH["fuzz.runner"][0] and "reference" in GRAPH["fuzz.checks.context"][0]
    assert _layer("fuzz.grading.evaluate") > _layer("fuzz.runner") > _layer("fuzz.checks.context")
    assert _layer("fuzz.isolation.pool.pool") > _layer("fuzz.isolation.worker.proxy") > \
        _layer("fuzz.isolation.fork_server.client") > _layer("fuzz.isolation.guard.signals") > \
        _layer("fuzz.isolation.wire") > _layer("fuzz.checks.context")
    tree = ast.parse("from ...grading import evaluate\ndef f():\n    import fuzz.cli\n")
    found = [target for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
             for target in _resolve("fuzz.isolation.pool.pool", node, False)]
    assert found == ["fuzz.grading.evaluate", "fuzz.cli"]
    inside = ast.parse("from ..isolation.pool.pool import Pool\nfrom ..isolation import Pool\n")
    targets = [target for node in inside.body for target in _resolve("fuzz.grading.batch", node, False)]
    assert _behind_the_face("fuzz.grading.batch", targets) == ["fuzz.isolation.pool.pool"]
    assert _behind_the_face("fuzz.isolation.pool.pool", targets) == []


def _too_long(source: str, max_module: int, max_function: int) -> list[str]:
    """What in ``source`` is over the limits: the module's line count, each function's."""
    lines = len(source.splitlines())
    found = [f"{lines} lines"] if lines > max_module else []
    found += [f"{node.name}() has {node.end_lineno - node.lineno + 1} lines" for node in ast.walk(ast.parse(source))
              if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
              and node.end_lineno - node.lineno + 1 > max_function]
    return found


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_or_function_is_over_the_size_limits(module):
    over = _too_long(MODULES[module].read_text(), MAX_MODULE_LINES, MAX_FUNCTION_LINES)
    assert not over, f"{MODULES[module].relative_to(ROOT)}: {'; '.join(over)}: split it by responsibility"


def test_the_limits_check_can_fail():
    assert _too_long("def f():\n" + "    pass\n" * 80, 500, 80) == ["f() has 81 lines"]
    assert _too_long("x = 1\n" * 501, 500, 80) == ["501 lines"]
    assert _too_long("def f():\n" + "    pass\n" * 79, 500, 80) == []
