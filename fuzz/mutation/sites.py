"""Where to mutate: the kernels an implementation launches, its launcher, and every operator site in them.

    kernel = discover("path/to/kernel.py:lse")     # or "reference:lse"
    kernel.kernels, kernel.launcher                # the @triton.jit functions and the host functions it runs
    mutants = generate(kernel)                     # one Mutant per (operator, site)
    print(mutants[0].diff())                       # the one edit, as a unified diff

Discovery is static (nothing is imported, so a broken file is reported, not run): the TARGET's file
is parsed with libcst, and from the target function every function it names is followed, across
the files of its package for a package module (``reference:lse`` reaches ``reference/_launch.py``
and ``reference/_lse_combine.py``). Functions decorated with ``triton.jit`` (under any
``autotune``/``heuristics``) are kernels; the others reached are the launcher.

A mutant is an anchored edit of the real source (a :class:`~fuzz.mutation.patch.Patch`): the exact
span an operator rewrote, grown by whole lines until it occurs once in its file, and the same text
with the edit. libcst keeps every space and comment, so the diff is the edit and nothing else.
:func:`locate` tells the same things (function, kernel or launcher, statement, static branches)
of any span, for the catalog's patches.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from reference.errors import InvalidArgument

from ..target import parse_target, resolve_target
from .mutant import Mutant
from .operators import _ROW_LENGTH, OPERATORS, Operator, SiteContext
from .patch import PACKAGE as REFERENCE_PACKAGE
from .patch import Patch, package_dir, position, reference_sources, span

__all__ = ["Kernel", "discover", "from_patch", "generate", "locate"]


@dataclass(frozen=True)
class Kernel:
    """What an implementation is made of: its files and the functions that matter in them."""

    target: str  # the TARGET as resolved (absolute file path, or module:function)
    function: str
    kind: str  # "file": a self-contained .py file; "reference": a module of the reference package
    sources: dict[str, str]  # key (absolute path, or "reference/x.py") -> text
    paths: dict[str, str]  # key -> absolute path on disk
    kernels: tuple[str, ...]  # @triton.jit functions reached, "file key:name"
    launcher: tuple[str, ...]  # host functions reached, "file key:name"

    @property
    def digest(self) -> str:
        """Identifies the source texts (part of every cache key)."""
        digest = hashlib.sha256()
        for key in sorted(self.sources):
            digest.update(f"\0{Path(key).name}\0".encode())
            digest.update(self.sources[key].encode())
        return digest.hexdigest()


# ----------------------------------------------------------------------------------------------
# Discovery


def _display(path: Path) -> str:
    """A file's key: relative to the working directory when inside it, else absolute."""
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _is_jit(function: cst.FunctionDef) -> bool:
    for decorator in function.decorators:
        expr = decorator.decorator
        expr = expr.func if isinstance(expr, cst.Call) else expr
        name = expr.attr.value if isinstance(expr, cst.Attribute) else getattr(expr, "value", "")
        if name == "jit":
            return True
    return False


def _functions(module: cst.Module) -> Iterable[cst.FunctionDef]:
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef):
            yield statement
        elif isinstance(statement, cst.ClassDef):
            yield from (s for s in statement.body.body if isinstance(s, cst.FunctionDef))


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


def _names_used(function: cst.FunctionDef) -> set[str]:
    visitor = _Names()
    function.body.visit(visitor)
    return visitor.names


@functools.lru_cache(maxsize=64)
def _module(text: str) -> cst.Module:
    """A file's syntax tree, parsed once per text and process (libcst's trees are immutable): the
    test suite's collection builds the catalog several times in each worker, 0.9 s of parsing each."""
    return cst.parse_module(text)


def _parse(key: str, text: str, target: object) -> cst.Module:
    try:
        return _module(text)
    except cst.ParserSyntaxError as exc:
        raise InvalidArgument(f"target={target!r}: {Path(key).name}, line {exc.raw_line}: cannot parse it "
                              f"({exc.message}).") from None


