"""The docs say what the code does: every generated block of docs/*.md is current (docs/regenerate.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_generated_blocks_are_current() -> None:
    if not (DOCS / "regenerate.py").is_file():
        pytest.skip("docs/ is not beside the tests")
    spec = importlib.util.spec_from_file_location("regenerate", DOCS / "regenerate.py")
    assert spec is not None and spec.loader is not None
    regenerate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(regenerate)
    for path in sorted(DOCS.glob("*.md")):
        text = path.read_text()
        assert regenerate.refresh(text) == text, f"{path.name} is stale: run python docs/regenerate.py"
