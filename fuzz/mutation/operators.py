"""Kernel-aware mutation operators: each one plants a bug that LSE kernels really ship with.

Generic mutation tools flip ``+`` to ``-`` or ``<`` to ``<=`` anywhere; these know what a Triton
LSE kernel is made of (masks and their fill values, the row max, exp and log, the accumulator's
dtype, index widths, strides, tile loops, the launch grid, the NaN/inf guards) and change one of
those the way a person gets it wrong. Each operator is a function ``(node, site) -> [new node,
...]`` over libcst nodes; :mod:`.sites` walks the code the implementation runs and calls every
operator on every node, so an operator applies wherever its pattern occurs, one site per mutant.

``site.kernel`` says whether the node lies in a ``@triton.jit`` function (device code) or in the
launcher (host code): some operators act in one of them only (a mask lives in the kernel, the
grid in the launcher). Every operator has a test on a small kernel (``tests/fuzz/mutation/``) that
shows its diff and, where the bug is observable, that the fuzzer kills it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

__all__ = ["OPERATORS", "Operator", "SiteContext"]


@dataclass(frozen=True)
class SiteContext:
    """Where a node lies: in a kernel (``@triton.jit``) or in host code, and the code around it."""

    kernel: bool
    module: cst.Module  # to render a node's code
    in_mask: bool = False  # inside a tl.load/tl.store ``mask=`` argument or a ``*mask* = ...`` value
    row_length: str | None = None  # the kernel's parameter holding the row length (N, n_cols, ...)
    role: str = ""  # "loop_iter": the iterable of a for loop; "if_test": the test of an if or while

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)


@dataclass(frozen=True)
class Operator:
    """One kind of realistic bug: its name, the pitfall it models, and where that is documented."""

    name: str
    pitfall: str
    documented: str
    mutate: Callable[[cst.CSTNode, SiteContext], list[cst.CSTNode]]


# ----------------------------------------------------------------------------------------------
# Helpers on nodes


def _dotted(node: cst.CSTNode) -> str:
    """``tl.exp`` for Attribute(Name('tl'), 'exp'); '' for anything that is not a dotted name."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr.value}" if base else ""
    return ""


def _call_name(node: cst.CSTNode) -> str:
    return _dotted(node.func) if isinstance(node, cst.Call) else ""


_TL = ("tl.", "triton.language.", "tl.math.")


def _is_tl(name: str, *functions: str) -> bool:
    return any(name == prefix + f for prefix in _TL for f in functions)


def _name_leaf(name: str) -> str:
    return name.rpartition(".")[2]


def _is_neg_inf(node: cst.CSTNode, ctx: SiteContext) -> bool:
    code = re.sub(r"\s+", "", ctx.code(node))
    return code in {'-float("inf")', "-float('inf')", 'float("-inf")', "float('-inf')", "-math.inf", "-np.inf",
                    "-torch.inf", "-numpy.inf", "float(\"-Infinity\")"}


def _strip(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.with_changes(lpar=[], rpar=[]) if getattr(node, "lpar", None) else node


def _parenthesized(node: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float)) or getattr(
            node, "lpar", None):
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _replace_arg_value(call: cst.Call, index: int, value: cst.BaseExpression) -> cst.Call:
    args = list(call.args)
    args[index] = args[index].with_changes(value=value)
    return call.with_changes(args=args)


# ----------------------------------------------------------------------------------------------
# The operators


_FLIP = {cst.LessThan: cst.LessThanEqual, cst.LessThanEqual: cst.LessThan,
         cst.GreaterThan: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.GreaterThan}


def _mask_off_by_one(node, ctx):
    """``cols < N`` -> ``cols <= N`` (and the other three orders) in a load/store mask."""
    if not (ctx.kernel and ctx.in_mask and isinstance(node, cst.Comparison) and len(node.comparisons) == 1):
        return []
    target = node.comparisons[0]
    flipped = _FLIP.get(type(target.operator))
    if flipped is None:
        return []
    op = target.operator
    new_op = flipped(whitespace_before=op.whitespace_before, whitespace_after=op.whitespace_after)
    return [node.with_changes(comparisons=[target.with_changes(operator=new_op)])]


