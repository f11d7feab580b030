"""Muon (engine/muon.py): one momentum where AdamW keeps two on the weight matrices, and each matrix's Newton-Schulz
iteration at the step (emerging_optimizers muon_utils.py at 0001f6e; Megatron-LM d98e8a64dd; docs/sources/muon.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli_report, run_cli

from dpcost import estimate
from dpcost.catalog import load_model, load_topology
from dpcost.engine.muon import (
    Matrix,
    layer_matrices,
    lpt_makespan,
    managed_parameters,
    model_matrices,
    newton_schulz_flops,
    newton_schulz_seconds,
    orthogonalization_flops,
)
from dpcost.engine.params import count_params
from dpcost.engine.rates import rates_for

NEMOTRON_H = Path(__file__).parent / "reference" / "hf-configs" / "nemotron-h-8b-base-8k.json"


def test_one_step_of_the_iteration_is_three_matmuls_on_the_short_side() -> None:
    """newton_schulz_step on X (4 x 8 after the transpose to the smaller side): X X^T is 2 x 4 x 4 x 8 = 256 FLOPs,
    A A 2 x 4^3 = 128, B X 256: 640 a step, 3,200 over Megatron's 5; a tall matrix is transposed first."""
    assert newton_schulz_flops(4, 8) == 3200
    assert newton_schulz_flops(8, 4) == 3200
    assert newton_schulz_flops(4, 8, steps=1) == 640


def test_the_iteration_runs_at_the_sustained_bf16_matmul_rate() -> None:
    """fp32_matmul_prec "medium" converts X to BF16 before the loop: the GPU's BF16 dense peak at its GEMM share."""
    gpu = load_topology("dgx-h100").gpu
    assert newton_schulz_seconds(gpu, 1e15) == pytest.approx(1e15 / (gpu.bf16_dense * rates_for(gpu).gemm))
    assert newton_schulz_seconds(gpu, 0.0) == 0.0


def _greedy(costs: list[float], bins: int) -> float:
    """Graham's rule one item at a time: the costliest first, each to the least loaded bin."""
    loads = [0.0] * bins
    for cost in sorted(costs, reverse=True):
        loads[loads.index(min(loads))] += cost
    return max(loads)


@pytest.mark.parametrize(
    ("items", "bins"),
    [
        ([(3.0, 2), (2.0, 3)], 2),  # 3+2 / 3+2 / ... : 7 on one of two
        ([(5.0, 1), (1.0, 10)], 3),
        ([(1.0, 7)], 3),
        ([(13.0, 3), (8.0, 5), (2.0, 17), (1.0, 40)], 6),
        ([(4.0, 64)], 8),
        ([(4.0, 2)], 1),
    ],
)
def test_whole_matrices_go_to_the_least_loaded_rank_costliest_first(items: list[tuple[float, int]], bins: int) -> None:
    """Megatron's layer-wise optimizer packs whole parameters, costliest first, each to the least loaded shard
    (layer_wise_optimizer.py _compute_per_buffer_param_layout): lpt_makespan's rounds of equal items give what one
    item at a time gives."""
    costs = [c for c, n in items for _ in range(n)]
    assert lpt_makespan(items, bins) == pytest.approx(_greedy(costs, bins))


def test_muon_takes_every_matrix_but_the_embedding_the_head_and_the_1d_weights() -> None:
    """_is_nonlinear_or_embedding: the embedding, the output layer and what is not 2-D go to Adam. Llama 3.1 70B:
    all but its 128,256 x 8,192 embedding and head and its 161 RMSNorm weights (2 per layer and the final one)."""
    model = load_model("llama-70b")
    counts = count_params(model)
    norms = (2 * 80 + 1) * 8192
    managed = managed_parameters(model_matrices(model.architecture, "fused"))
    assert managed == counts.total - counts.embedding - counts.lm_head - norms


def test_q_k_and_v_are_orthogonalized_apart_and_megatrons_gate_and_up_whole() -> None:
    """Megatron splits the fused QKV weight by its query, key and value widths (split_qkv, on by default); its fc1
    holds gate and up as one weight (2 x 28,672 rows), orthogonalized whole."""
    a = load_model("llama-70b").architecture
    shapes = {(m.rows, m.cols) for m in layer_matrices(a, False, "attention", True, "fused")}
    assert shapes == {(8192, 8192), (1024, 8192), (57344, 8192), (8192, 28672)}


