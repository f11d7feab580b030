"""A Mamba-2 hybrid's layers op by op and in a layout (issue 19): what Megatron-Core's Mamba mixer, attention-only and
MLP-only layers run (docs/sources/mamba-hybrid-layouts.md). Expected values are the note's, summed here from its
per-kernel tables, or counted from the model's hybrid_override_pattern."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dpcost.catalog import load_model, load_topology
from dpcost.cli import app
from dpcost.engine.compute import mixer_recurrence_flops
from dpcost.engine.layout import Layout
from dpcost.engine.layout_estimate import layout_step, stage_loads
from dpcost.engine.layout_step import layer_tp_pairs, stage_tp_pairs
from dpcost.engine.ops import has_layer_ops, layer_ops, ssd_backward_flops, ssd_forward_bytes, tensor_parallel
from dpcost.engine.params import count_params
from dpcost.engine.pipeline_layout import ranks_of_stages
from dpcost.specs import ModelArchitecture, ModelSpec

CONFIGS = Path(__file__).parent / "reference" / "hf-configs"
NANO_PATTERN = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"  # Nemotron 3 Nano's hybrid_override_pattern


def model(name: str) -> ModelSpec:
    return load_model(str(CONFIGS / name))


def arch(name: str) -> ModelArchitecture:
    a = model(name).architecture
    assert a is not None
    return a


def test_ssd_forward_bytes_are_the_five_kernels_reads_and_writes() -> None:
    """Section 4's table at Nemotron 3 Nano's shapes (I 4096, H 64, G 8, N 128, Q 128), kernel by kernel."""
    i, h, g, n, q = 4096, 64, 8, 128, 128
    cumsum = 2 * h + 8 * h
    chunk_state = 2 * i + 2 * g * n + 8 * h + 4 * i * n / q
    state_passing = 4 * i * n / q + 2 * i * n / q
    bmm = 4 * g * n + 4 * g * q
    chunk_scan = 4 * g * q + 2 * i + 2 * i + 2 * g * n + 2 * i * n / q + 8 * h + 2 * i + 2 * i
    assert ssd_forward_bytes(i, h, g, n, q) == cumsum + chunk_state + state_passing + bmm + chunk_scan == 108_160


def test_ssd_flops_are_the_notes_counts() -> None:
    """Nemotron-H 8B (I 8192, G 8, N 128, Q 128): forward 6.55 MFLOP/token (section 4); backward the recomputed
    cumsum, CB, chunk_state and state_passing (2IN + 2QGN), then dstates 2IN, dx 2IN + 2QI, dB 2IN, dC 2IN, dCB 2QI,
    two bmm backwards 2QGN each and ddA_cumsum 2QI."""
    a = arch("nemotron-h-8b-base-8k.json")
    assert a.ssm is not None and a.ssm.chunk == 128
    assert mixer_recurrence_flops(a, "mamba") == pytest.approx(6.55e6, rel=1e-3)
    i, g, n, q = 8192, 8, 128, 128
    listed = (2 * i * n + 2 * q * g * n) + 2 * i * n + (2 * i * n + 2 * q * i) + 2 * i * n + 2 * i * n + 2 * q * i
    listed += 2 * (2 * q * g * n) + 2 * q * i
    assert ssd_backward_flops(i, g, n, q) == listed


def test_a_mamba_layer_runs_megatrons_mixer_and_no_mlp() -> None:
    """Nemotron-H 8B's M layer: in_proj h -> 2I + 2GN + H (z, x, B, C, dt), the convolution, the scan, the gated norm,
    out_proj I -> h; no attention and no MLP."""
    a = arch("nemotron-h-8b-base-8k.json")
    t = 4096
    ops = layer_ops(a, False, t, 4096, "fused", mixer="mamba", mlp=False)
    names = [op.name for op in ops]
    assert names == [
        "input norm", "in projection", "causal convolution", "chunked scan", "gated norm", "out projection",
        "residual add",
    ]  # fmt: skip
    by_name = {op.name: op for op in ops}
    assert by_name["in projection"].shape == (t, 4096, 2 * 8192 + 2 * 8 * 128 + 128)
    assert by_name["out projection"].shape == (t, 8192, 4096)
    # causal-conv1d: reads and writes 2 bytes per channel of x, B, C forward; the backward re-runs it and reads x
    # and the gradient, writing dx (4C + 6C)
    channels = 8192 + 2 * 8 * 128
    assert by_name["causal convolution"].bytes == 4 * channels * t
    assert by_name["causal convolution"].backward_bytes == 10 * channels * t
    assert by_name["chunked scan"].flops == pytest.approx(6.55e6 * t, rel=1e-3)


def test_megatrons_mixer_copies_its_sequence_first_tensors_around_the_scan_for_more_than_one_sequence() -> None:
    """mamba_mixer.py _ssm_training (d7288711): rearrange(zxBCdt, "l b d -> b l d").contiguous() before the scan and
    rearrange(y, "b l d -> l b d").contiguous() after it, each read and written once in 16 bits, their gradients
    copied back in the backward; with one sequence a micro-batch the transposes are views. transformers' mixer works
    batch-first and copies nothing."""
    a = arch("nemotron-h-8b-base-8k.json")

    def copies(tokens: int, kernels: str) -> list[tuple[float, float]]:
        ops = layer_ops(a, False, tokens, 4096, kernels, mixer="mamba", mlp=False)
        return [(op.bytes, op.backward_bytes) for op in ops if op.name == "layout copies"]

    t = 2 * 4096
    projected, inner = 2 * 8192 + 2 * 8 * 128 + 128, 8192
    assert copies(t, "fused") == [(2 * 2 * (projected + inner) * t,) * 2]
    assert copies(4096, "fused") == [] == copies(t, "eager")


def test_mlp_and_attention_only_layers() -> None:
    """The '-' layer: a norm, the MLP and its residual add, no mixer; the '*' layer: attention without an MLP."""
    a = arch("nemotron-h-8b-base-8k.json")
    mlp_only = [op.name for op in layer_ops(a, False, 1024, 4096, "fused", mixer="none")]
    assert mlp_only == ["post-attention norm", "MLP up", "MLP down", "MLP activation", "residual add"]
    attention_only = [op.name for op in layer_ops(a, False, 1024, 4096, "fused", mlp=False)]
    assert "attention" in attention_only and not [n for n in attention_only if n.startswith("MLP")]
    assert attention_only[-1] == "residual add" and "post-attention norm" not in attention_only


def test_the_mixer_splits_over_tp_by_heads() -> None:
    """Every tensor of the mixer is split over TP (section 1): one rank runs 1/t of the conv, scan and norm."""
    a = arch("nemotron-h-8b-base-8k.json")
    whole = {op.name: op for op in layer_ops(a, False, 4096, 4096, "fused", mixer="mamba", mlp=False)}
    split = {op.name: op for op in tensor_parallel(whole.values(), 4, False)}
    for name in ("causal convolution", "chunked scan", "gated norm"):
        assert split[name].bytes == whole[name].bytes / 4
    assert split["in projection"].shape[2] == whole["in projection"].shape[2] / 4
    assert split["input norm"].bytes == whole["input norm"].bytes  # full width without sequence parallelism


def test_tp_pairs_follow_the_pattern() -> None:
    """One column- and row-parallel pair for each M, * and - layer, and for each E with a shared expert (Nano's
    one: an MLP on the TP group, its routed experts going to the dispatcher; section 2), two for a GPT layer."""
    a = arch("nemotron-3-nano-30b-a3b.json")
    pattern = "".join("M" if a.mixer(i) == "mamba" else "*" if a.mixer(i) == "attention" else
                      "E" if a.moe_layer(i) else "-" for i in range(a.layers))  # fmt: skip
    assert pattern == NANO_PATTERN
    assert a.moe is not None and a.moe.shared == 1
    assert [layer_tp_pairs(a, i) for i in range(a.layers)] == [1] * len(pattern)
    assert stage_tp_pairs(a, ranks_of_stages([a.layers])) == a.layers == 52
    assert stage_tp_pairs(a, ranks_of_stages([26, 26])) == 26
    llama = load_model("llama-70b").architecture
    assert llama is not None and stage_tp_pairs(llama, ranks_of_stages([40, 40])) == 80


def test_stage_flops_put_attention_on_attention_layers_and_the_scan_on_mamba_layers() -> None:
    m = model("nemotron-h-8b-base-8k.json")
    a = m.architecture
    assert a is not None
    (stage,) = stage_loads(m, Layout(dp=8), 4096)
    blocks = count_params(m).blocks
    for i, flops in enumerate(stage.layer_forward_flops):
        mixer = a.mixer(i)
        assert flops > 2 * blocks[i].active if mixer != "none" else flops == 2 * blocks[i].active
        if mixer == "mamba":
            assert flops == 2 * blocks[i].active + mixer_recurrence_flops(a, "mamba")


def test_a_nemotron_3_layout_is_timed_and_mamba_cp_refused() -> None:
    m = model("nemotron-3-nano-30b-a3b.json")
    topology = load_topology("dgx-b200")
    batch = {"micro_batch": 2, "global_batch": 512, "seq_len": 8192, "mfu": 0.4, "compute_model": "ops"}
    step = layout_step(m, topology, Layout(ep=8, dp=8), **batch)
    assert step.step > 0 and step.micro_batches == 32
    with pytest.raises(ValueError, match="context-parallel all-to-alls"):
        layout_step(m, topology, Layout(cp=2, ep=8, dp=4), **batch)
    with pytest.raises(ValueError, match="not costed yet"):
        layout_step(model("jamba-1.5-mini.json"), topology, Layout(tp=2, dp=4), **batch)


def test_which_hybrids_have_layer_ops() -> None:
    assert has_layer_ops(arch("nemotron-h-8b-base-8k.json"))
    assert has_layer_ops(arch("mamba-codestral-7b.json"))  # Mamba-2 alone
    assert not has_layer_ops(arch("jamba-1.5-mini.json"))  # Mamba-1
    assert not has_layer_ops(arch("falcon-mamba-7b.json"))


def test_estimate_times_a_mamba2_hybrid_op_by_op_and_in_a_layout() -> None:
    """Pure data parallelism of a Mamba-2 hybrid is op by op unless --compute-model says otherwise; a layout runs,
    but for CP of its Mamba layers and a TP that splits a head or a group (mamba_mixer.py's asserts)."""
    path = str(CONFIGS / "nemotron-h-8b-base-8k.json")
    result = CliRunner().invoke(app, ["estimate", "-m", path, "--dp", "8", "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["setup"]["compute_model"] == "ops"
    layout = CliRunner().invoke(app, ["estimate", "-m", path, "--dp", "4", "--tp", "2", "--format", "json"])
    assert layout.exit_code == 0, layout.stderr
    for flags, flag in ((["--dp", "2", "--tp", "2", "--cp", "2"], "--cp"), (["--dp", "2", "--tp", "3"], "--tp")):
        refused = CliRunner().invoke(app, ["estimate", "-m", path, *flags])
        assert refused.exit_code == 2 and refused.stderr.startswith(f"dpcost: error: {flag}: "), refused.stderr
        assert refused.stderr.count("\n") == 1


def test_plan_searches_a_mamba2_hybrids_layouts_without_cp() -> None:
    result = CliRunner().invoke(
        app, ["plan", "-m", str(CONFIGS / "nemotron-h-8b-base-8k.json"), "--gpus", "64", "--format", "json"]
    )
    assert result.exit_code == 0, result.stderr
    plans = json.loads(result.stdout)["plans"]
    assert plans and all(p["cp"] == 1 for p in plans) and any(p["tp"] > 1 for p in plans)


def test_a_hybrids_layout_holds_its_own_layers() -> None:
    """Each layer's parameters as its kind holds them [H]: the block sums to count_params' layers and final norm; a
    Mamba layer's all split over TP but for its norm."""
    from dpcost.engine.layout_memory import model_shape, transformer_block_parameters

    m = model("nemotron-h-8b-base-8k.json")
    a = m.architecture
    assert a is not None
    counts = count_params(m)
    shape = model_shape(a, 1)
    assert transformer_block_parameters(shape).total == sum(b.params for b in counts.blocks) + 4096
    mamba = next(i for i in range(a.layers) if a.mixer(i) == "mamba")
    assert shape.layer(mamba).replicated == 4096 and shape.layer(mamba).tp_sharded == counts.blocks[mamba].params - 4096


def test_activation_halves_sum_to_korthikantis_layer() -> None:
    """[K] Table 2 at f = 4h: the attention and MLP halves make sbh(34/t) with SP and sbh(10 + 24/t) without."""
    from dpcost.engine.layout_memory import attention_half_bytes, layer_activation_bytes, mlp_half_bytes

    s, b, h, t = 4096, 2, 8192, 8
    for sp in (True, False):
        halves = attention_half_bytes(s, b, h, t, sp) + mlp_half_bytes(s, b, h, 4 * h, t, sp)
        assert halves == pytest.approx(layer_activation_bytes(s, b, h, 4 * h, t, sp))
    assert attention_half_bytes(s, b, h, t, True) + mlp_half_bytes(s, b, h, 4 * h, t, True) == s * b * h * 34 / t


def test_a_mamba_layer_keeps_what_the_fused_path_saves() -> None:
    """Section 3's table for Nemotron-H 8B at t = 1, row by row: the layer input and norm output (2h each), the
    norm's rstd (4), zxbcdt 2(2I + 2GN + H), the scan's output before and after gating (2I each), the gated norm's
    rstd (4G) and out_proj's input (2I): 102,692 bytes a token."""
    from dpcost.engine.layout_memory import mamba_layer_bytes

    h, inner, heads, groups, state = 4096, 8192, 128, 8, 128
    rows = [2 * h, 2 * h, 4, 2 * (2 * inner + 2 * groups * state + heads), 2 * inner, 2 * inner, 4 * groups, 2 * inner]
    assert mamba_layer_bytes(1, 1, h, (inner, heads, groups, state), 1, False) == sum(rows) == 102_692
    # under TP 4 with SP everything is split; without SP the input, norm output and rstd stay whole
    assert mamba_layer_bytes(1, 1, h, (inner, heads, groups, state), 4, True) == sum(rows) / 4
    assert mamba_layer_bytes(1, 1, h, (inner, heads, groups, state), 4, False) == 4 * h + 4 + sum(rows[3:]) / 4


def test_a_mamba_layer_keeps_its_dropout_mask_only_with_dropout() -> None:
    """Megatron-Core's Mamba layer adds its mixer's output to the residual through a bias-dropout-add
    (mamba_layer.py mamba_bda, @d98e8a64dd), whose mask is a byte an element of the held hidden states with hidden
    dropout and nothing at p = 0 (torch's dropout returns its input)."""
    import dataclasses

    from dpcost.engine.layout_memory import MemoryLayout, hybrid_layer_bytes, model_shape

    shape = model_shape(arch("nemotron-h-8b-base-8k.json"), 2)
    mamba = next(i for i, kind in enumerate(shape.hybrid_kinds) if kind[0] == "mamba")
    layout = MemoryLayout(tp=2, sequence_parallel=True)
    dropped_out = dataclasses.replace(shape, dropout=True)
    without = dataclasses.replace(shape, dropout=False)
    assert (
        hybrid_layer_bytes(dropped_out, layout, 4096, 1, mamba) - hybrid_layer_bytes(without, layout, 4096, 1, mamba)
        == 4096 * shape.hidden / 2
    )


def _scan_kernel_rows() -> list[tuple[str, str, int, int, int, int, int, float]]:
    """The forward timings of the whole mamba_chunk_scan_combined at training sizes (65,536 tokens and more) on
    H200 and B200 in tests/reference/compute-rates/mamba2-ssd-kernels.md: (source, GPU, tokens, I, N, G, Q, ms)."""
    path = Path(__file__).parent / "reference" / "compute-rates" / "mamba2-ssd-kernels.md"
    rows = []
    for line in path.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 12 or not cells[0].startswith(("tile-ai/TileOPs#1557", "flashinfer")):
            continue
        gpu = "h200" if "H200" in cells[1] else "b200" if "B200" in cells[1] else ""
        batch, seq, heads, head_dim, state, groups, chunk = (int(c) for c in cells[4:11])
        if gpu and batch * seq >= 65536:
            rows.append((cells[0], gpu, batch * seq, heads * head_dim, state, groups, chunk, float(cells[11])))
    return rows


def test_the_scan_runs_at_its_kernels_measured_rate() -> None:
    """The scan op's forward time against the kernel benchmarks its rate was taken from (in sample): each row within
    a third, and their geometric mean error under 10%."""
    from dpcost.engine.ops import Op, times
    from dpcost.engine.rates import SSD_FLOPS_PER_HBM_BYTE, rates_for

    rows = _scan_kernel_rows()
    assert len(rows) == 12 and {r[1] for r in rows} == {"h200", "b200"}
    errors = []
    for _, gpu_name, tokens, inner, state, groups, chunk, ms in rows:
        gpu = load_topology("hgx-h200" if gpu_name == "h200" else "dgx-b200").gpu
        flops = tokens * (4.0 * inner * state + 2.0 * chunk * groups * state + 2.0 * chunk * inner)
        scan = Op("scan", "mamba", "memory", flops, 0.0, 5, 0.0, 0.0, 0, flops_per_hbm_byte=SSD_FLOPS_PER_HBM_BYTE)
        seconds = times([scan], rates_for(gpu), gpu.bf16_dense, gpu.bf16_dense, gpu.hbm_bandwidth, 4096, "cudnn")
        predicted = seconds.forward_seconds * 1e3
        assert abs(predicted / ms - 1) < 1 / 3, (gpu_name, tokens, inner, predicted, ms)
        errors.append(abs(math.log(predicted / ms)))
    assert math.exp(sum(errors) / len(errors)) - 1 < 0.10


def _tfla_series() -> dict[tuple[str, int, int], tuple[float, float]]:
    """compute-rates/mamba2-ssd-tfla-h100.csv: (kernel, heads, groups) -> median forward and forward+backward ms over
    its eight batch x seqlen splits of 65,536 tokens."""
    import csv
    import statistics

    text = (CONFIGS.parent / "compute-rates" / "mamba2-ssd-tfla-h100.csv").read_text().splitlines()
    rows = [r for r in csv.DictReader(line for line in text if not line.startswith("#")) if r["kernel"] != "flashattn3"]
    series: dict[tuple[str, int, int], list[dict[str, str]]] = {}
    for r in rows:
        assert int(r["batch"]) * int(r["seqlen"]) == 65536
        series.setdefault((r["kernel"], int(r["nheads"]), int(r["ngroups"])), []).append(r)
    return {
        key: (statistics.median(float(r["fw_ms"]) for r in rs), statistics.median(float(r["fwbw_ms"]) for r in rs))
        for key, rs in series.items()
    }


def test_the_scans_forward_and_backward_against_a_held_out_h100_benchmark() -> None:
    """Held out (read after the scan's rate was set): the TFLA paper's timings of mamba_ssm's own kernels on an H100
    (NX-AI/mlstm_kernels at 0172609), head dim 64, state 64, chunk 256, 65,536 tokens. dpcost's scan (with the
    causal convolution where mamba_split_conv1d_scan_combined runs it) against the measured forward + backward:
    -5% at 128 heads, -24% at 64 heads with one group, -4% at 64 heads with a group per head; each within a quarter.
    The forward alone reads 47-56% slow (these kernels run ~17.5 FLOPs per byte/s of H100 bandwidth forward, not 12)
    and the backward fast in proportion: the rate holds for a training step's sum, not for each pass. The authors'
    suspect series (128 heads, a group per head: forward + backward 20x its forward) is left out."""
    from dpcost.engine.ops import times
    from dpcost.engine.rates import rates_for
    from dpcost.specs import SSMSpec

    base = arch("nemotron-h-8b-base-8k.json")
    gpu = load_topology("dgx-h100").gpu
    measured = _tfla_series()
    assert set(measured) == {
        ("mamba2", 128, 1),
        ("mamba2", 64, 1),
        ("mamba2_noconv", 128, 128),
        ("mamba2_noconv", 64, 64),
    }
    for (kernel, heads, groups), (_, forward_backward) in measured.items():
        if (kernel, heads) == ("mamba2_noconv", 128):
            continue
        ssm = SSMSpec(version=2, inner=64 * heads, state=64, heads=heads, groups=groups, chunk=256)
        ops = layer_ops(base.model_copy(update={"ssm": ssm}), False, 65536, 4096, "fused", mixer="mamba", mlp=False)
        ran = {"chunked scan", "causal convolution"} if kernel == "mamba2" else {"chunked scan"}
        t = times([op for op in ops if op.name in ran], rates_for(gpu), gpu.bf16_dense, gpu.bf16_dense,
                  gpu.hbm_bandwidth, 4096, "flash2")  # fmt: skip
        predicted = (t.forward_seconds + t.backward_seconds) * 1e3
        assert abs(predicted / forward_backward - 1) < 0.25, (kernel, heads, groups, predicted, forward_backward)


def test_a_mamba2_model_without_attention_splits_only_its_mixers_heads() -> None:
    """Mamba-Codestral-7B has no attention layer: TP 8 divides its 128 Mamba heads and 8 groups, and no attention
    head count binds it."""
    path = str(CONFIGS / "mamba-codestral-7b.json")
    result = CliRunner().invoke(app, ["estimate", "-m", path, "--dp", "8", "--tp", "8", "--format", "json"])
    assert result.exit_code == 0, result.stderr