def _fill_value(node, ctx):
    """``tl.load(..., other=-float("inf"))`` -> ``other=0.0``."""
    if not (ctx.kernel and isinstance(node, cst.Call) and _is_tl(_call_name(node), "load")):
        return []
    for i, arg in enumerate(node.args):
        if arg.keyword is not None and arg.keyword.value == "other" and _is_neg_inf(arg.value, ctx):
            return [_replace_arg_value(node, i, cst.Float("0.0"))]
    return []


def _exp_argument_subtractions(expr: cst.BaseExpression) -> list[cst.BinaryOperation]:
    """The ``a - b`` terms of an exp argument, through parentheses, products and scalings."""
    found = []
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, cst.Subtract):
            found.append(expr)
        elif isinstance(expr.operator, (cst.Multiply, cst.Divide)):
            found += _exp_argument_subtractions(expr.left) + _exp_argument_subtractions(expr.right)
    return found


def _no_max_shift(node, ctx):
    """``tl.exp(x - m)`` -> ``tl.exp(x)``: exp of the raw values, which overflows past ~88.7."""
    if not (ctx.kernel and isinstance(node, cst.Call) and _is_tl(_call_name(node), "exp", "exp2") and node.args):
        return []
    mutants = []
    for sub in _exp_argument_subtractions(node.args[0].value):
        left = sub.left.with_changes(lpar=sub.lpar, rpar=sub.rpar) if sub.lpar else sub.left
        mutants.append(node.deep_replace(sub, left))
    return mutants


def _is_log_term(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Call):
        return _is_tl(_call_name(expr), "log", "log2")
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        return _is_log_term(expr.left) or _is_log_term(expr.right)
    return False


def _max_not_added(node, ctx):
    """``m + tl.log(s)`` -> ``tl.log(s)``: log(sum(exp(x - m))), off by exactly m."""
    if not (ctx.kernel and isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)):
        return []
    if _is_log_term(node.right) and not _is_log_term(node.left):
        return [_strip(node.right).with_changes(lpar=node.lpar, rpar=node.rpar) if node.lpar else _strip(node.right)]
    if _is_log_term(node.left) and not _is_log_term(node.right):
        return [_strip(node.left).with_changes(lpar=node.lpar, rpar=node.rpar) if node.lpar else _strip(node.left)]
    return []


_REDUCTION_SWAPS = {"max": "min", "min": "max", "sum": "max"}