def discover(target: object) -> Kernel:
    """The kernel files, the ``@triton.jit`` functions and the launcher of a TARGET.

    InvalidArgument (one line, naming the value and the fix) for a missing file, a file that does
    not parse, a function that is not defined there, or an implementation with no Triton kernel.
    """
    parsed = parse_target(target, name="target")
    if parsed.is_file:
        resolved = resolve_target(target, name="target")  # the file exists and parses
        path = resolved.rpartition(":")[0]
        key = _display(Path(path))
        sources, paths, kind = {key: Path(path).read_text()}, {key: path}, "file"
    else:
        root = parsed.location.partition(".")[0]
        if root != REFERENCE_PACKAGE:
            spec = importlib.util.find_spec(root) if root.isidentifier() else None
            hint = f" ({spec.origin})" if spec is not None and spec.origin else ""
            raise InvalidArgument(
                f"target={target!r}: a module target is supported for the {REFERENCE_PACKAGE} package only; "
                f"give the kernel's file instead{hint}: lse-fuzz mutate path/to/kernel.py:{parsed.function}.")
        sources = reference_sources()
        directory = package_dir()
        paths = {key: str(directory / Path(key).name) for key in sources}
        resolved, kind = str(parsed), "reference"
    modules = {key: _parse(key, text, target) for key, text in sources.items()}
    defined: dict[str, list[tuple[str, cst.FunctionDef]]] = {}
    methods: dict[str, set[str]] = {}  # a class -> its methods: using a class reaches them all
    for key, module in modules.items():
        for function in _functions(module):
            defined.setdefault(function.name.value, []).append((key, function))
        for statement in module.body:
            if isinstance(statement, cst.ClassDef):  # e.g. a torch.autograd.Function: Cls.apply(x)
                methods.setdefault(statement.name.value, set()).update(
                    s.name.value for s in statement.body.body if isinstance(s, cst.FunctionDef))
    if parsed.function.split(".")[-1] not in defined:
        raise InvalidArgument(f"target={target!r}: no function {parsed.function!r} is defined in "
                              f"{', '.join(Path(k).name for k in sources)}; name the launcher: FILE.py:FUNCTION.")
    reached: dict[tuple[str, str], cst.FunctionDef] = {}
    pending = [parsed.function.split(".")[-1]]
    while pending:
        name = pending.pop()
        for key, function in defined.get(name, ()):
            if (key, name) in reached:
                continue
            reached[(key, name)] = function
            used = _names_used(function)
            pending.extend(n for n in used if n in defined)
            pending.extend(m for n in used & set(methods) for m in methods[n])
    kernels = tuple(sorted(f"{k}:{n}" for (k, n), f in reached.items() if _is_jit(f)))
    launcher = tuple(sorted(f"{k}:{n}" for (k, n), f in reached.items() if not _is_jit(f)))
    if not kernels:
        raise InvalidArgument(
            f"target={target!r}: no @triton.jit function is reached from {parsed.function!r} in "
            f"{', '.join(Path(k).name for k in sources)}; lse-fuzz mutate mutates Triton kernels: point it at "
            "the launcher of one (FILE.py:FUNCTION).")
    return Kernel(target=resolved, function=parsed.function, kind=kind, sources=sources, paths=paths,
                  kernels=kernels, launcher=launcher)


# ----------------------------------------------------------------------------------------------
# Sites


def _grow_anchor(text: str, start: int, end: int) -> tuple[int, int]:
    """The span [start, end) grown to whole lines, then a line at a time, until it is unique."""
    low = text.rfind("\n", 0, start) + 1
    high = text.find("\n", end)
    high = len(text) if high < 0 else high
    while text.count(text[low:high]) > 1 and (low > 0 or high < len(text)):
        low = text.rfind("\n", 0, max(0, low - 1)) + 1 if low > 0 else 0
        nxt = text.find("\n", high + 1)
        high = len(text) if nxt < 0 or high >= len(text) else nxt
    return low, high


@functools.lru_cache(maxsize=16)
def _parsed(text: str) -> tuple[MetadataWrapper, object, object]:
    """A file's syntax tree, its nodes' positions and parents: parsed once per text and process.
    Locating the catalog's 25 mutants of one file had parsed it 25 times (0.3 s each), and the
    test suite's collection builds the catalog several times. Read only: a walk replaces nodes
    in copies (``deep_replace``), never in the tree."""
    wrapper = MetadataWrapper(_module(text), unsafe_skip_copy=True)
    return wrapper, wrapper.resolve(PositionProvider), wrapper.resolve(ParentNodeProvider)


