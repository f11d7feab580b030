"""`--format json` (and markdown) of a few representative invocations, byte for byte (tests/golden/invocations.py
regenerates)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "golden"))
from invocations import HERE, goldens, run


@pytest.mark.parametrize("file", sorted(goldens()))
def test_output_is_unchanged(file: str) -> None:
    args, fmt = goldens()[file]
    expected = (HERE / file).read_text()
    assert run(args, fmt) == expected, f"regenerate with: python tests/golden/invocations.py ({file})"
