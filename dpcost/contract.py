"""`Contract`: the frozen classes every output is made of, which are also its JSON contract.

A `Contract` subclass is a frozen dataclass (`dpcost.frozen`) whose fields each carry a description (`Field`). An
output is written by dumping it (`model_dump`, named and shaped as pydantic's), and its JSON Schema (`dpcost
schema`, docs/json.md) comes from a pydantic model mirrored from the class on demand (`schema_model`): a run that
only prints its answer builds no pydantic validator (a process's first estimate took 22 ms with pydantic reports, 10
ms with these, in-process timer).

A field holds what pydantic's lax mode would have made of the value: a `float` field given an int holds the float
(so JSON prints `2.0`, not `2`), as do `float | None`, `float | bool` (a bool stays a bool) and `dict[str, float]`.
Other fields hold what they are given; tests/test_contract.py holds the outputs to their mirrors (validated and
dumped again, byte for byte), so an int field given a float, or a misspelt Literal, fails there.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING
from typing import Any, Literal, TypeVar, dataclass_transform, get_args, get_origin

from dpcost.frozen import frozen

__all__ = ["Contract", "Field", "schema_model"]

_C = TypeVar("_C", bound="Contract")


def Field(default: Any = MISSING, *, default_factory: Callable[[], Any] | Any = MISSING, description: str) -> Any:
    """A field of a Contract class: its default (or factory) and the description its schema gives it."""
    return dataclasses.field(default=default, default_factory=default_factory, metadata={"description": description})


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


def _float_or_bool(value: Any) -> float | bool:
    return value if value.__class__ is bool else float(value)


def _float_values(value: dict[str, Any]) -> dict[str, float]:
    return {key: float(v) for key, v in value.items()}


def _converter(annotation: Any) -> Callable[[Any], Any] | None:
    """What pydantic's lax mode makes of a value for `annotation`, where that is not the value itself."""
    if annotation is float:
        return float
    args = set(get_args(annotation))
    if get_origin(annotation) in (typing.Union, types.UnionType):
        if args == {float, type(None)}:
            return _float_or_none
        if args == {float, bool}:
            return _float_or_bool
    if get_origin(annotation) is dict and get_args(annotation) == (str, float):
        return _float_values
    return None


def _plain(value: Any, exclude_none: bool) -> Any:
    """A field's value as pydantic's model_dump gives it: Contract objects as dicts, lists and dicts copied."""
    if isinstance(value, Contract):
        return value.model_dump(exclude_none=exclude_none)
    if value.__class__ is list:
        return [_plain(v, exclude_none) for v in value]
    if value.__class__ is dict:
        return {key: _plain(v, exclude_none) for key, v in value.items()}
    return value


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(Field,))
class Contract:
    """The base of every output class: frozen, its fields described, dumped as pydantic dumps a model."""

    __dataclass_fields__: typing.ClassVar[dict[str, dataclasses.Field[Any]]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063 (the class's own)
            convert = _converter(annotation)
            if convert is None:
                continue
            given = cls.__dict__.get(name, MISSING)
            field: Any = given if isinstance(given, dataclasses.Field) else dataclasses.field(default=given)
            field.metadata = types.MappingProxyType({**field.metadata, "convert": convert})
            setattr(cls, name, field)
        frozen(cls, kw_only=True)

    def model_dump(
        self,
        *,
        mode: Literal["python", "json"] = "python",
        exclude: set[str] | dict[str, Any] | None = None,
        exclude_none: bool = False,
    ) -> dict[str, Any]:
        """The fields as a dict, nested outputs as dicts (pydantic's model_dump: one form for both modes, as every
        value is already JSON's: str, int, float, bool, None, list, dict). `exclude` names fields to leave out, or
        maps a field to True (left out) or to what to leave out of the output it holds, as pydantic's does."""
        if isinstance(exclude, set):
            exclude = dict.fromkeys(exclude, True)
        out = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if value is None and exclude_none:
                continue
            inner = exclude.get(name) if exclude else None
            if inner is True:
                continue
            if inner and isinstance(value, Contract):
                out[name] = value.model_dump(exclude=inner, exclude_none=exclude_none)
            else:
                out[name] = _plain(value, exclude_none)
        return out

    def model_copy(self: _C, *, update: dict[str, Any]) -> _C:
        """A copy with the fields of `update` replaced (pydantic's model_copy)."""
        return dataclasses.replace(self, **update)

    @classmethod
    def model_validate(cls: type[_C], doc: Any) -> _C:
        """`doc` (a dict, as model_dump gives) validated by the class's pydantic mirror and built as the class; a
        pydantic ValidationError names what is wrong."""
        built: _C = _built(cls, schema_model(cls).model_validate(doc).model_dump())
        return built

    @classmethod
    def model_validate_json(cls: type[_C], text: str | bytes) -> _C:
        """As model_validate, from JSON text."""
        built: _C = _built(cls, schema_model(cls).model_validate_json(text).model_dump())
        return built


def _built(annotation: Any, value: Any) -> Any:
    """`value` (validated and dumped by a mirror) built back as `annotation` says: Contract classes from dicts."""
    if value is None:
        return None
    if isinstance(annotation, type) and issubclass(annotation, Contract):
        return annotation(**{f.name: _built(f.type, value[f.name]) for f in dataclasses.fields(annotation)})
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is list:
        return [_built(args[0], v) for v in value]
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _built(inner[0], value) if len(inner) == 1 else value
    return value


def _mirrored(annotation: Any) -> Any:
    """`annotation` with each Contract class replaced by its pydantic mirror."""
    if isinstance(annotation, type) and issubclass(annotation, Contract):
        return schema_model(annotation)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is list:
        return list[_mirrored(args[0])]  # type: ignore[misc]
    if origin is dict:
        return dict[_mirrored(args[0]), _mirrored(args[1])]  # type: ignore[misc]
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(_mirrored(a) for a in args)]  # noqa: UP007 (built from a tuple)
    return annotation


_MIRRORS: dict[type[Contract], Any] = {}


def schema_model(cls: type[Contract]) -> Any:
    """The pydantic model mirroring `cls` (same name, docstring, fields, defaults and descriptions, extra keys
    forbidden): what `dpcost schema` and `model_validate` read."""
    from pydantic import ConfigDict, create_model
    from pydantic import Field as PydanticField

    if cls in _MIRRORS:
        return _MIRRORS[cls]
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        default: dict[str, Any] = {"default": f.default} if f.default is not MISSING else {}
        if f.default_factory is not MISSING:
            default = {"default_factory": f.default_factory}
        fields[f.name] = (_mirrored(f.type), PydanticField(description=f.metadata.get("description"), **default))
    _MIRRORS[cls] = create_model(
        cls.__name__,
        __config__=ConfigDict(extra="forbid", frozen=True),
        __doc__=cls.__doc__,
        __module__=cls.__module__,
        **fields,
    )
    return _MIRRORS[cls]
