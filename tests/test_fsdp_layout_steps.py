"""benchmarks/fsdp_layout_steps.py: torchtitan's published FSDP2 runs with TP or CP, and the README's table of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import load_benchmark

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_fsdp_layout_steps_table_is_current() -> None:
    """The README's table is what `python benchmarks/fsdp_layout_steps.py` prints today."""
    if not README.is_file():
        pytest.skip("README.md is not beside the tests")
    bench = load_benchmark("fsdp_layout_steps")
    fresh = bench.markdown(bench.runs()).splitlines()
    text = README.read_text().splitlines()
    start = text.index(fresh[0])
    assert text[start : start + len(fresh)] == fresh


def test_a_rank_s_step_is_its_tokens_over_torchtitan_s_tps() -> None:
    """torchtitan's tps divides a rank's tokens by TP x CP: PR #1690's FSDP 4 x TP 8 row, 16 sequences of 4,096 a
    data-parallel rank at 876 tps, is a 9.35 s step, so 876 tokens/s per GPU over the job's 32 GPUs."""
    bench = load_benchmark("fsdp_layout_steps")
    run = bench.runs()[0]
    assert (run.source, run.tp, run.cp, run.local_batch, run.seq_len, run.published) == (
        "tt-pr1690",
        8,
        1,
        16,
        4096,
        876,
    )
    step = run.local_batch * run.seq_len / (run.published * run.tp * run.cp)
    assert step == pytest.approx(9.35, abs=0.01)