class _Walker:
    def __init__(self, key: str, text: str, operators: list[Operator]) -> None:
        self.key, self.text, self.operators = key, text, operators
        self.wrapper, self.positions, self.parents = _parsed(text)
        self.found: list[Mutant] = []
        self.sources: dict[str, str] = {}

    def functions(self) -> dict[str, cst.FunctionDef]:
        return {f.name.value: f for f in _functions(self.wrapper.module)}

    def enter(self, function: cst.FunctionDef) -> None:
        self._constexprs = {p.name.value for p in function.params.params if p.annotation is not None
                            and self.wrapper.module.code_for_node(p.annotation.annotation).endswith("constexpr")}

    def walk_function(self, function: cst.FunctionDef, kernel: bool) -> None:
        params = [p.name.value for p in function.params.params]
        self.enter(function)
        length = next((name for name in _ROW_LENGTH if name in params), None)
        ctx = SiteContext(kernel=kernel, module=self.wrapper.module, row_length=length)
        self._walk(function.body, ctx, function.name.value)

    def _walk(self, node: cst.CSTNode, ctx: SiteContext, function: str) -> None:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            return  # nested definitions are not what the function runs
        for operator in self.operators:
            for new in operator.mutate(node, ctx):
                self._emit(operator, node, new, ctx, function)
        for child in node.children:
            role, in_mask = "", ctx.in_mask
            if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "mask":
                in_mask = in_mask or child is node.value
            elif isinstance(node, cst.Assign) and child is node.value:
                in_mask = in_mask or any("mask" in self.wrapper.module.code_for_node(t.target).lower()
                                         for t in node.targets)
            if isinstance(node, cst.For) and child is node.iter:
                role = "loop_iter"
            elif isinstance(node, (cst.If, cst.While)) and child is node.test:
                role = "if_test"
            self._walk(child, SiteContext(kernel=ctx.kernel, module=ctx.module, in_mask=in_mask,
                                          row_length=ctx.row_length, role=role), function)

    def _statement_lines(self, node: cst.CSTNode, end_line: int) -> tuple[int, int]:
        current = node
        while current is not None and not isinstance(current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            current = self.parents.get(current)
        if current is None:
            return (self.positions[node].start.line, end_line)
        span = self.positions[current]
        if isinstance(current, cst.SimpleStatementLine):
            return (span.start.line, span.end.line)
        return (span.start.line, end_line)

    def _guards(self, node: cst.CSTNode) -> tuple[tuple[str, bool], ...]:
        """The constexpr branches ``node`` lies in (see :attr:`Mutant.guards`), outermost first."""
        guards = []
        child, parent = node, self.parents.get(node)
        while parent is not None and not isinstance(parent, cst.FunctionDef):
            if isinstance(parent, cst.If) and child is not parent.test:
                test, want = parent.test, True
                if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                    test, want = test.expression, False
                if isinstance(test, cst.Name) and test.value in self._constexprs:
                    guards.append((test.value, want if child is parent.body else not want))
            child, parent = parent, self.parents.get(parent)
        return tuple(reversed(guards))

    def _emit(self, operator: Operator, node: cst.CSTNode, new: cst.CSTNode, ctx: SiteContext, function: str) -> None:
        # The whole file rendered with the node replaced (libcst keeps indentation, comments and
        # spacing), then the smallest span that differs, widened to whole words: the edit itself.
        mutated = self.wrapper.module.deep_replace(node, new).code
        if mutated == self.text:
            return
        start, end_old, end_new = _changed_span(self.text, mutated)
        replacement = mutated[start:end_new]
        low, high = _grow_anchor(self.text, start, end_old)
        anchor = self.text[low:high]
        patch = Patch(self.key, anchor, anchor[:start - low] + replacement + anchor[end_old - low:])
        line, column = position(self.text, start)
        self.found.append(Mutant(
            name=f"{operator.name}@{Path(self.key).name}:{line}:{column}", operator=operator.name,
            pitfall=operator.pitfall, documented=operator.documented, patch=patch, sources=self.sources,
            start=start, end=end_old, replacement=replacement, function=function, kernel=ctx.kernel,
            statement=self._statement_lines(node, self.positions[node].end.line),
            guards=self._guards(node) if ctx.kernel else ()))


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _changed_span(old: str, new: str) -> tuple[int, int, int]:
    """(start, end in old, end in new) of the smallest differing span, widened to whole words."""
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    start, end_old, end_new = prefix, len(old) - suffix, len(new) - suffix
    while start > 0 and _word(old[start - 1]) and (
            (start < end_old and _word(old[start])) or (start < end_new and _word(new[start]))):
        start -= 1
    while end_old < len(old) and _word(old[end_old]) and (
            (end_old > start and _word(old[end_old - 1])) or (end_new > start and _word(new[end_new - 1]))):
        end_old += 1
        end_new += 1
    if start == end_old:  # a pure insertion: show it with the word after it, or the token before it
        if end_old < len(old) and _word(old[end_old]):
            while end_old < len(old) and _word(old[end_old]):
                end_old += 1
                end_new += 1
        else:
            while start > 0 and not old[start - 1].isspace():
                start -= 1
    return start, end_old, end_new


def locate(kernel: Kernel, path: str, start: int, end: int) -> tuple[str, bool, tuple[int, int], tuple]:
    """(function, whether it is a kernel, statement lines, static branches) of the span [start, end)
    of file ``path``: what :func:`generate` knows of an operator's site, for any edit."""
    text = kernel.sources[path]
    walker = _Walker(path, text, [])
    (line, column), (end_line, end_column) = position(text, start), position(text, end)
    last_line = position(text, max(start, end - 1))[0]
    low, high = (line, column - 1), (end_line, end_column - 1)  # libcst's columns are 0-based
    inside = [(node, r) for node, r in walker.positions.items()
              if (r.start.line, r.start.column) <= low and (r.end.line, r.end.column) >= high]
    # The innermost node holding the span: it starts last and, of those, ends first.
    node = max(inside, key=lambda item: (item[1].start.line, item[1].start.column,
                                         -item[1].end.line, -item[1].end.column))[0]
    function = node
    while function is not None and not isinstance(function, cst.FunctionDef):
        function = walker.parents.get(function)
    if function is None:  # module level: it runs on import, never under the coverage trace
        return "", False, (line, last_line), ()
    walker.enter(function)
    in_kernel = _is_jit(function)
    return (function.name.value, in_kernel, walker._statement_lines(node, last_line),
            walker._guards(node) if in_kernel else ())


def from_patch(kernel: Kernel, name: str, patch: Patch, *, pitfall: str, documented: str, **fields) -> Mutant:
    """The mutant that is ``patch`` of ``kernel`` (the catalog's, a test's), located like an operator's
    (:func:`locate`); ``fields``: the rest of :class:`Mutant`'s (``expected_check``, ``target``, ...)."""
    _, start = span(patch, kernel.sources, name)
    end = start + len(patch.anchor)
    function, in_kernel, statement, guards = locate(kernel, patch.path, start, end)
    return Mutant(name=name, operator=fields.pop("operator", name), pitfall=pitfall, documented=documented,
                  patch=patch, sources=kernel.sources, start=start, end=end, replacement=patch.replacement,
                  function=function, kernel=in_kernel, statement=statement, guards=guards, **fields)


def generate(kernel: Kernel, operators: Iterable[str] | None = None) -> list[Mutant]:
    """Every mutant of ``kernel``: each operator (default: all) at each site it applies to, in
    file and source order; the same edit made by two operators is kept once (the first)."""
    chosen = list(OPERATORS) if operators is None else list(operators)
    unknown = [name for name in chosen if name not in OPERATORS]
    if unknown:
        raise InvalidArgument(f"operators={','.join(unknown)!r}: no such operator; choose from "
                              f"{', '.join(OPERATORS)}.")
    selected = [OPERATORS[name] for name in chosen]
    by_file: dict[str, list[tuple[str, bool]]] = {}
    for entry, is_kernel in [(k, True) for k in kernel.kernels] + [(h, False) for h in kernel.launcher]:
        key, _, name = entry.rpartition(":")
        by_file.setdefault(key, []).append((name, is_kernel))
    mutants: list[Mutant] = []
    for key in kernel.sources:
        if key not in by_file:
            continue
        walker = _Walker(key, kernel.sources[key], selected)
        walker.sources = kernel.sources
        functions = walker.functions()
        for name, is_kernel in by_file[key]:
            walker.walk_function(functions[name], is_kernel)
        mutants.extend(walker.found)
    seen: set[tuple[str, int, int, str]] = set()
    unique = []
    for mutant in sorted(mutants, key=lambda m: (list(kernel.sources).index(m.file), m.start, m.end)):
        edit = (mutant.file, mutant.start, mutant.end, mutant.replacement)
        if edit not in seen:
            seen.add(edit)
            unique.append(mutant)
    return unique
