"""`frozen`: a frozen dataclass, built for start-up.

Python 3.11's `dataclass(frozen=True)` compiles six methods for every class, one `exec` each (`dataclasses.py`
`_create_fn`): about 1 ms a class here, and dpcost's ~70 of them cost a CLI call 5-8% of its time before it has done
anything. `frozen` keeps the three that depend on the class's own fields (`__init__`, and the frozen `__setattr__`
and `__delattr__`, generated as dataclasses generates them) and shares one `__eq__`, `__hash__` and `__repr__` among
all its classes, each reading the fields through one `operator.attrgetter` made per class. They compare, hash and
print as the dataclass's would: equal when of the same class with equal fields, hashed on them, `Name(field=value,
...)`. `dataclasses.fields`, `replace` and `field(...)` work as on any dataclass.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform

__all__ = ["frozen"]

_T = TypeVar("_T")


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


def _getter(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The fields `names` of an object as one tuple (attrgetter returns a bare value for one name)."""
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda obj: (one(obj),)
    if not names:
        return lambda obj: ()
    return operator.attrgetter(*names)


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: type[_T]) -> type[_T]:
    """`cls` as a frozen dataclass whose equality, hash and repr are the shared ones above."""
    built = dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)
    fields = dataclasses.fields(built)  # type: ignore[arg-type]
    built.__frozen_fields__ = staticmethod(_getter([f.name for f in fields if f.compare]))  # type: ignore[attr-defined]
    built.__frozen_repr__ = tuple(f.name for f in fields if f.repr)  # type: ignore[attr-defined]
    for name, method in (("__eq__", _eq), ("__hash__", _hash), ("__repr__", _repr)):
        if name not in cls.__dict__:
            setattr(built, name, method)
    return built
