"""Given code stays given: a later cell cannot replace what a locked given cell defines.

nbgrader's autograde restores a locked cell's source, but a later cell may still rebind the names
it defined (`def train(...)` again, `train = fake`, `import x as train`), patch them in place
(`train.__code__ = ...`, `setattr`, `globals()[...]`, `exec`), and the graders, which call
`train` by name, would then run the student's version: a wrong-sign loss once gained 5 points
through a shadowed `train`. `shadowing` finds such cells by reading their syntax tree; the
pipeline then runs the released given definitions (`definitions`: imports, functions, classes,
constants; never a given cell's demonstration runs) again right after each of them, so every
later cell and every grader call meets the release's definitions, and the report says what was
ignored. Definitions are cheap to run again.
"""
from __future__ import annotations

import ast

DYNAMIC = {"exec", "eval", "globals", "setattr", "delattr", "vars", "__import__", "compile"}
"""Calls through which a cell may rebind any name without naming it."""


def definitions(source: str, known=frozenset()) -> tuple[set[str], str]:
    """What a given cell defines that stays given: its imports, functions, classes and
    constants, as (names, the source that defines them again). A constant is an assignment of a
    literal value, or of a value computed without calling anything from literals and names that
    are given already (`known`, or defined above it in the cell): `STEP_COST =
    PARAMS["step_cost"]`, which ps1's corridor reads, was rebound unnoticed (issue 29). Other
    statements (a demonstration run, a figure) are neither protected nor run again."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(), ""
    kept, names = [], set(known)
    for statement in tree.body:
        if _is_definition(statement, names):
            kept.append(statement)
            names |= _bound(statement)
    return names - set(known), ast.unparse(ast.Module(body=kept, type_ignores=[]))


def bound_names(source: str) -> set[str]:
    """Every name a cell binds at module level, in any block (the parameter cell binds PARAMS in
    an if/else, from what it computes)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {name for statement in _module_level(tree.body) for name in _bound(statement)}


def _is_definition(statement, known) -> bool:
    if isinstance(statement, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef,
                              ast.ClassDef)):
        return True
    if isinstance(statement, ast.Assign) and all(isinstance(t, ast.Name) for t in statement.targets):
        try:
            ast.literal_eval(statement.value)
        except ValueError:
            return _is_derived(statement.value, known)
        return True
    return False


DERIVED = (ast.Constant, ast.Name, ast.Load, ast.Subscript, ast.Attribute, ast.BinOp, ast.UnaryOp,
           ast.BoolOp, ast.Compare, ast.Tuple, ast.List, ast.Dict, ast.Set, ast.Slice, ast.operator,
           ast.unaryop, ast.boolop, ast.cmpop, ast.IfExp)
"""What a derived constant may be built of: no call, no lambda, no comprehension."""


def _is_derived(value, known) -> bool:
    import builtins

    return all(isinstance(node, DERIVED) for node in ast.walk(value)) and all(
        node.id in known or hasattr(builtins, node.id)
        for node in ast.walk(value) if isinstance(node, ast.Name))


def imports(source: str) -> dict[str, str]:
    """Each name a cell's top-level imports bind, with what it imports ("numpy", "torch.nn")."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    return {name: target for statement in tree.body for name, target in _imported(statement).items()}


def _imported(statement) -> dict[str, str]:
    if isinstance(statement, ast.Import):
        return {(alias.asname or alias.name).split(".")[0]: alias.name if alias.asname else alias.name.split(".")[0]
                for alias in statement.names}
    if isinstance(statement, ast.ImportFrom):
        return {alias.asname or alias.name: f"{'.' * statement.level}{statement.module or ''}:{alias.name}"
                for alias in statement.names}
    return {}


def shadowing(source: str, given: set[str], given_imports: dict[str, str] | None = None) -> set[str]:
    """The given names this cell may rebind or patch: every one it binds anywhere at module
    level (in any block), assigns an attribute or item of, or declares `global` in a function;
    all of `given` when it uses exec, eval, globals(), setattr and their kind. Importing again
    what a given import already binds (`import numpy as np` twice) is not shadowing."""
    given_imports = given_imports or {}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DYNAMIC:
            return set(given)
        if isinstance(node, ast.Global):
            found.update(node.names)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            root = node.value
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name):
                found.add(root.id)
    for statement in _module_level(tree.body):
        same = {name for name, target in _imported(statement).items() if given_imports.get(name) == target}
        found.update(_bound(statement) - same)
    return found & given


def _module_level(body):
    """Statements that run at module level, inside if/for/while/try/with blocks included."""
    for statement in body:
        yield statement
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list) and not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                      ast.ClassDef)):
                yield from _module_level(inner)
        if isinstance(statement, ast.ExceptHandler) and statement.name:
            yield ast.Name(statement.name, ast.Store())


def _bound(statement) -> set[str]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
    if isinstance(statement, ast.Name):
        return {statement.id}
    targets = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
        targets = [statement.target]
    elif isinstance(statement, (ast.For, ast.AsyncFor)):
        targets = [statement.target]
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in statement.items if item.optional_vars is not None]
    elif isinstance(statement, ast.Delete):
        targets = statement.targets
    names = set()
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                names.add(node.id)
    for node in ast.walk(statement) if isinstance(statement, ast.Expr) else ():
        if isinstance(node, ast.NamedExpr):
            names.add(node.target.id)
    return names