def _reduction_swap(node, ctx):
    """``tl.max`` -> ``tl.min``, ``tl.sum`` -> ``tl.max``, ``tl.min`` -> ``tl.max``."""
    if not (ctx.kernel and isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return []
    name = _call_name(node)
    leaf = _name_leaf(name)
    if leaf not in _REDUCTION_SWAPS or not _is_tl(name, leaf):
        return []
    return [node.with_changes(func=node.func.with_changes(attr=cst.Name(_REDUCTION_SWAPS[leaf])))]


_LOG2E = re.compile(r"(?i)log2_?e|1\.44269")
_LN2 = re.compile(r"(?i)\bln_?2\b|log_?2_?to_?e|0\.69314|rcp_log2e|\blog_e_?2\b")


def _drop_scale(expr: cst.BaseExpression, pattern: re.Pattern, ctx: SiteContext) -> cst.BaseExpression | None:
    """``a * SCALE`` (or ``SCALE * a``) without the scale, for a SCALE that matches ``pattern``."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        if pattern.search(ctx.code(expr.right)) and not pattern.search(ctx.code(expr.left)):
            return _strip(expr.left) if not expr.lpar else expr.left
        if pattern.search(ctx.code(expr.left)) and not pattern.search(ctx.code(expr.right)):
            return _strip(expr.right) if not expr.lpar else expr.right
    return None


def _exp_as_exp2(node, ctx):
    """``tl.exp(t)`` -> ``tl.exp2(t)``, and ``tl.exp2(t * LOG2E)`` -> ``tl.exp2(t)``: the scale lost."""
    if not (ctx.kernel and isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.args):
        return []
    name = _call_name(node)
    if _is_tl(name, "exp"):
        return [node.with_changes(func=node.func.with_changes(attr=cst.Name("exp2")))]
    if _is_tl(name, "exp2"):
        unscaled = _drop_scale(node.args[0].value, _LOG2E, ctx)
        if unscaled is not None:
            return [_replace_arg_value(node, 0, unscaled)]
    return []


def _log_as_log2(node, ctx):
    """``tl.log(s)`` -> ``tl.log2(s)``, and ``tl.log2(s) * LN2`` -> ``tl.log2(s)``."""
    if not ctx.kernel:
        return []
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and _is_tl(_call_name(node), "log"):
        return [node.with_changes(func=node.func.with_changes(attr=cst.Name("log2")))]
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        for side, other in ((node.left, node.right), (node.right, node.left)):
            if isinstance(side, cst.Call) and _is_tl(_call_name(side), "log2") and _LN2.search(ctx.code(other)):
                return [side.with_changes(lpar=node.lpar, rpar=node.rpar) if node.lpar else side]
    return []


_HALF = ("float16", "bfloat16", "fp16", "bf16", "int", "uint")


def _dtype_argument(node: cst.Call) -> int | None:
    """The index of the dtype argument of ``tl.zeros``/``tl.full``/``x.to(...)``, if any."""
    name = _call_name(node)
    positional = {"zeros": 1, "full": 2}
    for i, arg in enumerate(node.args):
        if arg.keyword is not None and arg.keyword.value == "dtype":
            return i
    if _is_tl(name, "zeros", "full"):
        index = positional[_name_leaf(name)]
        return index if len(node.args) > index and node.args[index].keyword is None else None
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "to" and node.args:
        return 0 if node.args[0].keyword is None else None
    return None


def _accumulator_half(node, ctx):
    """``tl.zeros(.., tl.float32)`` / ``x.to(tl.float32)`` -> ``tl.float16``: the sum kept in half."""
    if not (ctx.kernel and isinstance(node, cst.Call)):
        return []
    index = _dtype_argument(node)
    if index is None:
        return []
    dtype = ctx.code(node.args[index].value)
    if any(word in dtype for word in _HALF):
        return []
    half = cst.Attribute(value=cst.Name("tl"), attr=cst.Name("float16"))
    return [_replace_arg_value(node, index, half)]


def _int64_removed(node, ctx):
    """``i.to(tl.int64)`` -> ``i`` (kernel); ``int64=<test>`` -> ``int64=False`` (launcher)."""
    if ctx.kernel and isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        if node.func.attr.value == "to" and node.args and "int64" in ctx.code(node.args[0].value):
            return [node.func.value]
        return []
    if not ctx.kernel and isinstance(node, cst.Call):
        for i, arg in enumerate(node.args):
            if (arg.keyword is not None and arg.keyword.value.lower() in ("int64", "use_int64", "index_int64")
                    and not isinstance(arg.value, cst.Name)):
                return [_replace_arg_value(node, i, cst.Name("False"))]
    return []


_ROW_STRIDE = re.compile(r"(?i)^(stride_?(row|r|m|xm|x_?row|0|rows)|(x_?)?row_?stride|s_?row)$")
_COL_STRIDE = re.compile(r"(?i)^(stride_?(col|c|n|xn|x_?col|1|cols)|(x_?)?col_?stride|s_?col)$")
_ROW_LENGTH = ("N", "n_cols", "ncols", "num_cols", "n_columns", "cols", "n")


def _stride_factor(node: cst.BinaryOperation, pattern: re.Pattern) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """(the stride operand, the other operand) of ``a * stride`` when the stride's name matches."""
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply)):
        return None
    for side, other in ((node.right, node.left), (node.left, node.right)):
        if isinstance(side, cst.Name) and pattern.match(side.value):
            return side, other
    return None