def test_mambas_in_projection_stays_with_adam() -> None:
    """Megatron-Core marks the Mamba mixer's in_proj use_muon = False (ssm/mamba_mixer.py): Nemotron-H's Mamba
    layers give Muon their out_proj alone."""
    a = load_model(str(NEMOTRON_H)).architecture
    assert a.ssm is not None
    mamba = next(i for i in range(a.layers) if a.mixer(i) == "mamba")
    matrices = layer_matrices(a, a.moe_layer(mamba), "mamba", a.has_mlp(mamba), "fused")
    assert [(m.rows, m.cols) for m in matrices] == [(a.hidden, a.ssm.inner)]


def test_one_rank_per_layer_runs_one_of_each_matrix() -> None:
    """Llama 3.1 70B's 80 layers over 80 ranks: each kind of matrix, 80 of them, one to each rank, so the busiest
    runs one layer's iterations; unsharded, one rank runs all 80 layers'."""
    a = load_model("llama-70b").architecture
    matrices = model_matrices(a, "fused")
    one_layer = sum(m.flops * m.count for m in layer_matrices(a, False, "attention", True, "fused"))
    assert orthogonalization_flops(matrices, 80) == pytest.approx(one_layer)
    assert orthogonalization_flops(matrices, 1) == pytest.approx(80 * one_layer)


def test_routed_experts_are_shared_over_expert_data_parallelism() -> None:
    """The experts a GPU holds (1 / EP of each layer's) go over the expert-DP ranks, the rest over DP x CP."""
    dense, expert = Matrix(4096, 4096, 10, True, False), Matrix(1024, 4096, 64, False, True)
    flops = orthogonalization_flops((dense, expert), 10, 2, experts_held=1 / 8)
    assert flops == pytest.approx(dense.flops + 4 * expert.flops)


def _optimizer_bytes(*flags: str) -> tuple[float, float]:
    """(AdamW's, Muon's) optimizer bytes at the report's own ZeRO row."""
    out = []
    for optimizer in ("adamw", "muon"):
        r = cli_report("estimate", *flags, "--optimizer", optimizer)
        out.append(r["memory"]["stages"][r["setup"]["zero_stage"]]["optimizer_bytes"])
    return out[0], out[1]


def test_muon_keeps_4_bytes_less_per_matrix_parameter_sharded_as_the_states() -> None:
    """Llama 3.1 8B, ZeRO-1 over 8: the optimizer states shrink by 4 bytes x the matrices' parameters / 8."""
    managed = managed_parameters(model_matrices(load_model("llama-8b").architecture, "fused"))
    adamw, muon = _optimizer_bytes("--model", "llama-8b", "--dp", "8", "--zero", "1", "--recompute", "full")
    assert adamw - muon == pytest.approx(4 * managed / 8, rel=1e-9)


def test_a_layout_keeps_the_same_saving_on_a_stage() -> None:
    """Llama 3.1 70B at TP 8 x PP 4 x DP 16 under the distributed optimizer: a middle stage's 20 layers' matrices,
    1/8 of each on a TP rank, save 4 bytes each over DP 16."""
    a = load_model("llama-70b").architecture
    flags = ["--model", "llama-70b", "--tp", "8", "--pp", "4", "--dp", "16", "--global-batch", "512"]
    reports = {o: cli_report("estimate", *flags, "--optimizer", o) for o in ("adamw", "muon")}
    layer = managed_parameters(layer_matrices(a, False, "attention", True, "fused"))
    rows = {o: r["layout"]["stages"][1] for o, r in reports.items()}  # a middle stage: no embedding or head
    assert rows["adamw"]["layers"] == 20
    saved = rows["adamw"]["memory_bytes"] - rows["muon"]["memory_bytes"]
    assert saved == pytest.approx(4 * 20 * layer / 8 / 16, rel=1e-9)


def test_the_step_pays_for_the_iterations_every_rank_runs_unsharded() -> None:
    """ZeRO-0: each rank orthogonalizes every matrix; ZeRO-1 over 64 shares them, and the step costs far less."""
    flags = ["--model", "llama-8b", "--recompute", "full", "--optimizer", "muon"]
    unsharded = cli_report("estimate", *flags, "--dp", "8", "--zero", "0")["summary"]["step_seconds"]
    adamw = cli_report("estimate", *flags[:-2], "--dp", "8", "--zero", "0")["summary"]["step_seconds"]
    gpu = load_topology("dgx-h100").gpu
    matrices = model_matrices(load_model("llama-8b").architecture, "fused")
    every = newton_schulz_seconds(gpu, orthogonalization_flops(matrices, 1))
    assert unsharded - adamw > 0.9 * every


