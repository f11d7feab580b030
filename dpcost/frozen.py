"""`frozen`: a frozen dataclass, built for start-up.

Python 3.11's `dataclass(frozen=True)` compiles six methods for every class, one `exec` each (`dataclasses.py`
`_create_fn`), and reads each field's string annotation against ClassVar and InitVar by regex and module lookups
(`_is_type`): about 1 ms a class here, and the 43 classes a JSON `estimate` builds cost it 8-9% of its time before it
has done anything. `frozen` builds what the dataclass would, with one `exec` a class (its `__init__`, as dataclasses
writes it: each field set through `object.__setattr__`, defaults and `default_factory` as dataclasses fills them in,
then `__post_init__`), and shares the rest among all its classes: the frozen `__setattr__` and `__delattr__`, and an
`__eq__`, `__hash__` and `__repr__` that read the fields through one `operator.attrgetter` made per class. They
compare, hash and print as the dataclass's would: equal when of the same class with equal fields, hashed on them,
`Name(field=value, ...)`. The class carries `__dataclass_fields__` and `__dataclass_params__` as a dataclass does, so
`dataclasses.fields`, `replace`, `asdict` and `field(...)` work on it; a @frozen class may extend another, whose
fields come first. `frozen(cls, kw_only=True)` takes every field by keyword, as `dataclass(kw_only=True)`; a field
whose metadata holds `convert` (a function) is set to `convert(value)` (dpcost.contract: a value as pydantic would
have held it). `__init__` is made when it is first looked up. Not supported (none of dpcost's classes use them;
`frozen` refuses them): `InitVar`, a field marked keyword-only on its own, slots. tests/test_frozen.py holds each
behaviour to the dataclass's own.

Compiling one `__init__` takes Python 3.11 about 75 us, and a command first uses about 60 classes. dpcost's own
classes' `__init__`s are therefore also written out, by `python -m dpcost.frozen`, into `dpcost/_frozen_inits.py`,
which Python compiles once into its `.pyc` like any module: a class takes its `__init__` from there while the source
written there is the one it would compile, and compiles its own otherwise (a class changed since, or one outside
dpcost). tests/test_frozen.py fails when that module is out of date.
"""

from __future__ import annotations

import dataclasses
import operator
import os
import sys
from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError
from typing import Any, TypeVar, cast, dataclass_transform

__all__ = ["frozen"]

_T = TypeVar("_T")

# What dataclass(frozen=True, eq=False, repr=False) records of a class, and the tag it gives a field (dataclasses'
# private _FIELD, read off one field it built, so that `fields`, `replace` and `asdict` take ours as theirs).
_ONE: Any = dataclasses.dataclass(frozen=True, eq=False, repr=False)(type("_One", (), {"__annotations__": {"x": int}}))
_PARAMS, _FIELD_TYPE = _ONE.__dataclass_params__, dataclasses.fields(_ONE)[0]._field_type  # type: ignore[attr-defined]


class _Factory:
    """__init__'s default for a field with a default_factory, shown as dataclasses shows its own."""

    def __repr__(self) -> str:
        return "<factory>"


_HAS_DEFAULT_FACTORY = _Factory()


def _eq(self: Any, other: Any) -> bool:
    if other.__class__ is self.__class__:
        return bool(self.__frozen_fields__(self) == other.__frozen_fields__(other))
    return NotImplemented  # type: ignore[no-any-return]


def _hash(self: Any) -> int:
    return hash(self.__frozen_fields__(self))


def _repr(self: Any) -> str:
    cls = type(self)
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in cls.__frozen_repr__)
    return f"{cls.__qualname__}({shown})"


