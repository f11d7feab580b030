"""`dpcost.frozen` behaves as the standard library's `dataclass(frozen=True)`: each case builds the same class both
ways and holds `frozen`'s to what the dataclass does."""

from __future__ import annotations

import dataclasses
from dataclasses import FrozenInstanceError, dataclass, field

import pytest

from dpcost.frozen import frozen


def twins() -> tuple[type, type]:
    """One class, as `frozen` builds it and as `dataclass(frozen=True)` does."""

    def body() -> dict[str, object]:
        return {
            "__annotations__": {"op": "str", "size": "float", "note": "str", "tags": "tuple[str, ...]"},
            "note": field(default="", compare=False),
            "tags": field(default=(), repr=False),
            "__module__": __name__,
            "__qualname__": "Call",
        }

    ours = frozen(type("Call", (), body()))
    theirs = dataclass(frozen=True)(type("Call", (), body()))
    return ours, theirs


def test_equality_hash_and_repr_are_the_dataclasses() -> None:
    ours, theirs = twins()
    cases = [("all_reduce", 1.0, "", ()), ("all_reduce", 1.0, "other note", ()), ("all_gather", 2.0, "x", ("a",))]
    for a in cases:
        for b in cases:
            assert (ours(*a) == ours(*b)) is (theirs(*a) == theirs(*b))
            assert (ours(*a) != ours(*b)) is (theirs(*a) != theirs(*b))
            if theirs(*a) == theirs(*b):
                assert hash(ours(*a)) == hash(ours(*b))
        assert repr(ours(*a)) == repr(theirs(*a))  # tags (repr=False) left out, note (compare=False) shown
    assert len({ours(*c) for c in cases}) == len({theirs(*c) for c in cases}) == 2


def test_frozen_and_still_a_dataclass() -> None:
    ours, _ = twins()
    call = ours("all_reduce", 1.0)
    with pytest.raises(FrozenInstanceError):
        call.size = 2.0
    with pytest.raises(FrozenInstanceError):
        del call.op
    assert dataclasses.is_dataclass(call)
    assert [f.name for f in dataclasses.fields(call)] == ["op", "size", "note", "tags"]
    assert dataclasses.replace(call, size=3.0) == ours("all_reduce", 3.0)
    assert dataclasses.asdict(call) == {"op": "all_reduce", "size": 1.0, "note": "", "tags": ()}


def test_other_classes_never_equal_and_own_methods_kept() -> None:
    @frozen
    class A:
        x: int

    @frozen
    class B:
        x: int

        def __repr__(self) -> str:
            return "B!"

    assert A(1) != B(1) and A(1) == A(1) and A(1) != A(2)
    assert (A(1) == 1) is False  # NotImplemented both ways: Python falls back to identity
    assert repr(B(1)) == "B!" and repr(A(1)).endswith("A(x=1)")