def _row_stride_as_length(node, ctx):
    """``row * stride_row`` -> ``row * N`` (kernel); ``x.stride(0)`` -> ``x.shape[1]`` (launcher)."""
    if ctx.kernel:
        found = _stride_factor(node, _ROW_STRIDE)
        if found is None or ctx.row_length is None:
            return []
        stride, _ = found
        return [node.deep_replace(stride, cst.Name(ctx.row_length))]
    if _is_stride_call(node, 0):
        return [cst.Subscript(value=cst.Attribute(value=node.func.value, attr=cst.Name("shape")),
                              slice=[cst.SubscriptElement(slice=cst.Index(value=cst.Integer("1")))])]
    return []


def _is_stride_call(node: cst.CSTNode, dim: int) -> bool:
    return (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "stride"
            and len(node.args) == 1 and isinstance(node.args[0].value, cst.Integer)
            and node.args[0].value.value == str(dim))


def _column_stride_dropped(node, ctx):
    """``cols * stride_col`` -> ``cols`` (kernel); ``x.stride(1)`` -> ``1`` (launcher)."""
    if ctx.kernel:
        found = _stride_factor(node, _COL_STRIDE)
        if found is None:
            return []
        _, other = found
        return [other.with_changes(lpar=node.lpar, rpar=node.rpar) if node.lpar else other]
    if _is_stride_call(node, 1):
        return [cst.Integer("1")]
    return []


def _loop_bound(node, ctx):
    """``for t in range(a, b[, step])`` -> the bound one tile short: ``b - step`` (or ``b - 1``)."""
    if not (ctx.kernel and ctx.role == "loop_iter" and isinstance(node, cst.Call)):
        return []
    if not (_call_name(node) == "range" or _is_tl(_call_name(node), "range", "static_range")):
        return []
    args = [a for a in node.args if a.keyword is None]
    if not args:
        return []
    bound_index = 0 if len(args) == 1 else 1
    bound = args[bound_index].value
    step = args[2].value if len(args) >= 3 else cst.Integer("1")
    shorter = cst.BinaryOperation(left=_parenthesized(bound), operator=cst.Subtract(
        whitespace_before=cst.SimpleWhitespace(" "), whitespace_after=cst.SimpleWhitespace(" ")),
        right=_parenthesized(step))
    return [_replace_arg_value(node, list(node.args).index(args[bound_index]), shorter)]


def _where_negated(node, ctx):
    """``tl.where(c, a, b)`` -> ``tl.where(~c, a, b)``."""
    if not (ctx.kernel and isinstance(node, cst.Call) and _is_tl(_call_name(node), "where") and len(node.args) == 3):
        return []
    condition = node.args[0].value
    return [_replace_arg_value(node, 0, cst.UnaryOperation(operator=cst.BitInvert(),
                                                            expression=_parenthesized(condition)))]


def _cdiv_floor(node, ctx):
    """``triton.cdiv(a, b)`` -> ``a // b``: the last partial block gets no program (or no tile)."""
    if not (isinstance(node, cst.Call) and _name_leaf(_call_name(node)) == "cdiv" and len(node.args) == 2):
        return []
    left, right = (_parenthesized(arg.value) for arg in node.args)
    return [cst.BinaryOperation(left=left, operator=cst.FloorDivide(
        whitespace_before=cst.SimpleWhitespace(" "), whitespace_after=cst.SimpleWhitespace(" ")), right=right)]


_SPECIAL = re.compile(r"(?i)inf|nan|finite|(\b\w+\b)\s*!=\s*\1\b")
_CONSTANT = re.compile(r"""^-?(float\(\s*["'][-+]?(inf|nan)["']\s*\)|math\.(inf|nan)|[0-9.]+)$""")


