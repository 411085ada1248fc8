"""Static findings about a candidate file: what its source does besides launching a kernel.

A candidate can pass every check without doing the work in a Triton kernel (it calls
``torch.logsumexp``), or do things a kernel has no business doing (reading files, opening
sockets, importing the harness that grades it). Reading the source with :mod:`ast` finds these
without running anything. Findings are flags on a verdict, never a verdict themselves: a flag
is a reason for a person to look, not proof.

Severities: ``cheat`` (the answer does not come from the candidate's own kernel, or the
candidate reaches for the grader), ``risk`` (side effects outside computing a result), ``info``.
"""

from __future__ import annotations

import ast
import enum
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FLAGS", "Finding", "Severity", "scan", "scan_source"]


class Severity(str, enum.Enum):
    CHEAT = "cheat"
    RISK = "risk"
    INFO = "info"


FLAGS: dict[str, tuple[Severity, str]] = {
    "no_triton_kernel": (Severity.CHEAT, "defines no @triton.jit kernel: no Triton kernel does the work"),
    "kernel_not_launched": (Severity.CHEAT, "defines @triton.jit kernels but launches none (no kernel[grid](...)): "
                                            "a decoy, the work is done elsewhere"),
    "dynamic_attribute": (Severity.CHEAT, "looks up a library's attribute by a name built at run time "
                                          "(hides what it calls from this scan)"),
    "library_lse": (Severity.CHEAT, "calls a library log-sum-exp instead of computing it in a kernel"),
    "library_softmax": (Severity.CHEAT, "calls a library (log-)softmax, from which the LSE follows without a kernel"),
    "host_math": (Severity.CHEAT, "computes exp/log with PyTorch or NumPy outside the kernel"),
    "harness_import": (Severity.CHEAT, "imports the grader or the reference implementation"),
    "monkeypatch": (Severity.CHEAT, "assigns attributes of imported modules"),
    "introspection": (Severity.CHEAT, "inspects frames or interpreter state (can detect the grader)"),
    "file_access": (Severity.RISK, "reads or writes files"),
    "network": (Severity.RISK, "uses the network"),
    "subprocess": (Severity.RISK, "starts processes"),
    "native_code": (Severity.RISK, "loads native code through ctypes or cffi"),
    "process_exit": (Severity.RISK, "exits or signals the process"),
    "dynamic_code": (Severity.RISK, "runs code built at run time (eval, exec, __import__)"),
    "environment": (Severity.INFO, "reads environment variables (can behave differently under test)"),
    "memoization": (Severity.INFO, "may memoize results (a cache keyed by shape, pointer or object)"),
    "threads": (Severity.INFO, "uses threads or async code"),
}
"""Flag -> (severity, what it means). Stable names: reports and tests use them."""

_KERNEL_DECORATORS = {"triton.jit", "triton.autotune", "triton.heuristics", "triton.language.jit"}
_LIBRARY_LSE = {
    "torch.logsumexp", "torch.special.logsumexp", "torch.logcumsumexp", "torch.logaddexp", "torch.logaddexp2",
    "scipy.special.logsumexp", "scipy.misc.logsumexp", "numpy.logaddexp", "numpy.logaddexp.reduce",
    "jax.nn.logsumexp", "jax.scipy.special.logsumexp",
}
_LIBRARY_LSE_METHODS = {"logsumexp", "logcumsumexp", "logaddexp"}
_LIBRARY_SOFTMAX = {
    "torch.softmax", "torch.log_softmax", "torch.special.softmax", "torch.special.log_softmax",
    "torch.nn.functional.softmax", "torch.nn.functional.log_softmax", "torch.nn.Softmax",
    "torch.nn.LogSoftmax", "scipy.special.softmax", "scipy.special.log_softmax",
}
_LIBRARY_SOFTMAX_METHODS = {"softmax", "log_softmax"}
_HOST_MATH_FUNCTIONS = {"exp", "exp2", "expm1", "log", "log2", "log1p", "exp_", "log_"}
_HOST_MATH_MODULES = ("torch", "torch.special", "numpy")
_HARNESS = ("fuzz", "reference", "hypothesis", "pytest", "mutants", "bench")
_NETWORK = ("socket", "ssl", "urllib", "urllib3", "http", "requests", "httpx", "aiohttp", "ftplib", "smtplib",
            "telnetlib", "paramiko", "websocket", "websockets", "grpc", "xmlrpc")
