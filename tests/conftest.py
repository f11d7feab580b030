"""Shared fixtures: the catalog specs and the repo's copy of the public reference data."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from dpcost.catalog import load_model, load_topology
from dpcost.specs import ModelSpec, TopologySpec

REFERENCE = Path(__file__).parent / "reference"


def read_reference_csv(name: str) -> list[dict[str, str]]:
    """A reference CSV without its '#' provenance lines."""
    lines = [ln for ln in (REFERENCE / name).read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    return list(csv.DictReader(lines))


@pytest.fixture(scope="session")
def h100() -> TopologySpec:
    return load_topology("dgx-h100")


@pytest.fixture(scope="session")
def llama70b() -> ModelSpec:
    return load_model("llama-70b")
