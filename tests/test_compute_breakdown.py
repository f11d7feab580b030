"""The per-op model's report (issue 18): where one GPU's compute goes by part, the single-GPU step, and MFU and HFU
as their sources define them, with the figures in closed form from the architecture rather than from the code.

MFU and HFU: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", section 6
(HFU counts the recomputation's FLOPs, MFU does not); model FLOPs per token 6N + 12LHQT, of which the forward is
2N + 4LHQT (Chowdhery et al. 2022, PaLM, appendix B).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dpcost.catalog import load_model, load_topology
from dpcost.cli import app
from dpcost.engine.estimate import estimate
from dpcost.engine.report import ComputeBreakdown, EstimateReport
from dpcost.options import Options

H100 = load_topology("dgx-h100")
LLAMA_8B = load_model("llama-8b")
# Llama 3.1 8B: L layers, H heads of Q, hidden h, FFN f, K key-value heads, V vocabulary; T = 4096 (the default)
L, H, Q, h, f, K, V, T = 32, 32, 128, 4096, 14336, 8, 128256, 4096
LAYER_MATMULS = h * (h + 2 * K * Q) + h * h + 3 * h * f  # query, key, value; output; gate, up, down
N = L * (LAYER_MATMULS + 2 * h) + h + V * h  # the weights a token multiplies: layers and their norms, final norm, head
PALM_MODEL = 6 * N + 12 * L * H * Q * T  # model FLOPs per token
PALM_FORWARD = 2 * N + 4 * L * H * Q * T


def ops(recompute: str, **given: object) -> tuple[EstimateReport, ComputeBreakdown]:
    report = estimate(LLAMA_8B, H100, Options(dp=8, compute_model="ops", recompute=recompute, **given))
    assert report.compute is not None
    return report, report.compute


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, ["estimate", "--model", "llama-8b", "--dp", "8", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_closed_form_counts_the_weights_the_report_counts() -> None:
    """N of the closed forms below is the report's own count of the weights a token multiplies."""
    report, _ = ops("none")
    assert report.model.params_active_excl_embedding == N


def test_without_recomputation_hfu_equals_mfu() -> None:
    """Korthikanti et al., section 6: HFU differs from MFU by the recomputation's FLOPs alone."""
    report, c = ops("none")
    tokens = T * report.setup.micro_batch * report.setup.accumulation
    assert c.model_flops_per_step == pytest.approx(PALM_MODEL * tokens, rel=1e-12)
    assert c.hardware_flops_per_step == c.model_flops_per_step
    assert c.hfu == c.mfu
    assert c.single_gpu_hfu == c.single_gpu_mfu
    assert all(p.layer_recompute_seconds == 0 for p in c.parts)


def test_full_recomputation_adds_one_forward_of_the_layers_to_hfu() -> None:
    """Full recomputation runs every layer's forward once more in the backward (Korthikanti et al., section 5):
    HFU / MFU = (6N + 12LHQT + 2N' + 4LHQT) / (6N + 12LHQT), N' the layers' weights, the output head's apart."""
    report, c = ops("full")
    extra = PALM_FORWARD - 2 * V * h
    assert c.hfu / c.mfu == pytest.approx((PALM_MODEL + extra) / PALM_MODEL, rel=1e-12)
    assert c.single_gpu_hfu / c.single_gpu_mfu == pytest.approx((PALM_MODEL + extra) / PALM_MODEL, rel=1e-12)
    tokens = T * report.setup.micro_batch * report.setup.accumulation
    assert c.hardware_flops_per_step == pytest.approx((PALM_MODEL + extra) * tokens, rel=1e-12)