_SUBPROCESS_MODULES = ("subprocess", "multiprocessing", "pty")
_SUBPROCESS_CALLS = {"os.system", "os.popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.posix_spawnp"}
_SUBPROCESS_PREFIXES = ("os.spawn", "os.exec")
_NATIVE = ("ctypes", "cffi")
_EXIT_CALLS = {"sys.exit", "os._exit", "exit", "quit", "os.kill", "os.killpg", "os.abort"}
_DYNAMIC_CALLS = {"eval", "exec", "compile", "__import__", "importlib.import_module", "importlib.reload",
                  "importlib.util.spec_from_file_location"}
_INTROSPECTION_MODULES = ("inspect", "gc")
_INTROSPECTION_CALLS = {"sys._getframe", "sys.settrace", "sys.setprofile", "globals", "builtins.globals",
                        "os.getcwd", "os.getppid", "os.getpgid", "os.getsid"}
# Where it runs from, who started it, its command line: ways to tell a grading run from a real one.
_INTROSPECTION_NAMES = {"sys.modules", "__builtins__", "sys._getframe", "sys.argv", "sys.orig_argv"}
# The dispatch mode stack, where the worker's operator record lives (fuzz.isolation.worker.op_record):
# code that pops or disables modes hides what it runs from it.
_DISPATCH_STACK = ("torch.utils._python_dispatch", "torch._C._DisableTorchDispatch",
                   "torch._C._pop_torch_dispatch_stack", "torch._C._len_torch_dispatch_stack",
                   "torch._C._get_dispatch_stack_at", "torch._C._set_dispatch_mode", "torch._C._unset_dispatch_mode")
_LIBRARY_ROOTS = ("torch", "numpy", "scipy", "jax")
_FILE_CALLS = {
    "open", "io.open", "os.open", "os.remove", "os.unlink", "os.rename", "os.replace", "os.listdir",
    "os.scandir", "os.walk", "os.makedirs", "os.mkdir", "os.rmdir", "torch.load", "torch.save", "numpy.load",
    "numpy.save", "numpy.savez", "numpy.fromfile", "numpy.loadtxt", "numpy.savetxt", "pickle.load",
    "pickle.dump", "json.load", "json.dump",
}
_FILE_MODULES = ("shutil", "glob", "tempfile", "pathlib")
_FILE_METHODS = {"read_text", "write_text", "read_bytes", "write_bytes"}
_ENV_NAMES = {"os.environ", "os.getenv", "os.putenv", "os.environb"}
_MEMO_DECORATORS = {"functools.lru_cache", "functools.cache", "functools.cached_property"}
_THREAD_MODULES = ("threading", "concurrent", "asyncio", "_thread")


@dataclass(frozen=True)
class Finding:
    flag: str
    severity: Severity
    message: str
    lines: tuple[int, ...]

    def describe(self) -> str:
        where = ", ".join(map(str, self.lines[:5])) + (", ..." if len(self.lines) > 5 else "")
        return f"{self.flag} ({self.severity.value}): {self.message}" + (f" [line {where}]" if where else "")

    def to_dict(self) -> dict[str, object]:
        return {"flag": self.flag, "severity": self.severity.value, "message": self.message, "lines": list(self.lines)}


def scan(path: Path | str) -> list[Finding]:
    """Findings for the file at ``path`` (SyntaxError if it does not parse)."""
    path = Path(path)
    return scan_source(path.read_bytes(), str(path))


def scan_source(source: str | bytes, filename: str = "<candidate>") -> list[Finding]:
    tree = ast.parse(source, filename=filename)
    scanner = _Scanner()
    scanner.visit(tree)
    return scanner.findings()


