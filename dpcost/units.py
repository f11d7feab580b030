"""Unit strings at the edge, SI floats inside.

YAML specs and CLI flags take strings such as "450GB/s", "400Gbps", "2.5us", "80GB" or "25MiB"; the engine
only ever sees bytes, seconds, bytes/s and FLOP/s as floats. Decimal prefixes are powers of 1000 (1 GB = 1e9
bytes, as in the ZeRO paper and nccl-tests' GB/s); binary ones are spelled with an "i" (1 GiB = 2**30 bytes).

The one exception is `parse_message_size`, which follows nccl-tests' own `-b 8 -e 16G` convention: a bare
K/M/G suffix is binary there (16G = 16 GiB).

One grammar for every flag and plan file: whole numbers take SI or binary suffixes (`8k` = 8000, `8Ki` = 8192,
`300K`), fractions a percentage (`40%` = 0.4), and sizes, rates and times their unit. Where a person writes the
value (`unit_required=True`: flags and plan files) a size, bandwidth or time without its unit is refused, with a
message that shows how to write it: `70` is not 70 bytes.
"""

from __future__ import annotations

import math
import re

from dpcost.errors import shown_value

__all__ = [
    "UnitError",
    "fmt_bandwidth",
    "fmt_bytes",
    "fmt_count",
    "fmt_flops",
    "fmt_seconds",
    "parse_bandwidth",
    "parse_bytes",
    "parse_count",
    "parse_flops",
    "parse_fraction",
    "parse_message_size",
    "parse_number",
    "parse_seconds",
    "parse_whole",
]


class UnitError(ValueError):
    """A unit string that does not parse; the message says what is allowed."""


_NUMBER = r"(?P<num>[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)"
_DECIMAL = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}


# The largest value each kind may take: far beyond any real machine, small enough that no arithmetic on it
# overflows. Anything larger is a typo (1e300GB) and is refused with this bound in the message.
_LIMITS = {
    "a size": (1e18, "1EB"),
    "a message size": (2.0**50, "1PiB"),
    "a bandwidth": (1e15, "1PB/s"),
    "a time": (1e6, "1e6s (11.6 days)"),
    "a compute rate": (1e19, "10EFLOPS"),
    "a count": (1e16, "10000T"),
}


_show = shown_value  # the user's value for a message, cut short (a 400-digit number says nothing more)


def _split(text: object, what: str, example: str) -> tuple[float, str]:
    if isinstance(text, bool):
        raise UnitError(f"expected {what} such as {example!r}, got {_show(text)}")
    try:
        if isinstance(text, int | float):
            value, unit = float(text), ""
        elif isinstance(text, str):
            m = re.fullmatch(_NUMBER + r"\s*(?P<unit>[A-Za-zµμ/]*)", text.strip())
            if not m:
                raise UnitError(f"expected {what} such as {example!r}, got {_show(text)}")
            value, unit = float(m.group("num")), m.group("unit")
        else:
            raise UnitError(f"expected {what} such as {example!r}, got {_show(text)}")
    except OverflowError:
        value, unit = math.inf, ""
    if not math.isfinite(value):
        raise UnitError(f"expected {what} such as {example!r}, got {_show(text)} (not finite)")
    return value, unit


def _bounded(value: float, text: object, what: str) -> float:
    """The parsed value, if finite and within the kind's limit."""
    limit, spelled = _LIMITS[what]
    if not math.isfinite(value) or value > limit:
        raise UnitError(f"{what[2:]} {_show(text)} is beyond {spelled}; check the number and its unit")
    return value


def _prefix(prefix: str, text: object, what: str, example: str) -> float:
    if prefix in _BINARY:
        return _BINARY[prefix]
    if prefix in _DECIMAL:
        return _DECIMAL[prefix]
    raise UnitError(f"expected {what} such as {example!r}, got {_show(text)} (unknown prefix {prefix!r})")


