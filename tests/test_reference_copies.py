"""The repo's copies of the public reference data still match the team's shared originals (when present)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REFERENCE

SHARED = Path(__file__).resolve().parents[2] / "shared" / "reference"


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/reference is not beside this checkout")
def test_copies_are_identical() -> None:
    copies = [p for p in REFERENCE.rglob("*") if p.is_file() and p.name != "README.md" and "hf-configs" not in p.parts]
    assert len(copies) == 5
    for copy in copies:
        original = SHARED / copy.relative_to(REFERENCE)
        assert original.read_bytes() == copy.read_bytes(), copy
