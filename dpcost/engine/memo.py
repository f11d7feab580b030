"""Results kept per live object: the specs are frozen (pydantic, frozen=True), so what is computed from one never
goes stale, and a search, a sweep or a calibration fit asks for it many times. An entry goes when its object does
(weakref.finalize), so no other object can take its id while it is kept."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import TypeVar

__all__ = ["per_object"]

T = TypeVar("T")
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