def _special_case_removed(node, ctx):
    """NaN/+inf guards dropped: ``tl.where(<nan or inf test>, special, general)`` -> ``general``;
    ``if <nan or inf test>:`` -> ``if False:``."""
    if not ctx.kernel:
        return []
    if isinstance(node, cst.Call) and _is_tl(_call_name(node), "where") and len(node.args) == 3:
        condition, special, general = (arg.value for arg in node.args)
        if not _SPECIAL.search(ctx.code(condition)):
            return []
        if _CONSTANT.match(ctx.code(general).replace(" ", "")) and not _CONSTANT.match(ctx.code(special).replace(" ", "")):
            special, general = general, special
        return [_strip(general)]
    if ctx.role == "if_test" and _SPECIAL.search(ctx.code(node)):
        return [cst.Name("False")]
    return []


OPERATORS: dict[str, Operator] = {op.name: op for op in (
    Operator("mask_off_by_one", "tail mask `cols < N` written `cols <= N`: one lane past the row is read",
             "CWE-193 off-by-one; triton-lang/triton#10336 (masked loads past a view's end)", _mask_off_by_one),
    Operator("fill_value_zero", "masked lanes load 0.0 instead of -inf: each adds exp(0 - m) to the sum",
             "Triton tutorial 02-fused-softmax (other=-float('inf'))", _fill_value),
    Operator("max_shift_removed", "no row-max shift: exp(x) overflows float32 above ~88.7",
             "Blanchard, Higham & Higham 2021, 'Accurately computing the log-sum-exp and softmax functions'",
             _no_max_shift),
    Operator("max_not_added_back", "log(sum(exp(x - m))) returned without adding m back: off by exactly m",
             "the canonical LSE bug (Blanchard, Higham & Higham 2021, sec. 2)", _max_not_added),
    Operator("reduction_swapped", "the wrong reduction (max/sum/min) over a tile",
             "copy-paste between softmax/LSE/norm kernels; Triton tutorial 02 (tl.max then tl.sum)", _reduction_swap),
    Operator("exp2_unscaled", "exp(t) computed as exp2(t) without the log2(e) scale (or the scale dropped)",
             "Triton's exp2 fast path needs t * log2(e) (FlashAttention-2 kernels, Dao 2023)", _exp_as_exp2),
    Operator("log2_unscaled", "log(s) computed as log2(s) without the ln(2) scale",
             "mixing natural and base-2 logs in exp2-based kernels", _log_as_log2),
    Operator("accumulator_half", "the running sum or tile kept in float16 instead of float32",
             "Micikevicius et al. 2018, 'Mixed Precision Training' (accumulate in float32)", _accumulator_half),
    Operator("int64_promotion_removed", "64-bit index math removed: offsets past 2**31 elements wrap",
             "triton-lang/triton#832 and #6748; databricks/megablocks#185", _int64_removed),
    Operator("row_stride_as_length", "row offset computed with the row length instead of the row stride",
             "V. Guerra, 'Triton: Row-Wise LogSumExp' (pass x.stride(0)); padded and transposed views",
             _row_stride_as_length),
    Operator("column_stride_dropped", "column stride assumed to be 1: strided and transposed views misread",
             "Triton tutorial 02 passes only the row stride; torch.Tensor.stride docs", _column_stride_dropped),
    Operator("loop_bound_short", "the tile loop stops one tile early: the row's last tile is never read",
             "off-by-one in tile counts (CWE-193); Liger-Kernel loops over full tiles then a tail", _loop_bound),
    Operator("where_negated", "a tl.where condition inverted: the two branches swap",
             "inverted masks and guards in select-based kernels", _where_negated),
    Operator("cdiv_floored", "cdiv replaced by floor division: the last partial block gets no program",
             "Triton tutorials compute grids with triton.cdiv; integer division drops the remainder", _cdiv_floor),
    Operator("special_case_removed", "NaN or +inf special-casing removed (inf - inf and NaN handling)",
             "pytorch/pytorch#6864 and #49724; triton-lang/triton#1566 (tl.max ignores NaN)", _special_case_removed),
)}
"""Every operator by name, in the order reports list them."""