def _unit_given(value: float, unit: str, text: object, what: str, spelled: str) -> None:
    """Refuse a number a person wrote without its unit, showing how to write it (0 is 0 in any unit)."""
    if unit == "" and value != 0:
        number = f"{value:g}"
        raise UnitError(f"got {_show(text)} without a unit: write {what} with its unit, e.g. {spelled.format(number)}")


def parse_bytes(text: object, unit_required: bool = False) -> float:
    """'80GB' -> 8e10, '25MiB' -> 26214400.0, '512B' -> 512.0; a bare number is bytes, unless a unit is
    required."""
    value, unit = _split(text, "a size", "80GB")
    if unit_required:
        _unit_given(value, unit, text, "a size", "{0}GB or {0}GiB")
    if unit in ("", "B"):
        return _bounded(value, text, "a size")
    if not unit.endswith("B"):
        raise UnitError(f"expected a size such as '80GB' or '25MiB', got {_show(text)}")
    return _bounded(value * _prefix(unit[:-1], text, "a size", "80GB"), text, "a size")


def parse_message_size(text: object) -> float:
    """nccl-tests' convention: '8', '64K', '16M', '16G' are binary (16G = 2**34 bytes); 'MB'/'MiB' also work."""
    value, unit = _split(text, "a message size", "64M")
    if unit in ("K", "M", "G", "T"):
        return _bounded(value * _BINARY[unit + "i"], text, "a message size")
    return _bounded(parse_bytes(text), text, "a message size")


def parse_bandwidth(text: object, unit_required: bool = False) -> float:
    """Bytes per second: '450GB/s' -> 4.5e11; bits with a lower-case b: '400Gbps' or '400Gb/s' -> 5e10.
    A bare number is bytes per second, unless a unit is required."""
    value, unit = _split(text, "a bandwidth", "450GB/s")
    if unit_required:
        _unit_given(value, unit, text, "a bandwidth", "{0}GB/s or {0}Gbps")
    if unit == "":
        return _bounded(value, text, "a bandwidth")
    m = re.fullmatch(r"(?P<prefix>[kKMGTP]i?)?(?P<base>B/s|Bps|b/s|bps)", unit)
    if not m:
        raise UnitError(f"expected a bandwidth such as '450GB/s' or '400Gbps', got {_show(text)}")
    scale = _prefix(m.group("prefix") or "", text, "a bandwidth", "450GB/s")
    return _bounded(value * scale / (8.0 if m.group("base") in ("b/s", "bps") else 1.0), text, "a bandwidth")


_TIME = {"h": 3600.0, "min": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ns": 1e-9}


def parse_seconds(text: object, unit_required: bool = False) -> float:
    """'3us' -> 3e-6, '1.5ms' -> 1.5e-3; a bare number is seconds, unless a unit is required."""
    value, unit = _split(text, "a time", "3us")
    if unit_required:
        _unit_given(value, unit, text, "a time", "{0}s or {0}ms")
    if unit not in _TIME and unit != "":
        raise UnitError(f"expected a time such as '3us' or '1.5ms' (units: h, min, s, ms, us, ns), got {_show(text)}")
    return _bounded(value * _TIME.get(unit, 1.0), text, "a time")


def parse_flops(text: object) -> float:
    """FLOP/s: '989TFLOPS', '989 TFLOP/s' -> 9.89e14."""
    value, unit = _split(text, "a compute rate", "989TFLOPS")
    m = re.fullmatch(r"(?P<prefix>[kKMGTP]?)(?:FLOPS|FLOP/s|flops|flop/s)", unit)
    if unit != "" and not m:
        raise UnitError(f"expected a compute rate such as '989TFLOPS', got {_show(text)}")
    return _bounded(value * (_DECIMAL[m.group("prefix")] if m else 1.0), text, "a compute rate")


_COUNT = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12, **_BINARY}


