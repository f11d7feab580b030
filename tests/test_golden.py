"""`--format json` of a few representative invocations, byte for byte (tests/golden/invocations.py regenerates)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "golden"))
from invocations import HERE, INVOCATIONS, run


@pytest.mark.parametrize("name", sorted(INVOCATIONS))
def test_json_output_is_unchanged(name: str) -> None:
    expected = (HERE / f"{name}.json").read_text()
    assert run(INVOCATIONS[name]) == expected, f"regenerate with: python tests/golden/invocations.py ({name})"
