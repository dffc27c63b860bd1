"""The Python of the documents' not-run blocks (and ``python -c`` lines) against the code.

A not-run Python block is only compiled by tests/test_docs.py. Here (in tests/doc_args.py's
subprocess) what it takes from this checkout is looked up: each ``from X import a`` names
something X has, each ``module.attribute`` it reads or sets exists, and each call of one of
this project's functions or classes binds to its signature (keywords, number of arguments).
Nothing is called: a renamed function, a moved constant or a dropped keyword fails.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import types
from typing import Any

OURS = ("ldp_telemetry", "simulations", "benchmarks", "demo", "protocol")
UNKNOWN = object()  # a value the code computes: not looked up


def ours(value: Any) -> bool:
    name = (
        value.__name__
        if isinstance(value, types.ModuleType)
        else getattr(value, "__module__", None)
    )
    return isinstance(name, str) and name.split(".")[0] in OURS


def imported(tree: ast.AST) -> tuple[dict[str, Any], list[str]]:
    """The names the code's imports bind (to the real objects), and the imports that fail."""
    bound: dict[str, Any] = {}
    problems: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                try:
                    module = importlib.import_module(alias.name)
                except ImportError as error:
                    problems.append(f"import {alias.name}: {error}")
                    continue
                top = alias.name.split(".")[0]
                bound[alias.asname or top] = (
                    module if alias.asname else importlib.import_module(top)
                )
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            try:
                module = importlib.import_module(node.module)
            except ImportError as error:
                problems.append(f"from {node.module} import ...: {error}")
                continue
            for alias in node.names:
                if alias.name == "*":
                    continue
                try:
                    value = getattr(module, alias.name)
                except AttributeError:
                    try:  # a submodule not imported by its package
                        value = importlib.import_module(f"{node.module}.{alias.name}")
                    except ImportError:
                        problems.append(f"{node.module} has no {alias.name!r}")
                        continue
                bound[alias.asname or alias.name] = value
    return bound, problems


def problems(code: str) -> list[str]:
    """What in ``code`` does not match this checkout's modules (empty: it all does)."""
    tree = ast.parse(code)
    bound, found = imported(tree)
    assigned = {  # a name the code rebinds is not the imported object everywhere
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    } | {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}
    for name in assigned:
        bound.pop(name, None)

    def resolve(node: ast.expr) -> Any:
        if isinstance(node, ast.Name):
            return bound.get(node.id, UNKNOWN)
        if isinstance(node, ast.Attribute):
            owner = resolve(node.value)
            if isinstance(owner, types.ModuleType) and ours(owner):
                if not hasattr(owner, node.attr):
                    found.append(f"{owner.__name__} has no {node.attr!r}")
                    return UNKNOWN
                return getattr(owner, node.attr)
        return UNKNOWN

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            resolve(node)  # read or set: it must exist
        elif isinstance(node, ast.Call):
            function = resolve(node.func)
            starred = any(isinstance(a, ast.Starred) for a in node.args)
            if function is UNKNOWN or starred or any(k.arg is None for k in node.keywords):
                continue
            if not callable(function) or not ours(function):
                continue
            try:
                signature = inspect.signature(function)
            except (TypeError, ValueError):
                continue
            try:
                signature.bind(*node.args, **{k.arg: k.value for k in node.keywords if k.arg})
            except TypeError as error:
                found.append(f"{ast.unparse(node.func)}(...): {error}")
    return list(dict.fromkeys(found))  # a.b.c and a.b report a missing b once
