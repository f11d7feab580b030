"""benchmarks/memory_peaks.py: the README's table of measured peaks is today's output, and the instrument reads
the reference data as it should (units, which points it costs, the ZeRO paper's baseline)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import load_benchmark, read_reference_csv

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
Compared = tuple[list[Any], list[Any]]  # the benchmark's (rows costed, points left out)


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_benchmark("memory_peaks")


@pytest.fixture(scope="module")
def compared(bench: ModuleType) -> Compared:
    result: Compared = bench.compare(bench.peaks(bench.CSV) + bench.peaks(bench.HOLDOUT))
    return result


def test_the_memory_peaks_table_is_current(bench: ModuleType, compared: Compared) -> None:
    """The README's table is what `python benchmarks/memory_peaks.py --markdown` prints today."""
    if not README.is_file():
        pytest.skip("README.md is not beside the tests")
    fresh = bench.markdown(*compared).splitlines()
    text = README.read_text().splitlines()
    start = text.index(fresh[0])
    assert text[start : start + len(fresh)] == fresh


def test_every_point_is_costed_or_says_why(bench: ModuleType, compared: Compared) -> None:
    rows, left = compared
    measured = len(read_reference_csv("memory-peaks/measured-peaks.csv"))
    held_out = len(read_reference_csv("memory-peaks/holdout-peaks.csv"))
    assert len(rows) + len(left) == measured + held_out == 81 + 93
    in_sample = [r for r in rows if r.peak.sample == "in sample"]
    # 45 in sample: the 32 data-parallel points, meg-llmaction's 6 TP/PP points costed as layouts (issue 19),
    # tt-h100-2412's 3 FSDP x CP points (--framework fsdp --cp) and its 4 Llama 3.1 405B points of Table 6 (FSDP x TP
    # x PP, 3 of them with CP: --framework fsdp --pp); 48 held out, 4 of them torchtitan's FSDP with TP (tt-pr1690,
    # Qwen3 32B: --framework fsdp --tp)
    assert (len(in_sample), len(rows) - len(in_sample)) == (45, 48)
    assert sum(1 for r in rows if r.peak.tp * r.peak.pp > 1) == 14
    assert sum(1 for r in rows if r.peak.tp > 1 and r.peak.framework == "fsdp") == 8
    assert sum(1 for r in rows if r.peak.pp > 1 and r.peak.framework == "fsdp") == 4
    assert sum(1 for r in rows if r.peak.cp > 1 and r.peak.framework == "fsdp") == 6
    assert all(p.left_out for p in left)
    # Only litgpt's config hub lacks model specs (its Llama 3.2 1B, Phi, Gemma, StableLM rows, most suspect anyway).
    assert {p.source for p in left if p.left_out.startswith(("no model", "no catalog"))} == {"lit-confighub"}
    assert {r.peak.source for r in in_sample} == {
        "tt-h100-2412", "tt-h200-trainy", "ao-float8-h100", "ao-float8-mi300x", "ao-mx-b200", "meg-llmaction",
        "tune-readme-flags", "lit-thunder", "lit-confighub",
    }  # fmt: skip


def test_a_percentage_is_of_the_capacity_the_source_states(bench: ModuleType) -> None:
    """torchtitan PR #165 prints eager peaks as a percentage of its 95.0396 GiB H100."""
    rows = read_reference_csv("memory-peaks/holdout-peaks.csv")
    for p, row in zip(bench.peaks(bench.HOLDOUT), rows, strict=True):
        if row["measured_unit"] == "%":
            assert "95.0396 GiB" in row["gpu"]
            assert p.measured_bytes == pytest.approx(float(row["measured_value"]) / 100 * 95.0396 * 2**30)


def test_units_are_converted_exactly(bench: ModuleType) -> None:
    by_number = {p.number: p for p in bench.peaks()}
    assert by_number[1].measured_bytes == 82.4 * 2**30  # torchtitan, GiB
    assert by_number[71].measured_bytes == 8696.8515625 * 2**20  # Megatron's 'MB' is MiB
    assert by_number[55].measured_bytes == 22.13e9  # litgpt divides by 1e9
    # torchao prints 'GB' over torchtitan's GiB log lines; the notes say so, and the benchmark reads GiB.
    rows = read_reference_csv("memory-peaks/measured-peaks.csv")
    for number, row in enumerate(rows, 1):
        if row["source_id"] in bench.PRINTED_GB_MEANS_GIB:
            assert row["measured_unit"] == "GB" and "i.e. max reserved in GiB" in row["notes"]
            assert by_number[number].measured_bytes == float(row["measured_value"]) * 2**30