@pytest.mark.parametrize(
    ("flags", "zero"),
    [("--optimizer dist_muon", "1"), ("--optimizer muon --use-distributed-optimizer", "1"), ("--optimizer muon", "0")],
)
def test_megatrons_muon_flags_read(tmp_path: Path, flags: str, zero: str) -> None:
    """arguments.py: dist_muon is muon with the layer-wise distributed optimizer, as is muon with
    --use-distributed-optimizer; muon alone runs under Megatron's DDP. The flags dpcost does not price are named."""
    script = tmp_path / "m.sh"
    script.write_text(
        "torchrun --nproc_per_node 8 pretrain_gpt.py --bf16 --micro-batch-size 1 --global-batch-size 64 "
        f"--seq-length 4096 --muon-num-ns-steps 7 {flags}\n"
    )
    r = cli_report("estimate", "--from", str(script), "--model", "llama-8b")
    assert r["setup"]["optimizer"] == "muon"
    assert r["setup"]["zero_stage"] == int(zero)
    unread = [s for s in r["from_config"]["settings"] if s["key"] == "--muon-num-ns-steps"]
    assert len(unread) == 1 and unread[0]["became"] == "" and "5 Newton-Schulz steps" in unread[0]["note"]


def test_megatron_runs_muon_under_neither_megatron_fsdp_nor_an_unknown_optimizer(tmp_path: Path) -> None:
    """arguments.py asserts an emerging optimizer runs without Megatron-FSDP; --optimizer takes adam, sgd, muon and
    dist_muon here. Both are bad input: one line, exit 2."""
    code, _, err = run_cli("estimate", "--model", "llama-70b", "--tp", "8", "--dp", "16", "--zero", "3",
                           "--optimizer", "muon")  # fmt: skip
    assert code == 2 and "Megatron-FSDP" in err and len(err.strip().splitlines()) == 1
    script = tmp_path / "m.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --bf16 --micro-batch-size 1 --optimizer lion\n")
    code, _, err = run_cli("estimate", "--from", str(script), "--model", "llama-8b")
    assert code == 2 and "must be adam, sgd, muon or dist_muon" in err


def test_muon_needs_the_models_matrices(tmp_path: Path) -> None:
    """A model given by its parameter count alone has no matrices to orthogonalize: bad input naming the flag."""
    spec = tmp_path / "m.yaml"
    spec.write_text("name: m\ntitle: seven billion parameters\nparams: 7e9\n")
    code, _, err = run_cli("estimate", "--model", str(spec), "--dp", "8", "--optimizer", "muon")
    assert code == 2 and "optimizer" in err and "architecture" in err


def test_deepspeeds_muon_reads(tmp_path: Path) -> None:
    """DeepSpeed's config names it {"type": "Muon"} (MuonWithAuxAdam: Muon on the matrices, AdamW on the rest)."""
    config = tmp_path / "ds.json"
    config.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Muon"},
                                  "zero_optimization": {"stage": 2}}))  # fmt: skip
    r = cli_report("estimate", "--from", str(config), "--model", "llama-8b", "--dp", "8")
    assert r["setup"]["optimizer"] == "muon"


def test_the_model_states_move_as_megatrons_own_test_records_them(tmp_path: Path) -> None:
    """Megatron-LM's functional tests record the memory allocated after each step, the model states alone, for one
    12-layer MoE GPT on 8 H100s (docs/sources/muon.md): with Muon under its DDP 309 MB more than with Adam under the
    distributed optimizer, and with Muon under the layer-wise distributed optimizer's default layout 46 MB less.
    dpcost's states move by as much, within 15 MB (1/50 of the states)."""
    from conftest import load_benchmark

    bench = load_benchmark("megatron_test_peaks")
    case = "moe/gpt3_moe_mcore_te_ep8_resume_torch_dist_"
    rows = {(r["case"], r["golden_file"]): r for r in bench.rows(bench.CSV)}
    states, measured = {}, {}
    for name in ("dist_optimizer", "muon", "dist_muon_param_layout"):
        row = rows[case + name, "golden_values_dev_dgx_h100.json"]
        model, topology, options = bench.plan_of(row, tmp_path)
        report = estimate(model, topology, options)
        stage = report.memory.stages[report.setup.zero_stage]
        states[name] = stage.params_bytes + stage.grads_bytes + stage.optimizer_bytes
        measured[name] = float(row["mem_allocated_bytes_median"])
    for muon in ("muon", "dist_muon_param_layout"):
        moved = states[muon] - states["dist_optimizer"]
        assert moved == pytest.approx(measured[muon] - measured["dist_optimizer"], abs=15e6)