def test_full_recomputation_reruns_each_layers_forward_and_per_op_sac_half_its_matmuls() -> None:
    """Per layer, full recomputation re-runs the whole forward; torchtitan's per-op SAC (checkpointing.py) the half
    of the matmuls it did not save and the memory-bound ops, never the attention kernel, whose output it saves."""
    _, full = ops("full")
    for p in full.parts:
        assert p.layer_recompute_seconds == pytest.approx(p.layer_forward_seconds, rel=1e-12), p.part
    _, sac = ops("op")
    by = {p.part: p for p in sac.parts}
    assert by["matmuls"].layer_recompute_seconds == pytest.approx(0.5 * by["matmuls"].layer_forward_seconds)
    assert by["attention"].layer_recompute_seconds == 0
    assert by["memory-bound"].layer_recompute_seconds == pytest.approx(by["memory-bound"].layer_forward_seconds)


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_mfu_is_model_flops_over_the_step_times_the_peak(recompute: str) -> None:
    """MFU = model FLOPs / (step time x peak) (PaLM, appendix B): the report's time.mfu; the single-GPU step's
    differs from it by the ratio of the two steps."""
    report, c = ops(recompute)
    assert report.time is not None
    assert c.peak_flops == 989e12  # H100 SXM dense BF16
    assert c.mfu == report.time.mfu
    assert c.mfu == pytest.approx(c.model_flops_per_step / (report.time.step_seconds * 989e12), rel=1e-12)
    assert c.single_gpu_mfu / c.mfu == pytest.approx(report.time.step_seconds / c.single_gpu_step_seconds)


@pytest.mark.parametrize("recompute, accumulation", [("none", 1), ("full", 4), ("selective", 2)])
def test_the_parts_sum_to_the_compute_time(recompute: str, accumulation: int) -> None:
    """The four parts are the single-GPU step, which is the step's compute without stragglers (--skew 0); their
    shares sum to one. Per layer times every layer and micro-batch is all of the attention, and less than the
    matmuls and the memory-bound ops, which the head, the embedding and the loss add to outside the layers."""
    report, c = ops(recompute, accumulation=accumulation, skew=0.0)
    assert report.time is not None
    assert [p.part for p in c.parts] == ["matmuls", "attention", "memory-bound", "optimizer"]
    assert sum(p.seconds_per_step for p in c.parts) == pytest.approx(c.single_gpu_step_seconds, rel=1e-12)
    assert c.single_gpu_step_seconds == pytest.approx(report.time.compute_seconds, rel=1e-12)
    assert sum(p.share for p in c.parts) == pytest.approx(1.0, rel=1e-12)
    for p in c.parts[:3]:
        layers = L * accumulation * (p.layer_forward_seconds + p.layer_backward_seconds + p.layer_recompute_seconds)
        if p.part == "attention":
            assert layers == pytest.approx(p.seconds_per_step, rel=1e-12)
        else:
            assert layers < p.seconds_per_step, p.part


def test_the_parts_flops_are_what_the_kernels_execute() -> None:
    """Without recomputation: the matmuls 2mkn forward and 4mkn backward over every layer's and the head's weights,
    6 x (L x layer + Vh) per token; flash attention its causal half forward, 2 x T x s x H x 2Q / 2 per layer, and
    2.5 times that backward (FlashAttention-2's count); the memory-bound ops and the optimizer none."""
    report, c = ops("none")
    tokens = T * report.setup.micro_batch * report.setup.accumulation
    by = {p.part: p.flops_per_step for p in c.parts}
    assert by["matmuls"] == pytest.approx(6 * (L * LAYER_MATMULS + V * h) * tokens, rel=1e-12)
    assert by["attention"] == pytest.approx(3.5 * L * 2 * tokens * T * H * 2 * Q / 2, rel=1e-12)
    assert by["memory-bound"] == by["optimizer"] == 0


def test_the_breakdown_is_absent_with_the_flops_model() -> None:
    """--compute-model flops prices every FLOP at one efficiency: no parts to show, and no `compute` key (not a
    null). The default, op by op, shows them."""
    report = estimate(LLAMA_8B, H100, Options(dp=8, compute_model="flops"))
    assert report.compute is None
    assert estimate(LLAMA_8B, H100, Options(dp=8)).compute is not None
    assert "compute" not in json.loads(cli("--format", "json", "--compute-model", "flops"))
    assert "Compute, op by op" not in cli("--format", "markdown", "--compute-model", "flops")
    assert "Compute, op by op" not in cli("--format", "html", "--compute-model", "flops")
    serving = estimate(LLAMA_8B, H100, Options(dp=8, compute_model="ops", mode="inference"))
    assert serving.compute is None


