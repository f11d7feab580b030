"""A Python config function's value, read from its source without running it (ast).

torchtitan describes a run by a function returning its config (torchtitan/config/README.md): constructors of config
classes with keyword arguments, another such function called and its result changed by assignment, values bound to
names first, a helper handed the config to change it. `evaluate` follows exactly that:

- a call of a function defined in the same file, or imported from a module found beside it (a relative import, or a
  package directory above the file: a checkout), is followed into its body, with its parameters bound, where it
  takes no arguments (a config function) or is handed a config object (a helper that changes it);
- any other call is kept as a `Built`: the callee as written, its arguments and the module its name was imported
  from (torchtitan's model_registry names its model by its package);
- `name = value`, `obj.attr.attr = value` (creating the attributes' objects as the defaults would be), `if` on a
  test it has read, `return`;
- numbers, strings, lists, tuples, + - * // / on numbers, comparisons and and/or/not on values read, names bound
  before, module-level names (each evaluated once).

Anything else (a loop, a subscript, a condition on what it cannot read) becomes `Unread`, with its source text, or,
as a statement, a line of `skipped`. Nothing is imported or executed; files are read only where a module path
leads, and only so many (FILES) and so large (FILE_BYTES); a reading takes at most WORK steps, DEPTH calls deep, and
lists at most NESTING deep.
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
WORK = 100_000  # expressions and statements one reading evaluates (a config function takes a few thousand)
NESTING = 16  # lists within lists (a config's deepest: a list of lists of module names)

_NOT_FOLLOWED = object()  # Reader.follow: the call names no function this reading opens


@dataclass
class Built:
    """A call not followed: a config object as its constructor was given (`name` as written: ParallelismConfig,
    FullAC.Config), `origin` the module its callee comes from ("" where not imported; `llama3.model_registry` after
    `from torchtitan.models import llama3`: torchtitan.models.llama3). `name` empty: an object the reader created
    for an attribute assigned on a default (the field's default class)."""

    name: str
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    origin: str = ""
    changes: bool = False  # a call not followed that was handed a config object (it may change it)


@dataclass(frozen=True)
class Unread:
    """An expression the reader does not evaluate, as its source reads."""

    text: str


@dataclass
class _Module:
    path: Path
    name: str  # its dotted module path, as far as its directories give one
    functions: dict[str, ast.FunctionDef]
    imports: dict[str, tuple[str, str]]  # local name -> (module, attribute; "" for `import module`)
    constants: dict[str, ast.expr]


class _Reader:
    def __init__(self, root: Path, where: str) -> None:
        self.where = where
        self.modules: dict[Path, _Module] = {}
        self.skipped: list[str] = []
        self.depth = 0
        self.work = 0
        self.constants: dict[tuple[Path, str], Any] = {}
        self.nesting: dict[int, int] = {}  # a list's depth of lists, by its id
        self.lists: list[list[Any]] = []
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
        module = _Module(path, _dotted_name(path), {}, {}, {})
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

    def call_function(self, module: _Module, name: str, line: int, given: dict[str, Any] | None = None) -> Any:
        """The value function `name` of `module` returns, its parameters bound to `given` (else their defaults)."""
        if self.depth >= DEPTH:
            raise self.error(f"line {line}: calls more than {DEPTH} config functions deep: read no further")
        self.depth += 1
        try:
            function = module.functions[name]
            env = self.parameters(module, function, given or {})
            returned, result = self.block(module, function.body, env, dict(module.imports))
            return result if returned else None
        finally:
            self.depth -= 1

    def parameters(self, module: _Module, function: ast.FunctionDef, given: dict[str, Any]) -> dict[str, Any]:
        """The function's parameters: the values given, else their defaults, else not read."""
        args = function.args
        positional = [*args.posonlyargs, *args.args]
        defaults = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults,
                            strict=True))  # fmt: skip
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None})
        env: dict[str, Any] = {}
        for arg in [*positional, *args.kwonlyargs]:
            if arg.arg in given:
                env[arg.arg] = given[arg.arg]
            elif arg.arg in defaults:
                env[arg.arg] = self.value(module, defaults[arg.arg], {}, dict(module.imports))
            else:
                env[arg.arg] = Unread(arg.arg)
        return env

    def block(
        self, module: _Module, statements: list[ast.stmt], env: dict[str, Any], imports: dict[str, tuple[str, str]]
    ) -> tuple[bool, Any]:
        """Run statements: (whether one returned, what it returned)."""
        for statement in statements:
            self.spend(module, statement)
            if isinstance(statement, ast.Return):
                return True, self.value(module, statement.value, env, imports) if statement.value else None
            if isinstance(statement, ast.Assign | ast.AnnAssign):
                target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
                if statement.value is None:
                    continue
                if isinstance(statement, ast.Assign) and len(statement.targets) != 1:
                    self.skip(module, statement, "a chained assignment")
                    continue
                self.assign(module, target, self.value(module, statement.value, env, imports), env, statement)
            elif isinstance(statement, ast.If):
                test = self.value(module, statement.test, env, imports)
                if isinstance(test, Built | Unread):
                    self.skip(module, statement, f"a condition dpcost cannot evaluate: {_text(statement.test)[:60]}")
                    continue
                returned, result = self.block(module, statement.body if test else statement.orelse, env, imports)
                if returned:
                    return True, result
            elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
                result = self.value(module, statement.value, env, imports)
                if isinstance(result, Built) and result.changes:
                    self.skip(module, statement, f"a call that may change the config: {_text(statement.value)[:60]}")
            elif isinstance(statement, ast.ImportFrom | ast.Import):
                _bind_import(imports, statement)  # an import inside the function: its own names
            elif isinstance(statement, ast.Expr | ast.Pass | ast.Assert):
                continue  # a docstring, a check
            else:
                self.skip(module, statement, f"a {type(statement).__name__.lower()} statement")
        return False, None

    def spend(self, module: _Module, node: ast.AST) -> None:
        """One step of the reading's WORK: a config function reads in a few thousand."""
        self.work += 1
        if self.work > WORK:
            line = getattr(node, "lineno", 0)
            raise self.error(f"{module.path.name} line {line}: more than {WORK:,} steps to read; a config is smaller")

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

    def constant(self, module: _Module, name: str, imports: dict[str, tuple[str, str]]) -> Any:
        """A module-level name's value, evaluated once (a module's constant is one object, as Python has it)."""
        key = (module.path, name)
        if key not in self.constants:
            self.constants[key] = Unread(name)  # while it is evaluated: a name defined by itself is not read
            self.constants[key] = self.value(module, module.constants[name], {}, imports)
        return self.constants[key]

    def value(self, module: _Module, node: ast.expr, env: dict[str, Any], imports: dict[str, tuple[str, str]]) -> Any:
        self.spend(module, node)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.List | ast.Tuple):
            return self.listed([self.value(module, item, env, imports) for item in node.elts], node)
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            if node.id in module.constants:
                return self.constant(module, node.id, imports)
            return Unread(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.value(module, node.operand, env, imports)
            return -inner if _number(inner) else Unread(_text(node))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.value(module, node.operand, env, imports)
            return Unread(_text(node)) if isinstance(inner, Built | Unread) else not inner
        if isinstance(node, ast.BoolOp):
            return self.either(module, node, env, imports)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return _compared(node, self.value(module, node.left, env, imports),
                             self.value(module, node.comparators[0], env, imports))  # fmt: skip
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

    def listed(self, items: list[Any], node: ast.expr) -> Any:
        """A list, unless it nests more than NESTING lists deep (a hostile file's x = [x] repeated)."""
        depth = 1 + max((self.nesting.get(id(item), 0) for item in items if isinstance(item, list)), default=0)
        if depth > NESTING:
            return Unread(f"a list nested more than {NESTING} deep ({_text(node)[:40]})")
        self.nesting[id(items)] = depth
        self.lists.append(items)  # kept alive, so that no other list takes its id
        return items

    def either(
        self, module: _Module, node: ast.BoolOp, env: dict[str, Any], imports: dict[str, tuple[str, str]]
    ) -> Any:
        """`a and b`, `a or b` on values read, as Python takes them (the first that decides)."""
        result: Any = None
        for operand in node.values:
            result = self.value(module, operand, env, imports)
            if isinstance(result, Built | Unread):
                return Unread(_text(node))
            if bool(result) == isinstance(node.op, ast.Or):
                return result
        return result

    def call(self, module: _Module, node: ast.Call, env: dict[str, Any], imports: dict[str, tuple[str, str]]) -> Any:
        """A call's value: followed into a config function's body where it is one (follow), else a Built."""
        callee = _text(node.func)
        if callee == "cast" and len(node.args) == 2:  # typing.cast(T, value): the value
            return self.value(module, node.args[1], env, imports)
        args = [self.value(module, arg, env, imports) for arg in node.args]
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                kwargs[f"**{_text(keyword.value)[:40]}"] = Unread(_text(keyword.value))
            else:
                kwargs[keyword.arg] = self.value(module, keyword.value, env, imports)
        handed = any(isinstance(v, Built) for v in [*args, *kwargs.values()])
        if not (args or kwargs) or handed:  # a config function, or a helper handed the config
            followed = self.follow(module, node, args, kwargs, imports)
            if followed is not _NOT_FOLLOWED:
                return followed
        head = callee.split(".")[0]
        origin = ""
        if head in imports:
            source, attribute = imports[head]
            owner = callee.split(".")[1:-1]  # `llama3.model_registry`: the module llama3 of `source`
            inner = [attribute, *owner] if attribute and callee != head else []
            origin = ".".join([_absolute(module, source), *inner])
        # a call not followed that is handed a config object may change it
        return Built(callee, args, kwargs, origin, changes=handed and not callee.endswith("Config"))

    def follow(
        self, module: _Module, node: ast.Call, args: list[Any], kwargs: dict[str, Any],
        imports: dict[str, tuple[str, str]],
    ) -> Any:  # fmt: skip
        """The value of the function the call names (given `args` and `kwargs`), where this reading can open it:
        defined in the file, or imported from a module found by its path; else _NOT_FOLLOWED."""
        if not isinstance(node.func, ast.Name) or any(isinstance(a, ast.Starred) for a in node.args):
            return _NOT_FOLLOWED
        if any(k.arg is None for k in node.keywords):
            return _NOT_FOLLOWED
        name = node.func.id
        target: tuple[_Module, str] | None = None
        if name in module.functions:
            target = (module, name)
        elif name in imports and imports[name][1]:
            source, attribute = imports[name]
            path = self.locate(module, source)
            if path is not None:
                other = self.module(path)
                if attribute in other.functions:
                    target = (other, attribute)
        if target is None:
            return _NOT_FOLLOWED
        other, function = target
        definition = other.functions[function].args
        names = [a.arg for a in [*definition.posonlyargs, *definition.args]]
        if definition.vararg or definition.kwarg or len(args) > len(names):
            return _NOT_FOLLOWED
        return self.call_function(other, function, node.lineno, {**dict(zip(names, args, strict=False)), **kwargs})


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


def _compared(node: ast.Compare, left: Any, right: Any) -> Any:
    """One comparison of values read (==, !=, in, not in, is, is not, <, <=, >, >=); else not read."""
    if isinstance(left, Built | Unread) or isinstance(right, Built | Unread):
        return Unread(_text(node))
    op = node.ops[0]
    try:
        if isinstance(op, ast.Eq):
            return left == right
        if isinstance(op, ast.NotEq):
            return left != right
        if isinstance(op, ast.In | ast.NotIn) and isinstance(right, list | str):
            return (left in right) == isinstance(op, ast.In)
        if isinstance(op, ast.Is | ast.IsNot):
            return (left is right) == isinstance(op, ast.Is)
        if isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE) and _number(left) and _number(right):
            return {ast.Lt: left < right, ast.LtE: left <= right, ast.Gt: left > right, ast.GtE: left >= right}[
                type(op)
            ]
    except TypeError:
        pass
    return Unread(_text(node))


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
