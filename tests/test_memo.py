"""engine/memo.py: per_object_and_key keeps one value per live object and key; its cached_property keeps
functools.cached_property's contract (computed on the first read of each instance, then read from the instance)
without Python 3.11's class-wide lock."""

from dpcost.engine.memo import cached_property
from dpcost.frozen import frozen


@frozen
class Box:
    side: float
    calls: list[str]

    @cached_property
    def area(self) -> float:
        """The side squared."""
        self.calls.append("area")
        return self.side**2


def test_computed_once_per_instance_and_stored_on_it() -> None:
    calls: list[str] = []
    one, two = Box(3.0, calls), Box(4.0, calls)
    assert (one.area, one.area, two.area) == (9.0, 9.0, 16.0)
    assert calls == ["area", "area"]
    assert one.__dict__["area"] == 9.0  # later reads find the value, not the descriptor


def test_reads_as_functools_does_on_the_class_without_its_lock() -> None:
    assert isinstance(Box.area, cached_property)
    assert Box.area.__doc__ == "The side squared."
    assert not hasattr(Box.area, "lock")  # Python 3.11's functools.cached_property holds a class-wide RLock


class Spec:
    """A stand-in for a frozen spec: compared by identity, weakly referable."""


def test_per_object_and_key_computes_once_per_object_and_key_and_forgets_with_the_object() -> None:
    import gc

    from dpcost.engine.memo import per_object_and_key

    calls: list[tuple[int, int]] = []

    @per_object_and_key
    def scaled(spec: Spec, k: int) -> int:
        calls.append((id(spec), k))
        return 10 * k

    one, two = Spec(), Spec()
    assert [scaled(one, 1), scaled(one, 1), scaled(one, 2), scaled(two, 1)] == [10, 10, 20, 10]
    assert calls == [(id(one), 1), (id(one), 2), (id(two), 1)]
    del one
    gc.collect()
    three = Spec()  # may take the freed id: it must not find the old entries
    scaled(three, 1)
    assert len(calls) == 4 and calls[-1] == (id(three), 1)
