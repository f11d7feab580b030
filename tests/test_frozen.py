"""`dpcost.frozen` behaves as the standard library's `dataclass(frozen=True)`: each case builds the same class both
ways and holds `frozen`'s to what the dataclass does."""

from __future__ import annotations

import dataclasses
from dataclasses import FrozenInstanceError, dataclass, field
from pathlib import Path
from typing import ClassVar

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


def test_init_defaults_factories_and_post_init_as_the_dataclass() -> None:
    import inspect

    def body() -> dict[str, object]:
        def __post_init__(self: object) -> None:
            object.__setattr__(self, "seen", (*self.seen, "post"))  # type: ignore[attr-defined]

        return {
            "__annotations__": {
                "op": "str", "limit": "ClassVar[int]", "size": "float", "note": "str", "tags": "list[str]",
                "seen": "tuple[str, ...]", "derived": "int",
            },
            "limit": 7,
            "size": 1.0,
            "tags": field(default_factory=list, compare=False),
            "note": field(default="n", repr=False),
            "seen": field(default=(), init=False),
            "derived": field(default=3, init=False),
            "__post_init__": __post_init__,
            "__module__": __name__,
            "__qualname__": "Op",
        }  # fmt: skip

    ours = frozen(type("Op", (), body()))
    theirs = dataclass(frozen=True)(type("Op", (), body()))
    assert str(inspect.signature(ours)) == str(inspect.signature(theirs))
    assert ClassVar  # imported, so that dataclasses reads the string annotation as one
    assert ours.__match_args__ == theirs.__match_args__  # type: ignore[attr-defined]
    for args, kwargs in [(("a",), {}), (("a", 2.0, "x", ["t"]), {}), (("a",), {"tags": ["u"], "note": "y"})]:
        mine, std = ours(*args, **kwargs), theirs(*args, **kwargs)
        assert dataclasses.asdict(mine) == dataclasses.asdict(std)
        assert repr(mine) == repr(std) and mine == ours(*args, **kwargs)
    assert ours("a").tags is not ours("a").tags  # a fresh list each time, as default_factory gives
    assert ours.limit == 7 and ours.size == 1.0 and "tags" not in ours.__dict__  # class attributes as dataclasses
    assert [f.name for f in dataclasses.fields(ours)] == [f.name for f in dataclasses.fields(theirs)]


def test_subclass_fields_follow_the_base_and_bad_classes_are_refused() -> None:
    @frozen
    class Base:
        x: int
        y: int = 2

        def __post_init__(self) -> None:
            if self.x < 0:
                raise ValueError("x")

    @frozen
    class Child(Base):
        z: str = "z"

    c = Child(1, 3, "w")
    assert (c.x, c.y, c.z) == (1, 3, "w") and repr(c).endswith("Child(x=1, y=3, z='w')")
    assert dataclasses.replace(c, z="v") == Child(1, 3, "v") and Child(1) != Base(1)
    with pytest.raises(ValueError):
        Child(-1)
    with pytest.raises(FrozenInstanceError):
        c.z = "u"
    with pytest.raises(ValueError, match="mutable default"):
        frozen(type("Bad", (), {"__annotations__": {"xs": "list[int]"}, "xs": []}))
    with pytest.raises(TypeError, match="non-default argument"):
        frozen(type("Bad", (), {"__annotations__": {"a": "int", "b": "int"}, "a": 1}))


def test_kw_only_takes_fields_by_keyword_in_any_order_as_the_dataclass() -> None:
    def body() -> dict[str, object]:
        return {"__annotations__": {"a": "int", "b": "int", "c": "str"}, "a": 1, "__qualname__": "K"}

    ours = frozen(type("K", (), body()), kw_only=True)
    theirs = dataclass(frozen=True, kw_only=True)(type("K", (), body()))
    for cls in (ours, theirs):
        with pytest.raises(TypeError):
            cls(1, 2, "x")
    assert repr(ours(b=2, c="x")) == repr(theirs(b=2, c="x")) == "K(a=1, b=2, c='x')"
    assert ours.__match_args__ == theirs.__match_args__ == ()
    assert dataclasses.replace(ours(b=2, c="x"), a=5) == ours(a=5, b=2, c="x")


def test_a_fields_convert_is_applied_to_what_init_is_given() -> None:
    ours = frozen(
        type("C", (), {"__annotations__": {"x": "float"}, "x": field(default=0, metadata={"convert": float})})
    )
    assert type(ours(3).x) is float and ours(3).x == 3.0


def test_the_prebuilt_inits_are_current() -> None:
    """dpcost/_frozen_inits.py is what `python -m dpcost.frozen` writes from dpcost's classes now. Where it is not,
    run that command: until then a changed class compiles its own `__init__`, correct but slower to start."""
    import dpcost.frozen as registry

    registry.import_every_module()
    written = Path(registry.__file__).with_name("_frozen_inits.py")
    assert written.read_text() == registry.prebuilt_inits_source(), "stale: run python -m dpcost.frozen"


def test_each_prebuilt_init_sets_what_the_compiled_one_sets() -> None:
    """Every shipped class's `__init__` from dpcost/_frozen_inits.py leaves an instance as the one compiled from the
    same source does: given a distinct stand-in for each field it takes, or refused alike (a converter, a
    __post_init__)."""
    import inspect

    import dpcost.frozen as registry
    from dpcost._frozen_inits import INITS

    registry.import_every_module()
    checked = 0
    for lazy in registry._BUILT:
        key = f"{lazy.cls.__module__}.{lazy.cls.__qualname__}"
        if key not in INITS:
            continue
        source, scope = registry._init_source(lazy.cls, lazy.fields, lazy.kw_only)
        prebuilt = INITS[key][1](**scope)
        exec(source, compiled := dict(scope))
        params = list(inspect.signature(compiled["__init__"]).parameters.values())[1:]
        given = {p.name: object() for p in params if p.default is inspect.Parameter.empty}
        outcomes = []
        for init in (prebuilt, compiled["__init__"]):
            obj = object.__new__(lazy.cls)
            try:
                init(obj, **given)
                outcomes.append(dict(vars(obj)))
            except Exception as exc:  # a stand-in a converter refuses: refused alike
                outcomes.append(type(exc))
        assert outcomes[0] == outcomes[1], key
        checked += 1
    assert checked == len(INITS) > 100


def test_a_class_whose_source_moved_on_compiles_its_own_init(monkeypatch: pytest.MonkeyPatch) -> None:
    """A class named as a shipped one but with other fields does not take the shipped one's `__init__`; the shipped
    one does."""
    import dpcost.frozen as registry
    from dpcost._frozen_inits import INITS
    from dpcost.engine.step import Phase

    monkeypatch.setattr(registry, "_PREBUILT", INITS)
    shipped = registry._init(Phase, list(dataclasses.fields(Phase)), False)
    assert shipped.__code__.co_filename.endswith("_frozen_inits.py")
    body = {"__annotations__": {"only": "int"}, "__module__": "dpcost.engine.step", "__qualname__": "Phase"}
    moved = frozen(type("Phase", (), body))
    try:
        assert vars(moved(3)) == {"only": 3}
        assert not moved.__init__.__code__.co_filename.endswith("_frozen_inits.py")
    finally:  # out of the registry, which the tests above write the module from
        registry._BUILT[:] = [lazy for lazy in registry._BUILT if lazy.cls is not moved]