def _mentions_identity(node: ast.AST) -> bool:
    """Whether an expression uses a tensor's shape, pointer or object id (a cache key)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr in ("shape", "data_ptr"):
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "id":
            return True
    return False


def _under(name: str, modules: tuple[str, ...]) -> bool:
    return any(name == m or name.startswith(m + ".") for m in modules)


class _Scanner(ast.NodeVisitor):
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}  # local name -> dotted module or object it stands for
        self.hits: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
        self.kernels = 0
        self.in_kernel = 0
        self.function_depth = 0
        self.module_globals: set[str] = set()
        # `import reference` only to switch on Triton's interpreter is fine; using anything else
        # from it (reference.lse is the answer key) is not.
        self.reference_uses: dict[str, set[int]] = defaultdict(set)
        self.identity_names: set[str] = set()  # locals computed from .shape, .data_ptr() or id()
        self.launches = 0  # calls of the form something[grid](...): a kernel launch
        self.kernel_names: set[str] = set()
        self.names_used: set[str] = set()  # names read outside kernels (a kernel passed to a launcher)

    # -- bookkeeping ---------------------------------------------------------------------------

    def hit(self, flag: str, what: str, node: ast.AST) -> None:
        self.hits[flag][what].add(getattr(node, "lineno", 0))

    def findings(self) -> list[Finding]:
        if not self.kernels:
            self.hits["no_triton_kernel"][""].add(0)
        elif not self.launches and not self.kernel_names & self.names_used:
            # No launch here, and no kernel handed to code elsewhere (a launcher in another module).
            self.hits["kernel_not_launched"][""].add(0)
        if self.reference_uses:
            for what, lines in self.reference_uses.items():
                self.hits["harness_import"][what] |= lines
        found = []
        for flag in FLAGS:
            if flag not in self.hits:
                continue
            severity, summary = FLAGS[flag]
            whats = self.hits[flag]
            lines = sorted({line for ls in whats.values() for line in ls if line})
            detail = ", ".join(sorted(w for w in whats if w))
            found.append(Finding(flag, severity, f"{summary} ({detail})" if detail else summary, tuple(lines)))
        return found

    def resolve(self, node: ast.AST) -> str | None:
        """Dotted name of an expression like ``F.log_softmax`` (aliases expanded); methods of
        other objects come back as ``.name``."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if base is None or base.startswith("."):
                return "." + node.attr
            if isinstance(node.value, ast.Name) and node.value.id not in self.aliases and \
                    node.value.id not in ("torch", "numpy", "np", "triton", "os", "sys", "scipy", "builtins"):
                return "." + node.attr  # an attribute of a local object: a method call
            return f"{base}.{node.attr}"
        if isinstance(node, ast.Call):
            inner = self.resolve(node.func)
            return None if inner is None else "." + inner.rpartition(".")[2] + "()"
        return None

    # -- imports -------------------------------------------------------------------------------

    def _imported(self, module: str, node: ast.AST) -> None:
        if _under(module, ("reference",)):
            if module not in ("reference", "reference._device", "reference._device.ensure_interpreter"):
                self.hit("harness_import", f"import {module}", node)
        elif _under(module, _HARNESS):
            self.hit("harness_import", f"import {module}", node)
        if _under(module, _NETWORK):
            self.hit("network", f"import {module}", node)
        if _under(module, _SUBPROCESS_MODULES):
            self.hit("subprocess", f"import {module}", node)
        if _under(module, _NATIVE):
            self.hit("native_code", f"import {module}", node)
        if _under(module, _INTROSPECTION_MODULES) or _under(module, _DISPATCH_STACK):
            self.hit("introspection", f"import {module}", node)
        if _under(module, _THREAD_MODULES):
            self.hit("threads", f"import {module}", node)
        if _under(module, _FILE_MODULES):
            self.hit("file_access", f"import {module}", node)
        if module == "signal":
            self.hit("process_exit", "import signal", node)
        if module == "importlib" or module.startswith("importlib."):
            self.hit("dynamic_code", f"import {module}", node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                root = alias.name.partition(".")[0]
                self.aliases[root] = root
            self._imported(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        for alias in node.names:
            full = f"{module}.{alias.name}" if module else alias.name
            self.aliases[alias.asname or alias.name] = full
            self._imported(full, node)

    # -- definitions ---------------------------------------------------------------------------

    def _decorator_names(self, node) -> list[str]:
        names = []
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            name = self.resolve(target)
            if name:
                names.append(name)
        return names

    def visit_FunctionDef(self, node) -> None:
        decorators = self._decorator_names(node)
        is_kernel = any(name in _KERNEL_DECORATORS for name in decorators)
        for name in decorators:
            if name in _MEMO_DECORATORS or name in ("lru_cache", "cache"):
                self.hit("memoization", f"@{name} on {node.name}", node)
        if self.function_depth == 0:
            self.module_globals.discard(node.name)
        self.kernels += is_kernel
        if is_kernel:
            self.kernel_names.add(node.name)
        self.in_kernel += is_kernel
        self.function_depth += 1
        self.generic_visit(node)
        self.function_depth -= 1
        self.in_kernel -= is_kernel

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Assign(self, node: ast.Assign) -> None:
        if self.function_depth and _mentions_identity(node.value):
            self.identity_names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        for target in node.targets:
            self._assigned(target, node)
        if self.function_depth == 0:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.module_globals.add(target.id)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._assigned(node.target, node)
        self.generic_visit(node)

    def _assigned(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, ast.Attribute):
            base = self.resolve(target.value)
            if base and not base.startswith(".") and isinstance(target.value, (ast.Name, ast.Attribute)):
                root = base.partition(".")[0]
                if root in ("torch", "numpy", "triton", "scipy", "math", "builtins", "sys", "os", "fuzz", "reference"):
                    self.hit("monkeypatch", f"{base}.{target.attr} = ...", node)
        elif isinstance(target, ast.Subscript) and self.function_depth and isinstance(target.value, ast.Name) \
                and target.value.id in self.module_globals:
            key = target.slice
            if _mentions_identity(key) or (isinstance(key, ast.Name) and key.id in self.identity_names):
                self.hit("memoization", f"{target.value.id}[...] keyed by shape, pointer or id", node)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._assigned(element, node)

    # -- uses ----------------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Subscript):
            self.launches += 1
        name = self.resolve(node.func)
        if name:
            self._called(name, node)
        self.generic_visit(node)

    def _library_call(self, name: str, node: ast.Call) -> None:
        """A library function reached by a path the tables do not list (``torch.ops.aten.logsumexp``,
        ``torch.ops.aten.logsumexp.default``): named by any part of the path."""
        parts = name.split(".")
        if parts[0] not in _LIBRARY_ROOTS or name in _LIBRARY_LSE or name in _LIBRARY_SOFTMAX:
            return
        if set(parts[1:]) & _LIBRARY_LSE_METHODS:
            self.hit("library_lse", name, node)
        elif set(parts[1:]) & _LIBRARY_SOFTMAX_METHODS:
            self.hit("library_softmax", name, node)

    def _getattr(self, node: ast.Call) -> None:
        """``getattr(module, name)``: a constant name is a use of that attribute; a computed one hides it."""
        base = self.resolve(node.args[0]) if node.args else None
        if not base or base.startswith("."):
            return
        attribute = node.args[1] if len(node.args) > 1 else None
        literal = isinstance(attribute, ast.Constant) and isinstance(attribute.value, str)
        if _under(base, ("reference",)):
            what = f"getattr({base}, {attribute.value!r})" if literal else f"getattr({base}, ...)"
            self.reference_uses[f"uses {what}"].add(node.lineno)
        elif _under(base, ("fuzz", "mutants")):
            self.hit("harness_import", f"getattr({base}, ...)", node)
        elif base.partition(".")[0] in _LIBRARY_ROOTS:
            if literal:
                self._called(f"{base}.{attribute.value}", node)
            else:
                self.hit("dynamic_attribute", f"getattr({base}, ...)", node)

    def _called(self, name: str, node: ast.Call) -> None:
        method = name.startswith(".")
        short = name.rpartition(".")[2]
        if name in _KERNEL_DECORATORS:  # kernel = triton.jit(fn)
            self.kernels += 1
        if self.in_kernel:
            return  # device code: tl.exp and friends are the point
        if name == "getattr":
            self._getattr(node)
        if not method:
            self._library_call(name, node)
        if name in _LIBRARY_LSE or (method and short in _LIBRARY_LSE_METHODS):
            self.hit("library_lse", name.lstrip(".") if not method else f"Tensor{name}", node)
        if name in _LIBRARY_SOFTMAX or (method and short in _LIBRARY_SOFTMAX_METHODS):
            self.hit("library_softmax", name if not method else f"Tensor{name}", node)
        if short in _HOST_MATH_FUNCTIONS and (method or any(name == f"{m}.{short}" for m in _HOST_MATH_MODULES)):
            self.hit("host_math", name if not method else f"Tensor{name}", node)
        if name in _FILE_CALLS or _under(name, _FILE_MODULES) or (method and short in _FILE_METHODS):
            self.hit("file_access", name.lstrip("."), node)
        if name in _SUBPROCESS_CALLS or name.startswith(_SUBPROCESS_PREFIXES):
            self.hit("subprocess", name, node)
        if name in _EXIT_CALLS:
            self.hit("process_exit", name, node)
        if name in _DYNAMIC_CALLS:
            self.hit("dynamic_code", name, node)
        if name in _INTROSPECTION_CALLS:
            self.hit("introspection", name, node)
        if name == "setattr" and node.args:
            base = self.resolve(node.args[0])
            if base and not base.startswith(".") and base.partition(".")[0] in ("torch", "numpy", "triton", "scipy"):
                self.hit("monkeypatch", f"setattr({base}, ...)", node)
        if name in ("os.getenv", "os.putenv"):
            self.hit("environment", name, node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = self.resolve(node)
        if name and _under(name, ("reference",)) and isinstance(node.value, ast.Name) \
                and name not in ("reference._device", "reference.ensure_interpreter"):
            self.reference_uses[f"uses {name}"].add(node.lineno)
        if name in _ENV_NAMES and name not in ("os.getenv", "os.putenv"):
            self.hit("environment", name, node)
        if name in _INTROSPECTION_NAMES or name in _DISPATCH_STACK:
            self.hit("introspection", name, node)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if not self.in_kernel and isinstance(node.ctx, ast.Load):
            self.names_used.add(node.id)
        if node.id == "__builtins__":
            self.hit("introspection", "__builtins__", node)
