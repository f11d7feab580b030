"""Domain errors. The CLI turns them into one line on stderr and an exit code; the library just raises."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["DpcostError", "InputError", "in_plain_words", "nearest", "shown_value"]


class DpcostError(Exception):
    """Base class of every error dpcost raises on purpose."""


class InputError(DpcostError):
    """Bad input: an unknown name, a malformed file, a value out of range (exit code 2).

    `where` names the file or flag, the message says which field and what is allowed.
    """

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        self.message = message
        super().__init__(f"{where}: {message}" if where else message)


# pydantic's error types in dpcost's words: what is allowed. The value given is added by in_plain_words.
_KINDS = {
    "missing": "required field is missing",
    "list_type": "expected a list",
    "dict_type": "expected a mapping of fields",
    "model_type": "expected a mapping of fields",
    "model_attributes_type": "expected a mapping of fields",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "finite_number": "expected a finite number",
    "string_type": "expected text",
}


def shown_value(value: Any) -> str:
    """A value as the user wrote it, cut short: a YAML date as its text, a mapping or list by its kind."""
    if isinstance(value, dict | list | tuple):
        return f"a {'mapping' if isinstance(value, dict) else 'list'} of {len(value)} item(s)"
    text = repr(value) if isinstance(value, str | int | float | bool) or value is None else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def in_plain_words(err: Mapping[str, Any]) -> str:
    """One pydantic error in dpcost's words, never pydantic's: what is allowed, and what was given."""
    kind, ctx, given = err["type"], err.get("ctx") or {}, err.get("input")
    shown = shown_value(given)
    if kind == "missing":
        return _KINDS[kind]
    if kind in _KINDS:
        return f"{_KINDS[kind]}, got {shown}"
    if kind in ("literal_error", "enum"):
        return f"must be one of {ctx.get('expected')}, got {shown}"
    if kind == "string_pattern_mismatch":
        return f"must match the pattern {ctx.get('pattern')}, got {shown}"
    if kind == "string_too_long":
        return f"takes at most {ctx.get('max_length')} characters"
    if kind == "string_too_short":
        return f"needs at least {ctx.get('min_length')} character(s)"
    if kind == "too_short":
        return f"needs at least {ctx.get('min_length')} item(s), got {ctx.get('actual_length')}"
    if kind == "too_long":
        return f"takes at most {ctx.get('max_length')} item(s), got {ctx.get('actual_length')}"
    if kind in ("value_error", "assertion_error"):
        message = str(err["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
        whole = isinstance(given, dict | list | tuple)  # a mapping's own check: the message names the field
        return message if "got " in message or whole else f"{message}, got {shown}"
    return f"not allowed here: {shown}"


def nearest(name: str, allowed: Sequence[str], n: int = 1) -> list[str]:
    """The allowed names closest to a name given wrong, for "did you mean" (difflib's ratio of at least 0.6)."""
    import difflib  # only for an error message

    return difflib.get_close_matches(name, allowed, n=n)