def test_the_reports_show_the_table_mfu_hfu_and_a_bar_chart() -> None:
    """Markdown: the table, the MFU and HFU lines, and a text bar chart of the shares; html: the same table and the
    shares as an SVG bar chart; JSON: the section."""
    markdown = cli("--compute-model", "ops", "--recompute", "full", "--format", "markdown")
    section = markdown[markdown.index("### Compute, op by op") :]
    assert "| part | forward ms/layer | backward ms/layer | recompute ms/layer | s per step | share |" in section
    assert "MFU " in section and "HFU " in section and "single-GPU step: " in section
    chart = section[section.index("```text") : section.index("```", section.index("```text") + 3)]
    assert "share of one GPU's compute per step" in chart
    for part in ("matmuls", "attention", "memory-bound", "optimizer"):
        assert f"  {part} " in chart
    assert "|####" in chart
    html = cli("--compute-model", "ops", "--format", "html")
    assert "<h2>Compute, op by op</h2>" in html
    assert 'aria-label="share of one GPU&#x27;s compute per step, by part"' in html
    doc = json.loads(cli("--compute-model", "ops", "--format", "json"))
    assert [p["part"] for p in doc["compute"]["parts"]] == ["matmuls", "attention", "memory-bound", "optimizer"]


def test_fp4_peaks_are_the_datasheets_dense_figures() -> None:
    """Dense FP4 per GPU: DGX B200 144 PFLOPS FP4 with sparsity per 8 GPUs; GB200 NVL72 1,440 with sparsity per 72;
    GB300 NVL72 1,080 dense per 72; HGX and DGX B300 108 dense per 8. Hopper has none."""
    assert 8 * 2 * load_topology("dgx-b200").gpu.peak("nvfp4") == pytest.approx(144e15)
    assert 72 * 2 * load_topology("gb200-nvl72").gpu.peak("nvfp4") == pytest.approx(1440e15)
    assert 72 * load_topology("gb300-nvl72").gpu.peak("nvfp4") == pytest.approx(1080e15)
    assert 8 * load_topology("dgx-b300").gpu.peak("nvfp4") == pytest.approx(108e15)
    with pytest.raises(ValueError, match="no FP4 tensor cores"):
        H100.gpu.peak("nvfp4")


def test_nvfp4_matmuls_run_at_fp8s_share_of_the_fp4_peak() -> None:
    """With no sustained FP4 rate published, an NVFP4 matmul keeps FP8's share of its own peak (engine/rates.py): on
    GB300 (15 PFLOP/s FP4, 5 FP8) the matmuls take a third of FP8's time, and the casts grow from 5 bytes per
    element to 7.125 (ops.NVFP4_CAST), so the memory-bound part grows; MFU is against the FP4 peak."""
    gb300 = load_topology("gb300-nvl72")

    def parts(dtype: str) -> dict[str, float]:
        report = estimate(LLAMA_8B, gb300, Options(dp=8, compute_model="ops", recompute="none", compute_dtype=dtype))
        assert report.compute is not None
        return {p.part: p.layer_forward_seconds for p in report.compute.parts}

    fp8, fp4 = parts("fp8"), parts("nvfp4")
    assert fp4["matmuls"] == pytest.approx(fp8["matmuls"] / 3)
    assert fp4["memory-bound"] > fp8["memory-bound"]
    assert fp4["attention"] == pytest.approx(fp8["attention"])


def test_nvfp4_on_a_gpu_without_fp4_is_one_line_and_exit_2() -> None:
    result = CliRunner().invoke(app, ["estimate", "--model", "llama-8b", "--dp", "8", "--compute-dtype", "nvfp4"])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "--compute-dtype" in result.output and "FP4" in result.output
