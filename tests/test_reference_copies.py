"""The repo's copies of the team's shared reference data still match the originals (when present).

Files gathered later from public sources (most of tests/reference/nccl-tests/, tests/reference/nccl/) have no
shared original; each states its own source in its header and in tests/reference/README.md."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REFERENCE

SHARED = Path(__file__).resolve().parents[2] / "shared" / "reference"
COPIED = (
    "seed-gradient-volumes.csv",
    "zero-paper-table1.csv",
    "nccl-tests/dgx-h100-x2-all_reduce.log",
    "nccl-tests/h100-ndr-x2-ring-all_reduce.csv",
    "nccl-tests/b200-x1-reduce_scatter_all_gather.csv",
    "training-runs/llm-foundry-h100.csv",
    *(f"training-runs/mpt/mpt-{size}.yaml" for size in ("125m", "350m", "760m", "1b", "3b", "7b", "13b", "30b", "70b")),
)


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/reference is not beside this checkout")
def test_copies_are_identical() -> None:
    for name in COPIED:
        assert (SHARED / name).read_bytes() == (REFERENCE / name).read_bytes(), name


def test_every_reference_file_says_where_it_comes_from() -> None:
    """Every file is named in tests/reference/README.md, or, for a folder of a source's own files (mlperf/v6.0), in
    the README.md of a folder above it, which that README's row in tests/reference/README.md names."""
    readme = (REFERENCE / "README.md").read_text()
    for path in REFERENCE.rglob("*"):
        if path.is_file() and path.name != "README.md" and path.parent.name not in ("hf-configs", "mpt"):
            folders = [p for p in path.parents if p != REFERENCE and REFERENCE in p.parents]
            own = [(p / "README.md").read_text() for p in folders if (p / "README.md").is_file()]
            relative = [str(path.relative_to(p)) for p in folders if (p / "README.md").is_file()]
            listed = path.name in readme or any(r in text for r, text in zip(relative, own, strict=True))
            assert listed, f"{path.name} is not listed in tests/reference/README.md or its folder's README.md"
