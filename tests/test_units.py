"""Unit strings at the edge (dpcost/units.py)."""

from __future__ import annotations

import pytest

from dpcost.units import (
    UnitError,
    fmt_bytes,
    fmt_count,
    fmt_seconds,
    parse_bandwidth,
    parse_bytes,
    parse_count,
    parse_flops,
    parse_fraction,
    parse_message_size,
    parse_seconds,
    parse_whole,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("80GB", 80e9),
        ("80 GB", 80e9),
        ("25MiB", 25 * 2**20),
        ("1.5TB", 1.5e12),
        ("512B", 512.0),
        (4096, 4096.0),
        ("141GB", 141e9),
        ("2KiB", 2048.0),
    ],
)
def test_parse_bytes(text: object, expected: float) -> None:
    assert parse_bytes(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("450GB/s", 450e9), ("400Gbps", 50e9), ("400Gb/s", 50e9), ("3.35TB/s", 3.35e12), ("200 Gbps", 25e9)],
)
def test_parse_bandwidth_bits_and_bytes(text: str, expected: float) -> None:
    assert parse_bandwidth(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("text", "expected"), [("3us", 3e-6), ("2.5 us", 2.5e-6), ("1.5ms", 1.5e-3), ("100ns", 1e-7), ("2", 2.0)]
)
def test_parse_seconds(text: str, expected: float) -> None:
    assert parse_seconds(text) == pytest.approx(expected)


def test_message_sizes_follow_nccl_tests() -> None:
    assert parse_message_size("16G") == 2**34
    assert parse_message_size("64M") == 64 * 2**20
    assert parse_message_size("8") == 8
    assert parse_message_size("1MB") == 1e6


def test_counts_and_flops() -> None:
    assert parse_count("70B") == 70e9
    assert parse_count("65M") == 65e6
    assert parse_count("7.5e9") == 7.5e9
    assert parse_flops("989TFLOPS") == pytest.approx(9.89e14)
    assert parse_flops("2.25 PFLOP/s") == pytest.approx(2.25e15)


@pytest.mark.parametrize("bad", ["80 parsecs", "GB", "-", "1e999GB", "eighty", "80XB", "", None, True])
def test_bad_sizes_say_what_is_allowed(bad: object) -> None:
    with pytest.raises(UnitError, match="size"):
        parse_bytes(bad)


def test_bad_bandwidth_and_time() -> None:
    with pytest.raises(UnitError, match="450GB/s"):
        parse_bandwidth("450GB")
    with pytest.raises(UnitError, match="us"):
        parse_seconds("3 fortnights")


def test_formatting() -> None:
    assert fmt_bytes(141.1e9) == "141 GB"
    assert fmt_bytes(2**30, binary=True) == "1.00 GiB"
    assert fmt_seconds(0.733) == "733 ms"
    assert fmt_seconds(42e-6) == "42.0 us"
    assert fmt_count(70.554e9) == "70.55B"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("4096", 4096), (4096, 4096), ("8k", 8000), ("8K", 8000), ("8Ki", 8192), ("300K", 300_000), ("1e3", 1000),
     ("2M", 2_000_000), ("1Mi", 2**20), ("2.5k", 2500), ("-1", -1)],
)  # fmt: skip
def test_whole_numbers_take_si_and_binary_suffixes(text: object, expected: int) -> None:
    """SI prefixes are powers of 1000, binary ones (with an i) of 1024 (IEC 80000-13)."""
    assert parse_whole(text) == expected


@pytest.mark.parametrize("bad", ["8.5", "1.5k7", "8x", "abc", "", "nan", "inf", "1e999", True, None, "8 GB"])
def test_a_whole_number_that_is_not_one_says_how_to_write_it(bad: object) -> None:
    with pytest.raises(UnitError, match=r"an integer such as 8, 8k \(8000\) or 8Ki \(8192\)"):
        parse_whole(bad)


@pytest.mark.parametrize(("text", "expected"), [("40%", 0.4), ("0.4", 0.4), (0.4, 0.4), ("5 %", 0.05), ("100%", 1.0)])
def test_fractions_take_a_percentage(text: object, expected: float) -> None:
    assert parse_fraction(text) == pytest.approx(expected)


@pytest.mark.parametrize("bad", ["40 percent", "%", "x%", "0.4GB", "nan%", "", None])
def test_a_bad_fraction_says_how_to_write_it(bad: object) -> None:
    with pytest.raises(UnitError, match=r"0\.4 or 40%"):
        parse_fraction(bad)


@pytest.mark.parametrize(
    ("parse", "text", "shown"),
    [(parse_bytes, "70", "70GB or 70GiB"), (parse_bytes, 70, "70GB or 70GiB"), (parse_seconds, "7", "7s or 7ms"),
     (parse_bandwidth, "400", "400GB/s or 400Gbps")],
)  # fmt: skip
def test_a_written_size_rate_or_time_needs_its_unit(parse: object, text: object, shown: str) -> None:
    """`--max-memory 70` was 70 bytes, and the check failed: where a person writes the value, it needs its unit."""
    with pytest.raises(UnitError, match=f"without a unit: .* e.g. {shown}"):
        parse(text, unit_required=True)  # type: ignore[operator]
    assert parse(0, unit_required=True) == 0  # type: ignore[operator]  # 0 is 0 in any unit
    assert parse(text) == float(text)  # type: ignore[operator,arg-type]  # specs and the Python API: SI units
