"""Reading a plain manifest.py without importing torch (importing torch costs the run ~2 s before
any worker starts; docs/speed.md).

A manifest written by `torchcts init` is literals plus `torch.<dtype>` names. When the file is only
that (a docstring, `import torch`, and assignments of dicts, lists, tuples, sets, constants and
`torch.<dtype>`), its value is computed here with dtype stand-ins whose str() is the real dtype's
("torch.float32"), which is all that validation reads (schema.dtype_name). Anything else — another
import, a call, a name, an unknown `torch.X` — returns None and the file is executed as before,
so the result and every error message are those of running it. One exception: `torch.X` where X
is a typo of a dtype name (`torch.int46`) raises `DtypeTypo` here, which the loader reports as
running the file would ("unknown dtype 'torch.int46' at line 19: did you mean 'torch.int64'?")
without importing torch first (seconds under load).
"""

from __future__ import annotations

import ast
from typing import Any

from torchcts.manifest.schema import DTYPE_ALIASES, DTYPES, release_dtypes


class DtypeName:
    """Stands in for `torch.<dtype>`: one instance per canonical dtype, as torch.half is torch.float16."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    __str__ = __repr__


_STANDINS = {name: DtypeName(name) for name in DTYPES}
_STANDINS.update({alias: _STANDINS[name] for alias, name in DTYPE_ALIASES.items() if name in _STANDINS})


class _NotLiteral(Exception):
    pass


class DtypeTypo(Exception):
    """`torch.<name>` where name is no dtype but close to one: the typo and its line."""

    def __init__(self, name: str, lineno: int) -> None:
        super().__init__(name)
        self.name = name
        self.lineno = lineno


def _is_dtype_typo(name: str) -> bool:
    import difflib

    return bool(difflib.get_close_matches(name, list(_STANDINS), n=1, cutoff=0.6))


def _value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
        if node.attr in _STANDINS and isinstance(node.ctx, ast.Load):
            return _STANDINS[node.attr]
        if node.attr in release_dtypes() and isinstance(node.ctx, ast.Load):  # newer than DTYPES: torch has it
            return DtypeName(node.attr)
        if _is_dtype_typo(node.attr):
            raise DtypeTypo(node.attr, node.lineno)
        raise _NotLiteral
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        out = {}
        for k, v in zip(node.keys, node.values, strict=True):
            out[_value(k)] = _value(v)  # type: ignore[arg-type] - keys checked above
        return out
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [_value(e) for e in node.elts]
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(node.operand, ast.Constant):
        value = node.operand.value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else +value
    raise _NotLiteral


def literal_manifest(source: str) -> tuple[bool, Any]:
    """(True, the `manifest` value) when the source is a plain literal manifest, else (False, None);
    DtypeTypo for a misspelt `torch.<dtype>` in a statement read before any non-literal one."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False, None
    names: dict[str, Any] = {}
    imported = False
    try:
        for i, stmt in enumerate(tree.body):
            if (i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                    and isinstance(stmt.value.value, str)):
                continue  # the docstring
            if isinstance(stmt, ast.Import) and [(a.name, a.asname) for a in stmt.names] == [("torch", None)]:
                imported = True
                continue
            uses_torch = any(isinstance(n, ast.Name) and n.id == "torch" for n in ast.walk(stmt))
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and (
                imported or not uses_torch  # torch.X before `import torch` is exec's NameError
            ):
                names[stmt.targets[0].id] = _value(stmt.value)
                continue
            return False, None
    except (_NotLiteral, TypeError, RecursionError):  # TypeError: an unhashable key, as exec would raise
        return False, None
    if "manifest" not in names:
        return False, None
    return True, names["manifest"]