def test_the_baseline_is_the_zero_papers_figure_1(bench: ModuleType) -> None:
    """ZeRO (Rajbhandari et al. 2020) Figure 1: 7.5B parameters, N = 64, K = 12: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB."""
    psi, n = 7.5e9, 64
    assert bench.zero_paper_model_states(psi, n, 0) == (2 + 2 + 12) * psi == 120e9
    assert bench.zero_paper_model_states(psi, n, 1) == pytest.approx(2 * psi + 2 * psi + 12 * psi / n)
    assert bench.zero_paper_model_states(psi, n, 2) == pytest.approx(2 * psi + (2 + 12) * psi / n)
    assert bench.zero_paper_model_states(psi, n, 3) == pytest.approx((2 + 2 + 12) * psi / n)
    printed = [120, 31.4, 16.6, 1.9]
    assert [round(bench.zero_paper_model_states(psi, n, s) / 1e9, 1) for s in range(4)] == printed


def test_the_gpu_enters_the_prediction_through_its_gemm_workspaces_alone(bench: ModuleType, compared: Compared) -> None:
    """Runs on GPUs without a catalog topology (MI300X, A800, the 96 GB H100) take a stand-in: only fair if the
    allocated and reserved predictions read no property of the GPU but its generation's GEMM workspaces
    (engine/workspaces.py; the context, outside the allocator, enters only an nvidia-smi reading)."""
    from dpcost import load_topology
    from dpcost.engine.workspaces import training_workspace_bytes

    rows, _ = compared
    for r in rows:
        if r.peak.kind != "nvidia-smi":
            arch = load_topology(bench._topology(r.peak.gpu)).gpu.arch
            te = r.peak.framework == "megatron" or r.peak.tp * r.peak.pp > 1
            moved = training_workspace_bytes("hopper", te) - training_workspace_bytes(arch, te)
            assert bench.predict(r.peak, "dgx-h100") - r.predicted == pytest.approx(moved, abs=1.0), r.peak.number


def test_errors_and_geomean_as_the_other_benchmarks_define_them(bench: ModuleType, compared: Compared) -> None:
    rows, _ = compared
    r = rows[0]
    assert r.error == r.predicted / r.peak.measured_bytes - 1
    assert bench.geomean([0.1, -0.4]) == pytest.approx(0.2)
    assert bench.geomean([0.0]) == pytest.approx(1e-4)


def test_megatron_gpt2_345m_is_built_from_its_arguments(bench: ModuleType) -> None:
    from dpcost.engine.params import count_params

    spec = bench.model_spec("gpt2-345m")
    a = spec.architecture
    assert (a.layers, a.hidden, a.heads, a.vocab, a.learned_positions, a.dropout) == (24, 1024, 16, 50304, 1024, 0.1)
    assert count_params(spec).total == pytest.approx(0.355e9, rel=0.005)  # the CSV's nominal params_b


def test_a_run_that_never_reshards_after_forward_is_costed_as_zero_2(bench: ModuleType) -> None:
    """torchtitan's `reshard_after_forward_policy 'never'` keeps the gathered weights to the backward: FSDP's
    SHARD_GRAD_OP, ZeRO-2, as dpcost's torchtitan reader maps `fsdp_reshard_after_forward = "never"` (docs/from.md);
    'default' and 'always' reshard, ZeRO-3."""
    row = {"framework": "torchtitan", "optimizer": "adamw"}
    never = "fsdp2-full (reshard_after_forward_policy 'never': parameters stay unsharded from forward to backward)"
    assert bench._framework({**row, "sharding": never}) == ("fsdp", 2)
    for policy in ("default", "always"):
        sharding = f"fsdp2-full (reshard_after_forward_policy '{policy}')"
        assert bench._framework({**row, "sharding": sharding}) == ("fsdp", 3)