def _setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _getter(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The fields `names` of an object as one tuple (attrgetter returns a bare value for one name)."""
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda obj: (one(obj),)
    if not names:
        return lambda obj: ()
    return operator.attrgetter(*names)


def _classvar(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar", "t.ClassVar"))


def _own_fields(cls: type) -> list[dataclasses.Field[Any]]:
    """The fields `cls` declares, in order, as dataclasses' _get_field makes them; a class attribute that held a
    default is left holding it (a default_factory's, or no default's, is removed), as dataclasses leaves it."""
    out = []
    own = cls.__dict__.get("__annotations__", {})  # noqa: RUF063 (as dataclasses reads them: the class's own)
    for name, annotation in own.items():
        if _classvar(annotation):
            continue
        if "InitVar" in str(annotation):
            raise TypeError(f"{cls.__qualname__}.{name}: frozen does not support InitVar")
        given = cls.__dict__.get(name, MISSING)
        f: Any = given if isinstance(given, dataclasses.Field) else dataclasses.field(default=given)
        if f.kw_only is True:
            raise TypeError(f"{cls.__qualname__}.{name}: frozen does not support keyword-only fields")
        if f.default.__class__.__hash__ is None:  # as dataclasses refuses a list, dict or set default
            raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory")
        f.name, f.type, f._field_type = name, annotation, _FIELD_TYPE
        if isinstance(given, dataclasses.Field):
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
        out.append(f)
    return out


def _init_source(cls: type, fields: list[dataclasses.Field[Any]], kw_only: bool) -> tuple[str, dict[str, Any]]:
    """The source of `__init__` as dataclasses writes it for a frozen class (`kw_only`: every field by keyword, as
    `dataclass(kw_only=True)`), and the names it reads (defaults, factories, converters) with their values."""
    scope: dict[str, Any] = {"__set": object.__setattr__, "__FACTORY": _HAS_DEFAULT_FACTORY}
    params, body = ["self"], []
    for f in fields:
        name = f.name
        if f.init:
            if f.default is not MISSING:
                scope[f"__dflt_{name}"] = f.default
                params.append(f"{name}=__dflt_{name}")
            elif f.default_factory is not MISSING:
                params.append(f"{name}=__FACTORY")
            else:
                params.append(name)
        if f.default_factory is not MISSING:
            scope[f"__factory_{name}"] = f.default_factory
            value = f"__factory_{name}() if {name} is __FACTORY else {name}" if f.init else f"__factory_{name}()"
        elif f.init:
            value = name
        elif f.default is not MISSING:
            scope[f"__dflt_{name}"] = f.default
            value = f"__dflt_{name}"
        else:
            continue  # init=False with no default: left unset, as dataclasses leaves it
        convert = f.metadata.get("convert")
        if convert is not None:
            scope[f"__convert_{name}"] = convert
            value = f"__convert_{name}({value})"
        body.append(f"  __set(self, {name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("  self.__post_init__()")
    if kw_only and len(params) > 1:
        params.insert(1, "*")
    return f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "  pass"), scope


_Prebuilt = dict[str, tuple[str, Callable[..., Callable[..., None]]]]
_PREBUILT: _Prebuilt | None = None


def _prebuilt() -> _Prebuilt:
    """dpcost/_frozen_inits.py's entries: by class, the source written there and what makes that `__init__`. None
    are read where the module has no bytecode and Python may not write it (PYTHONDONTWRITEBYTECODE): compiling all of
    it in every process would cost more than the few classes a command uses."""
    global _PREBUILT
    if _PREBUILT is None:
        INITS: dict[str, Any] = {}
        here = os.path.dirname(__file__)
        compiled = os.path.join(here, "__pycache__", f"_frozen_inits.{sys.implementation.cache_tag}.pyc")
        if not sys.dont_write_bytecode or os.path.exists(compiled):
            from dpcost._frozen_inits import INITS
        _PREBUILT = cast(_Prebuilt, INITS)
    return _PREBUILT


def _init(cls: type, fields: list[dataclasses.Field[Any]], kw_only: bool) -> Callable[..., None]:
    """The class's `__init__`: dpcost/_frozen_inits.py's while it was written from the same source, else compiled
    in one `exec`."""
    source, scope = _init_source(cls, fields, kw_only)
    made = _prebuilt().get(f"{cls.__module__}.{cls.__qualname__}")
    if made is not None and made[0] == source:
        init = made[1](**scope)
    else:
        exec(source, scope)
        init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {**{f.name: f.type for f in fields if f.init}, "return": None}
    return init


_BUILT: list[_LazyInit] = []  # every class frozen has built, for the module below


class _LazyInit:
    """A class's `__init__`, made (_init) the first time it is looked up: a run builds classes it never
    instantiates, and compiling one `__init__` is most of what `frozen` costs a class."""

    def __init__(self, cls: type, fields: list[dataclasses.Field[Any]], kw_only: bool) -> None:
        self.cls, self.fields, self.kw_only = cls, fields, kw_only
        _BUILT.append(self)

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        init = _init(self.cls, self.fields, self.kw_only)
        type.__setattr__(self.cls, "__init__", init)
        return init if obj is None else init.__get__(obj, owner)


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: type[_T], kw_only: bool = False) -> type[_T]:
    """`cls` as a frozen dataclass (see the module docstring); `kw_only`: its `__init__` takes every field by
    keyword, in any order of defaults, as `dataclass(frozen=True, kw_only=True)`'s."""
    fields: dict[str, dataclasses.Field[Any]] = {}
    for base in cls.__mro__[-1:0:-1]:  # inherited fields first, the furthest base's first, as dataclasses takes them
        fields.update(getattr(base, "__dataclass_fields__", {}))
    fields.update((f.name, f) for f in _own_fields(cls))
    listed = list(fields.values())
    defaulted = False  # refused as dataclasses refuses it, when the class is built (__init__ is compiled later)
    for f in listed:
        if not f.init or kw_only:
            continue
        if f.default is MISSING and f.default_factory is MISSING:
            if defaulted:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
        else:
            defaulted = True
    built: Any = cls  # given the attributes of a dataclass, and the shared methods
    built.__dataclass_fields__ = fields
    built.__dataclass_params__ = _PARAMS
    setattr(built, "__match_args__", () if kw_only else tuple(f.name for f in listed if f.init))  # noqa: B010 (mypy: a read-only name)
    built.__init__ = _LazyInit(cls, listed, kw_only)
    built.__frozen_fields__ = staticmethod(_getter([f.name for f in listed if f.compare]))
    built.__frozen_repr__ = tuple(f.name for f in listed if f.repr)
    built.__setattr__, built.__delattr__ = _setattr, _delattr
    for name, method in (("__eq__", _eq), ("__hash__", _hash), ("__repr__", _repr)):
        if name not in cls.__dict__:
            setattr(cls, name, method)
    return cls


# ------------------------------------------------------------------------------------------------ prebuilt inits

_HEADER = """\
# Generated by `python -m dpcost.frozen`: do not edit. Every @frozen class of dpcost's, its __init__ as
# dpcost.frozen writes it, so that Python compiles them once, into this module's .pyc. A class takes its entry
# only while the source below is the one it would compile (dpcost/frozen.py).
# mypy: ignore-errors
"""


def prebuilt_inits_source() -> str:
    """dpcost/_frozen_inits.py as the classes built so far in dpcost's modules would write it: for each, a function
    that takes the names its `__init__` reads and returns that `__init__`, and the source it was written from."""
    entries = sorted(
        (f"{lazy.cls.__module__}.{lazy.cls.__qualname__}", *_init_source(lazy.cls, lazy.fields, lazy.kw_only))
        for lazy in _BUILT
        if lazy.cls.__module__.startswith("dpcost.") and "<locals>" not in lazy.cls.__qualname__
    )

    def name(key: str) -> str:
        return "_" + key.replace(".", "_")

    out = [_HEADER]
    for key, source, scope in entries:
        body = "\n".join("    " + line for line in source.splitlines())
        out.append(f"\n\ndef {name(key)}({', '.join(scope)}):\n{body}\n    return __init__\n")
    out.append("\n\nINITS = {\n")
    out += [f"    {key!r}: ({source!r}, {name(key)}),\n" for key, source, _ in entries]
    out.append("}\n")
    return "".join(out)


def import_every_module() -> None:
    """Import each of dpcost's modules, so that every @frozen class in them is built."""
    import importlib
    import pkgutil

    import dpcost

    for info in pkgutil.walk_packages(dpcost.__path__, "dpcost."):
        if info.name not in ("dpcost.__main__", "dpcost._frozen_inits"):
            importlib.import_module(info.name)


if __name__ == "__main__":  # run as a script this is not dpcost.frozen, whose classes the modules register with
    from pathlib import Path

    from dpcost import frozen as registry

    registry.import_every_module()
    written = Path(registry.__file__).with_name("_frozen_inits.py")
    written.write_text(registry.prebuilt_inits_source())
    print(f"wrote {written}")
