"""Results kept per live object: the specs are frozen (pydantic, frozen=True), so what is computed from one never
goes stale, and a search, a sweep or a calibration fit asks for it many times. An entry goes when its object does
(weakref.finalize), so no other object can take its id while it is kept. `cached_property`: a value computed once
per object, stored on it."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar, overload

__all__ = ["cached_property", "per_object", "per_object_and_key"]

T = TypeVar("T")
K = TypeVar("K")
R = TypeVar("R")


def per_object(fn: Callable[[T], R]) -> Callable[[T], R]:
    """`fn(obj)` computed once for each live `obj` (which must not change: a frozen spec)."""
    kept: dict[int, R] = {}

    @functools.wraps(fn)
    def once(obj: T) -> R:
        key = id(obj)
        if key in kept:
            return kept[key]
        value = kept[key] = fn(obj)
        weakref.finalize(obj, kept.pop, key, None)
        return value

    return once


def per_object_and_key(fn: Callable[[T, K], R]) -> Callable[[T, K], R]:
    """`fn(obj, key)` computed once for each live `obj` (frozen, as per_object's) and hashable `key`."""

    def values(obj: T) -> dict[K, R]:
        return {}

    by_key = per_object(values)

    @functools.wraps(fn)
    def once(obj: T, key: K) -> R:
        known = by_key(obj)
        if key in known:
            return known[key]
        value = known[key] = fn(obj, key)
        return value

    return once


class cached_property(Generic[R]):
    """functools.cached_property as Python 3.12 has it: the first read computes the value and stores it in the
    instance's __dict__, where later reads find it without calling this descriptor. Python 3.11's takes a lock
    shared by every instance of the class on each first read (python/cpython#87634, removed in 3.12 by #101890):
    an estimate builds about 16 StageMemory objects (engine/memory.py) and reads seven of these on each, 8% of its
    time under cProfile. Not thread-safe, as 3.12's is not. The pydantic specs keep functools' (pydantic leaves it
    out of a model's fields; another descriptor it would refuse), computed once per spec."""

    def __init__(self, fn: Callable[[Any], R]) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> cached_property[R]: ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> R: ...

    def __get__(self, instance: object | None, owner: type | None = None) -> R | cached_property[R]:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.fn(instance)
        return value
