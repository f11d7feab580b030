"""A Python config function's value, read from its source without running it (ast).

torchtitan describes a run by a function returning its config (torchtitan/config/README.md): constructors of config
classes with keyword arguments, another such function called and its result changed by assignment, values bound to
names first. `evaluate` follows exactly that:

- a call of a function defined in the same file, or imported from a module found beside it (a relative import, or a
  package directory above the file: a checkout), is followed into that function's body;
- any other call is kept as a `Built`: the callee as written, its arguments and the module its name was imported
  from (torchtitan's model_registry names its model by its package);
- `name = value`, `obj.attr.attr = value` (creating the attributes' objects as the defaults would be), `return`;
- numbers, strings, lists, tuples, + - * // / on numbers, names bound before, module-level constants.

Anything else (a condition, a loop, a comparison, a subscript) becomes `Unread`, with its source text, or, as a
statement, a line of `skipped`. Nothing is imported or executed; files are read only where a module path leads, and
only so many (FILES), so large (FILE_BYTES) and so deep (DEPTH).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpcost.errors import InputError

__all__ = ["Built", "Unread", "evaluate", "functions_of"]

FILES = 32  # modules one reading may open
FILE_BYTES = 2_000_000  # the largest Python file read
DEPTH = 32  # calls followed one inside another
LARGEST = 10**18  # arithmetic beyond this is not read (a hostile file's 10**10**10)


@dataclass
class Built:
    """A call not followed: a config object as its constructor was given (`name` as written: ParallelismConfig,
    FullAC.Config), `origin` the module its first name was imported from ("" where not imported). `name` empty:
    an object the reader created for an attribute assigned on a default (the field's default class)."""

    name: str
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    origin: str = ""


@dataclass(frozen=True)
class Unread:
    """An expression the reader does not evaluate, as its source reads."""

    text: str


@dataclass
class _Module:
    path: Path
    name: str  # its dotted module path, as far as its directories give one
    tree: ast.Module
    functions: dict[str, ast.FunctionDef]
    imports: dict[str, tuple[str, str]]  # local name -> (module, attribute; "" for `import module`)
    constants: dict[str, ast.expr]


class _Reader:
    def __init__(self, root: Path, where: str) -> None:
        self.where = where
        self.modules: dict[Path, _Module] = {}
        self.skipped: list[str] = []
        self.depth = 0
        self.first = self.module(root)

    def error(self, message: str) -> InputError:
        return InputError(self.where, message)

    def module(self, path: Path) -> _Module:
        path = path.resolve()
        found = self.modules.get(path)
        if found is not None:
            return found
        if len(self.modules) >= FILES:
            raise self.error(f"follows more than {FILES} modules: read no further")
        try:
            size = path.stat().st_size
            if size > FILE_BYTES:
                raise self.error(f"{path.name} is {size:,} bytes; a config module of at most {FILE_BYTES:,} is read")
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise self.error(f"cannot read {path.name}: {str(exc)[:160]}") from None
        try:
            tree = ast.parse(text, filename=str(path))
        except SyntaxError as exc:
            raise self.error(f"{path.name} line {exc.lineno}: not valid Python ({exc.msg})") from None
        except (RecursionError, MemoryError, ValueError):
            raise self.error(f"{path.name}: nested too deeply to read") from None
        module = _Module(path, _dotted_name(path), tree, {}, {}, {})
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                module.functions[node.name] = node
            elif isinstance(node, ast.ImportFrom | ast.Import):
                _bind_import(module.imports, node)
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                module.constants[node.targets[0].id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                module.constants[node.target.id] = node.value
        self.modules[path] = module
        return module

    def locate(self, module: _Module, dotted: str) -> Path | None:
        """The file a module path names: relative to `module`'s package (leading dots), else below a directory
        above it (a checkout holding the package)."""
        level = len(dotted) - len(dotted.lstrip("."))
        parts = [p for p in dotted.lstrip(".").split(".") if p]
        if level:
            base = module.path.parent
            for _ in range(level - 1):
                base = base.parent
            return _source_of(base, parts)
        for above in module.path.parents:
            found = _source_of(above, parts)
            if found is not None:
                return found
        return None

    def call_function(self, module: _Module, name: str, line: int) -> Any:
        """The value function `name` of `module` returns."""
        if self.depth >= DEPTH:
            raise self.error(f"line {line}: calls more than {DEPTH} config functions deep: read no further")
        self.depth += 1
        try:
            return self.run(module, module.functions[name])
        finally:
            self.depth -= 1

    def run(self, module: _Module, function: ast.FunctionDef) -> Any:
        env: dict[str, Any] = {}
        imports = dict(module.imports)
        for statement in function.body:
            if isinstance(statement, ast.Return):
                return self.value(module, statement.value, env, imports) if statement.value else None
            if isinstance(statement, ast.Assign | ast.AnnAssign):
                target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
                if statement.value is None:
                    continue
                if isinstance(statement, ast.Assign) and len(statement.targets) != 1:
                    self.skip(module, statement, "a chained assignment")
                    continue
                self.assign(module, target, self.value(module, statement.value, env, imports), env, statement)
            elif isinstance(statement, ast.ImportFrom | ast.Import):
                _bind_import(imports, statement)  # an import inside the function: its own names
            elif isinstance(statement, ast.Expr | ast.Pass | ast.Assert):
                continue  # a docstring, a call for its effect, a check
            else:
                self.skip(module, statement, f"a {type(statement).__name__.lower()} statement")
        return None

    def skip(self, module: _Module, node: ast.stmt, what: str) -> None:
        self.skipped.append(f"{module.path.name} line {node.lineno}: {what}")

    def assign(self, module: _Module, target: ast.expr, value: Any, env: dict[str, Any], node: ast.stmt) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = value
            return
        chain: list[str] = []
        while isinstance(target, ast.Attribute):
            chain.append(target.attr)
            target = target.value
        if not isinstance(target, ast.Name) or not chain or not isinstance(env.get(target.id), Built):
            self.skip(module, node, f"an assignment to {_text(node)[:60]}")
            return
        obj: Built = env[target.id]
        for attr in reversed(chain[1:]):
            inner = obj.kwargs.get(attr)
            if not isinstance(inner, Built):
                inner = obj.kwargs[attr] = Built("")  # the field's default, changed below
            obj = inner
        obj.kwargs[chain[0]] = value

    def value(self, module: _Module, node: ast.expr, env: dict[str, Any], imports: dict[str, tuple[str, str]]) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.List | ast.Tuple):
            return [self.value(module, item, env, imports) for item in node.elts]
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id in module.constants and self.depth < DEPTH:
                self.depth += 1
                try:
                    return self.value(module, module.constants[node.id], {}, imports)
                finally:
                    self.depth -= 1
            return Unread(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.value(module, node.operand, env, imports)
            return -inner if _number(inner) else Unread(_text(node))
        if isinstance(node, ast.BinOp):
            return _arithmetic(node, self.value(module, node.left, env, imports),
                               self.value(module, node.right, env, imports))  # fmt: skip
        if isinstance(node, ast.Attribute):
            base = self.value(module, node.value, env, imports)
            if isinstance(base, Built) and node.attr in base.kwargs:
                return base.kwargs[node.attr]
            return Unread(_text(node))
        if isinstance(node, ast.Call):
            return self.call(module, node, env, imports)
        return Unread(_text(node))

    def call(self, module: _Module, node: ast.Call, env: dict[str, Any], imports: dict[str, tuple[str, str]]) -> Any:
        callee = _text(node.func)
        if isinstance(node.func, ast.Name) and not node.args and not node.keywords:
            name = node.func.id
            if name in module.functions and name not in env:
                return self.call_function(module, name, node.lineno)
            source = imports.get(name)
            if source is not None and source[1]:
                path = self.locate(module, source[0])
                if path is not None:
                    other = self.module(path)
                    if source[1] in other.functions:
                        return self.call_function(other, source[1], node.lineno)
        if callee == "cast" and len(node.args) == 2:  # typing.cast(T, value): the value
            return self.value(module, node.args[1], env, imports)
        head = callee.split(".")[0]
        origin = _absolute(module, imports[head][0]) if head in imports else ""
        args = [self.value(module, arg, env, imports) for arg in node.args]
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                kwargs[f"**{_text(keyword.value)[:40]}"] = Unread(_text(keyword.value))
            else:
                kwargs[keyword.arg] = self.value(module, keyword.value, env, imports)
        return Built(callee, args, kwargs, origin)


def _bind_import(imports: dict[str, tuple[str, str]], node: ast.Import | ast.ImportFrom) -> None:
    """The names an import statement binds: local name -> (module, attribute; "" for `import module`)."""
    if isinstance(node, ast.ImportFrom):
        source = "." * node.level + (node.module or "")
        for alias in node.names:
            imports[alias.asname or alias.name] = (source, alias.name)
    else:
        for alias in node.names:
            imports[alias.asname or alias.name.split(".")[0]] = (alias.name, "")


def _source_of(base: Path, parts: list[str]) -> Path | None:
    """base/a/b.py, or base/a/b/__init__.py, for the module path a.b."""
    if not parts:
        found = base / "__init__.py"
        return found if found.is_file() else None
    stem = base.joinpath(*parts)
    for found in (stem.with_suffix(".py"), stem / "__init__.py"):
        if found.is_file():
            return found
    return None


def _dotted_name(path: Path) -> str:
    """The module path of a file, from the package directories (with __init__.py) above it."""
    parts = [path.stem] if path.stem != "__init__" else []
    for above in path.parents:
        if not (above / "__init__.py").is_file():
            break
        parts.insert(0, above.name)
    return ".".join(parts)


def _absolute(module: _Module, source: str) -> str:
    """A relative import's module as a dotted path from `module`'s package (its directory names where there is no
    package)."""
    level = len(source) - len(source.lstrip("."))
    if not level:
        return source
    names = module.name.split(".") if module.name else []
    package = names if module.path.stem == "__init__" else names[:-1]
    if package:
        package = package[: len(package) - (level - 1)]
    else:  # a file outside any package: its directory stands in for one
        base = module.path.parent
        for _ in range(level - 1):
            base = base.parent
        package = [base.name]
    rest = source.lstrip(".")
    return ".".join([*package, *([rest] if rest else [])])


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _arithmetic(node: ast.BinOp, left: Any, right: Any) -> Any:
    if not (_number(left) and _number(right)):
        return Unread(_text(node))
    try:
        if isinstance(node.op, ast.Add):
            result = left + right
        elif isinstance(node.op, ast.Sub):
            result = left - right
        elif isinstance(node.op, ast.Mult):
            result = left * right
        elif isinstance(node.op, ast.FloorDiv):
            result = left // right
        elif isinstance(node.op, ast.Div):
            result = left / right
        else:  # ** and the rest are not read (10**10**10 would not end)
            return Unread(_text(node))
    except (ZeroDivisionError, OverflowError):
        return Unread(_text(node))
    return result if abs(result) <= LARGEST else Unread(_text(node))


def _text(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except (RecursionError, ValueError):
        return "..."


def functions_of(path: Path, where: str) -> list[str]:
    """The top-level functions a config module defines, in order."""
    return list(_Reader(path, where).first.functions)


def evaluate(path: Path, function: str, where: str) -> tuple[Any, list[str]]:
    """The value `function` of the module at `path` returns, read statically, and the statements skipped."""
    reader = _Reader(path, where)
    if function not in reader.first.functions:
        known = ", ".join(list(reader.first.functions)[:12]) or "none"
        raise InputError(where, f"defines no function {function!r}; it defines: {known}")
    try:
        result = reader.call_function(reader.first, function, reader.first.functions[function].lineno)
    except RecursionError:
        raise InputError(where, "nested too deeply to read") from None
    return result, reader.skipped