def parse_count(text: object) -> float:
    """A count: '70e9', '70B', '65M', '1.5T', '300K', '8Ki' (B is billions here, not bytes)."""
    value, unit = _split(text, "a count", "70B")
    if unit not in _COUNT:
        raise UnitError(f"expected a count such as '70B', '65M' or '7.5e9', got {_show(text)}")
    return _bounded(value * _COUNT[unit], text, "a count")


_WHOLE = {**_DECIMAL, **_BINARY}


def parse_whole(text: object) -> int:
    """A whole number: 4096, '8k' -> 8000, '8Ki' -> 8192, '300K', '1e3', '2M'. SI suffixes are powers of 1000,
    binary ones (with an i) of 1024; what is left must be whole. A sign is kept for the caller's bound to judge."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    expected = f"expected an integer such as 8, 8k (8000) or 8Ki (8192), got {_show(text)}"
    sign = 1
    if isinstance(text, str) and text.strip().startswith("-"):
        sign, text = -1, text.strip()[1:]
    try:
        value, unit = _split(text, "a whole number", "8k")
    except UnitError:
        raise UnitError(expected) from None
    if unit not in _WHOLE:
        raise UnitError(expected)
    number = value * _WHOLE[unit]  # its bound is the caller's (--dp's is not a parameter count's)
    if not math.isfinite(number):
        raise UnitError(expected)
    if number != int(number):
        raise UnitError(f"{expected} (not whole)")
    return sign * int(number)


def parse_number(text: object) -> float:
    """A plain, finite number: 2, '1.5', '1e3'."""
    value, unit = _split(text, "a number", "1.5")
    if unit:
        raise UnitError(f"expected a number such as 2 or 1.5, got {_show(text)}")
    return value


def parse_fraction(text: object) -> float:
    """A fraction: 0.4, or a percentage: '40%' -> 0.4."""
    percent = isinstance(text, str) and text.strip().endswith("%")
    try:
        value = parse_number(str(text).strip()[:-1] if percent else text)
    except UnitError:
        raise UnitError(f"expected a fraction such as 0.4 or 40%, got {_show(text)}") from None
    return value / 100 if percent else value


def _scaled(value: float, units: list[tuple[float, str]], digits: int = 3) -> str:
    for scale, name in units:
        if abs(value) >= scale:
            return f"{_sig(value / scale, digits)} {name}"
    scale, name = units[-1]
    return f"{_sig(value / scale, digits)} {name}"


def _sig(x: float, digits: int) -> str:
    """Round to `digits` significant figures without scientific notation (1234.5 -> '1235', 1.234 -> '1.23')."""
    if x == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    return f"{x:.{decimals}f}"


def fmt_bytes(n: float, binary: bool = False) -> str:
    """1.41e11 -> '141 GB' (decimal by default; binary=True gives GiB)."""
    if binary:
        units = [(2.0**50, "PiB"), (2.0**40, "TiB"), (2.0**30, "GiB"), (2.0**20, "MiB"), (2.0**10, "KiB"), (1, "B")]
    else:
        units = [(1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1, "B")]
    return _scaled(n, units)


def fmt_seconds(t: float) -> str:
    """0.733 -> '733 ms', 4.2e-5 -> '42.0 us', 72454 -> '20.1 h'."""
    return _scaled(t, [(3600.0 * 10, "h"), (1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")])


def fmt_bandwidth(bps: float) -> str:
    """3.84e11 -> '384 GB/s'."""
    return _scaled(bps, [(1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"), (1, "B/s")])


def fmt_flops(f: float) -> str:
    """9.89e14 -> '989 TFLOP/s'."""
    return _scaled(f, [(1e15, "PFLOP/s"), (1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1, "FLOP/s")])


def fmt_count(n: float) -> str:
    """7.0554e10 -> '70.55B' (four significant figures: parameter counts are compared to 0.5%)."""
    return _scaled(n, [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K"), (1, "")], digits=4).replace(" ", "")
