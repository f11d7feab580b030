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
    buffer_order,
    layer_matrices,
    layer_wise_padding,
    lpt_makespan,
    managed_parameters,
    model_matrices,
    mtp_matrices,
    newton_schulz_flops,
    newton_schulz_seconds,
    orthogonalization_flops,
    packing_cost,
    working_set_bytes,
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


def test_a_learned_position_table_is_muons() -> None:
    """Megatron marks only word_embeddings and output_layer as embeddings (language_module.py): GPT-3's 2,048 x
    12,288 position table is a 2-D weight Muon takes."""
    a = load_model("gpt3-175b").architecture
    assert a.learned_positions == 2048
    tables = [m for m in model_matrices(a, "fused") if (m.rows, m.cols) == (2048, 12288)]
    assert len(tables) == 1 and tables[0].count == 1


def test_q_k_and_v_are_orthogonalized_apart_and_megatrons_gate_and_up_whole() -> None:
    """Megatron splits the fused QKV weight by its query, key and value widths for the iteration (split_qkv, on by
    default) but assigns it to a rank as one parameter; its fc1 holds gate and up as one weight (2 x 28,672 rows),
    orthogonalized whole."""
    a = load_model("llama-70b").architecture
    matrices = {(m.rows, m.cols): m for m in layer_matrices(a, False, "attention", True, "fused")}
    assert set(matrices) == {(10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)}
    qkv = matrices[10240, 8192]
    assert qkv.parts == (8192, 1024, 1024)
    assert qkv.flops == newton_schulz_flops(8192, 8192) + 2 * newton_schulz_flops(1024, 8192)
    assert matrices[57344, 8192].flops == newton_schulz_flops(57344, 8192)


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
    """Llama 3.1 70B at TP 8 x PP 4 x DP 4 under the distributed optimizer: a middle stage's 20 layers' matrices,
    1/8 of each on a TP rank, save 4 bytes each over DP 4 (80 parameters, 20 of each kind, fill four shards
    evenly: no padding)."""
    a = load_model("llama-70b").architecture
    flags = ["--model", "llama-70b", "--tp", "8", "--pp", "4", "--dp", "4", "--global-batch", "512"]
    reports = {o: cli_report("estimate", *flags, "--optimizer", o) for o in ("adamw", "muon")}
    layer = managed_parameters(layer_matrices(a, False, "attention", True, "fused"))
    rows = {o: r["layout"]["stages"][1] for o, r in reports.items()}  # a middle stage: no embedding or head
    assert rows["adamw"]["layers"] == 20
    saved = rows["adamw"]["memory_bytes"] - rows["muon"]["memory_bytes"]
    assert saved == pytest.approx(4 * 20 * layer / 8 / 4, rel=1e-9)


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


def test_the_step_holds_the_largest_matrix_in_three_fp32_copies() -> None:
    """scaled_orthogonalize_fn returns `orth_grad * scale_factor * extra_scale_factor`: three fp32 tensors of the
    largest matrix at once, 12 bytes an element; under TP's duplicated mode the shards all-gathered in fp32 and
    their concatenation live through the iteration, beside its fp32 normalized copy and its BF16 one: 14
    (muon_utils.py newton_schulz_tp, newton_schulz)."""
    fc1 = Matrix(57344, 8192, 80, True, False)
    assert working_set_bytes([fc1, Matrix(8192, 8192, 80, False, False)]) == 12 * 57344 * 8192
    assert working_set_bytes([fc1], tp=8) == 14 * 57344 * 8192


@pytest.mark.parametrize(
    ("params", "ranks", "padded"),
    [
        # the 100 on the emptiest shard (over the cap of 1.3 x 140 / 4 anywhere), the 10s on the least loaded of the
        # rest: four shards as full as the 100's
        ([(100.0, 100.0, 1), (1.0, 10.0, 4)], 4, 4 * 100 - 140),
        ([(1.0, 100.0, 8)], 4, 0.0),  # eight equal parameters, two to a shard
        ([(100.0, 100.0, 1)], 1, 0.0),  # one rank: no shards
        # costliest first: A (10) and B (10) on the two shards by cost; C (30) then fits under neither 1.3 x 25 and
        # goes to the emptiest, the first: 40 and 10, padded to 2 x 40, beyond the floor of 2 x 30
        ([(10.0, 10.0, 1), (9.0, 10.0, 1), (1.0, 30.0, 1)], 2, 2 * 40 - 50),
    ],
)
def test_whole_parameters_are_packed_by_cost_and_padded_to_the_fullest_shard(
    params: list[tuple[float, float, int]], ranks: int, padded: float
) -> None:
    """Megatron's layer-wise layout (layer_wise_optimizer.py _emit_bucket): whole parameters, costliest first, each
    on the least-loaded shard among those it leaves under 1.3 x the average size, else on the emptiest; every shard
    padded to the fullest."""
    assert layer_wise_padding(params, ranks) == padded


def test_the_buffer_fills_in_the_order_megatron_registers_the_parameters() -> None:
    """Attention.__init__ builds linear_proj before SelfAttention's linear_qkv (attention.py) and MLA's
    projections (multi_latent_attention.py); MultiTokenPredictionLayer its eh_proj before its layer; TEGroupedMLP
    every expert's fc1 then every fc2, SequentialMLP (--no-grouped-gemm) one expert's fc1 and fc2 after the other
    (experts.py). The buffer takes them reversed (backprop's order)."""
    llama = layer_matrices(load_model("llama-8b").architecture, False, "attention", True, "fused")
    assert (llama[0].rows, llama[0].cols, llama[1].rows) == (4096, 4096, 6144)  # o_proj, then Q, K and V
    dsv3 = load_model("deepseek-v3").architecture
    assert layer_matrices(dsv3, True, "mla", True, "fused")[0].cols == 128 * 128  # o_proj: 128 heads x v_head_dim
    assert mtp_matrices(dsv3, "fused")[0] == Matrix(7168, 2 * 7168, 1, True, False)
    fc1, fc2 = Matrix(4, 2, 2, False, True), Matrix(2, 2, 2, False, True)  # two experts, 8 and 4 elements each
    cost1, cost2 = packing_cost(4, 2), packing_cost(2, 2)
    assert buffer_order([fc1, fc2], 1) == [(cost2, 4, 2), (cost1, 8, 2)]
    assert buffer_order([fc1, fc2], 1, sequential=True) == [(cost2, 4, 1), (cost1, 8, 1)] * 2


def test_overlap_grad_reduce_cuts_the_buffer_into_buckets_each_padded_alone() -> None:
    """_compute_per_buffer_param_layout with a bucket_size: two 1-element parameters, then a 2-element one (the
    buffer's order) over 2 shards. One bucket packs them evenly (the 2 on one shard, the 1s on the other). With a
    bucket_size of 1 the 1s make a bucket (1 >= max(1, int(0.9 x 2 x 1)) once the first is in, and the second fills
    the other shard's padding: _absorbs), the 2 fits no padding and opens one of its own, padded to 2 x 2: 2
    elements."""
    params = [(1.0, 1.0, 1), (1.0, 1.0, 1), (2.0, 2.0, 1)]
    assert layer_wise_padding(params, 2) == 0.0
    assert layer_wise_padding(params, 2, bucket=1.0) == 2.0


def test_megatron_buckets_only_the_first_stages_first_chunk() -> None:
    """training.py get_model: bucket_size goes to the first model chunk of pipeline rank 0 alone (None where
    pp_rank > 0). Llama 3.1 8B at PP 2 x DP 8 under --overlap-grad-reduce: stage 0's 16 layers (3,489,660,928
    matrix elements) close a bucket past 0.9 x 8 x its fc1 (117,440,512), so 4 buckets, each padded to its floor of
    8 x fc1 (the other matrices pack under it): 4 x 8 x 117,440,512 - 3,489,660,928 = 268,435,456 elements, in the
    fp32 gradient and bf16 parameter buffers (6 bytes). Stage 1's 16 layers, one bucket, pack evenly over 8 shards
    (each kind of matrix 16 times): there Muon only saves its 4 bytes a matrix parameter over DP. Without overlap
    stage 0 is one bucket too, and packs as evenly."""
    a = load_model("llama-8b").architecture
    layer = managed_parameters(layer_matrices(a, False, "attention", True, "fused"))
    saving = 4 * 16 * layer / 8
    flags = ["--model", "llama-8b", "--pp", "2", "--dp", "8", "--global-batch", "64"]
    for overlap in ("true", "false"):
        rows = {
            o: cli_report("estimate", *flags, "--overlap-comm", overlap, "--optimizer", o)["layout"]["stages"]
            for o in ("adamw", "muon")
        }
        moved = [
            muon["memory_bytes"] - adamw["memory_bytes"]
            for adamw, muon in zip(rows["adamw"], rows["muon"], strict=True)
        ]
        assert moved[1] == pytest.approx(-saving, rel=1e-9)
        padding = 4 * 8 * 117440512 - 16 * layer if overlap == "true" else 0
        assert 16 * layer == 3489660928 and moved[0] == pytest.approx(6 * padding - saving, rel=1e-9)


def test_experts_share_the_dense_buffer_without_expert_parallelism() -> None:
    """Megatron-Core marks a routed expert's parameters allreduce unless EP > 1 or ETP != TP (transformer_engine.py
    _set_expert_parameter_attributes), and DDP builds one buffer per (dtypes, expert-parallel, managed by the
    layer-wise optimizer): Mixtral 8x7B at PP 32 x DP 16, a middle stage of one layer. At EP 1 its 8 experts' fc1
    and fc2 share the buffer with Q/K/V, the output projection and the router, padded to 16 x an fc1 (8 fc1 on 8
    shards, the rest under one fc1 on the others); at EP 2 the dense matrices pad their own buffer to 16 x the QKV
    matrix, and a GPU's 4 experts pack into theirs over expert-DP 8, padded to 8 x an fc1. 6 bytes a padded element,
    less the 4 bytes a matrix parameter Muon saves over its shard group."""
    qkv, proj, router, fc1, fc2 = 6144 * 4096, 4096 * 4096, 8 * 4096, 28672 * 4096, 4096 * 14336
    dense = qkv + proj + router
    for ep, padding, saving in (
        (1, 16 * fc1 - dense - 8 * (fc1 + fc2), 4 * (dense + 8 * (fc1 + fc2)) / 16),
        (2, 16 * qkv - dense + 8 * fc1 - 4 * (fc1 + fc2), 4 * (dense / 16 + 4 * (fc1 + fc2) / 8)),
    ):
        flags = ["--model", "mixtral-8x7b", "--pp", "32", "--dp", "16", "--ep", str(ep), "--global-batch", "512"]
        stage = {o: cli_report("estimate", *flags, "--optimizer", o)["layout"]["stages"][1] for o in ("adamw", "muon")}
        moved = stage["muon"]["memory_bytes"] - stage["adamw"]["memory_bytes"]
        assert moved == pytest.approx(6 * padding - saving, rel=1e-9)


def test_at_64_ranks_a_stage_of_llama_70b_pads_to_64_of_its_largest_matrix() -> None:
    """TP 8 x PP 4 x DP 64: a middle stage's 20 layers hold 1.86B matrix elements on a GPU, fewer than 64 x its fc1
    (57,344 x 8,192 / 8): its fp32 gradient and bf16 parameter buffers are padded to that, 6 bytes an element."""
    a = load_model("llama-70b").architecture
    flags = ["--model", "llama-70b", "--tp", "8", "--pp", "4", "--dp", "64", "--global-batch", "512"]
    stage = {o: cli_report("estimate", *flags, "--optimizer", o)["layout"]["stages"][1] for o in ("adamw", "muon")}
    per_gpu = 20 * sum(m.elements * m.count / 8 for m in layer_matrices(a, False, "attention", True, "fused"))
    padding = 64 * 57344 * 8192 / 8 - per_gpu
    saving = 4 * per_gpu / 64
    assert stage["muon"]["memory_bytes"] - stage["adamw"]["memory_bytes"] == pytest.approx(6 * padding - saving)


def test_deepspeed_keeps_muons_momentum_in_bf16() -> None:
    """DeepSpeed's ZeRO optimizers allocate Muon's momentum in the gradient-accumulation (stages 1-2) or
    communication (3) dtype, BF16 by default: 6 bytes fewer than AdamW's two fp32 moments a matrix parameter."""
    managed = managed_parameters(model_matrices(load_model("llama-8b").architecture, "eager"))
    flags = ["--model", "llama-8b", "--dp", "8", "--zero", "2", "--framework", "deepspeed", "--recompute", "full"]
    adamw, muon = _optimizer_bytes(*flags)
    assert adamw - muon == pytest.approx(6 * managed / 8, rel=1e-9)


@pytest.mark.parametrize("model", ["qwen3-next-80b-a3b-thinking.json", "jamba-1.5-mini.json"])
def test_muon_refuses_layers_whose_matrices_dpcost_does_not_list(model: str) -> None:
    """Gated DeltaNet and Mamba-1 layers are not among the layers whose matmuls dpcost lists (ops.has_layer_ops):
    bad input, one line, exit 2."""
    path = Path(__file__).parent / "reference" / "hf-configs" / model
    code, _, err = run_cli("estimate", "--model", str(path), "--dp", "8", "--optimizer", "muon")
    assert code == 2 and "optimizer" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("flag", "said"),
    [("--fp16", "not fp16"), ("--num-distributed-optimizer-instances 2", "one instance")],
)
def test_megatron_refuses_what_its_muon_does_not_run(tmp_path: Path, flag: str, said: str) -> None:
    """optimizer/__init__.py and layer_wise_optimizer.py assert Muon runs without fp16 and with one
    distributed-optimizer instance."""
    script = tmp_path / "m.sh"
    script.write_text(
        "torchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 1 --global-batch-size 64 --seq-length 4096 "
        f"--optimizer muon --use-distributed-optimizer {flag}\n"
    )
    code, _, err = run_cli("estimate", "--from", str(script), "--model", "llama-8b")
    assert code == 2 and said in err


def test_deepspeed_refuses_muon_at_zero_3_with_reduce_scatter(tmp_path: Path) -> None:
    """stage3.py asserts Muon runs with reduce_scatter false, which is on by default."""
    config = tmp_path / "ds.json"
    for reduce_scatter, code in ((None, 2), (False, 0)):
        zero = {"stage": 3} if reduce_scatter is None else {"stage": 3, "reduce_scatter": reduce_scatter}
        config.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "optimizer": {"type": "Muon"},
                                      "zero_optimization": zero}))  # fmt: skip
        assert run_cli("estimate", "--from", str(config), "--model", "llama-8b", "--dp", "8")[0] == code


def test_megatrons_muon_pads_a_data_parallel_buffer_to_dp_times_its_largest_matrix() -> None:
    """Pure data parallelism under Megatron's layer-wise distributed optimizer: Llama 3.1 8B's fc1 (28,672 x 4,096)
    whole in one of 128 shards makes the buffer 128 x 117,440,512 elements, where its matrices are 6.98B; fp32
    gradients and bf16 parameters, 6 bytes an element of the difference."""
    flags = ["--model", "llama-8b", "--dp", "128", "--framework", "megatron", "--zero", "1", "--recompute", "full"]
    rows = {}
    for optimizer in ("adamw", "muon"):
        r = cli_report("estimate", *flags, "--optimizer", optimizer)
        rows[optimizer] = r["memory"]["stages"][1]
    managed = managed_parameters(model_matrices(load_model("llama-8b").architecture, "fused"))
    padding = 128 * 28672 * 4096 - managed
    assert rows["muon"]["buffers_bytes"] - rows["adamw"]["buffers_bytes"] == pytest.approx(6 * padding)


def test_the_compute_table_counts_the_iterations_flops_at_the_step() -> None:
    """The optimizer's part executes Muon's Newton-Schulz matmuls: Llama 3.1 8B unsharded, every matrix's iteration
    on the GPU (its element-wise updates are still counted by their bytes)."""
    r = cli_report("estimate", "--model", "llama-8b", "--dp", "8", "--zero", "0", "--recompute", "full",
                   "--optimizer", "muon")  # fmt: skip
    optimizer = next(part for part in r["compute"]["parts"] if part["part"] == "optimizer")
    matrices = model_matrices(load_model("llama-8b").architecture, "fused")
    assert optimizer["flops_per_step"] == pytest.approx(sum(m.flops * m.count for m in matrices))


def test_megatron_keeps_no_expert_parallel_parameter_on_adam() -> None:
    """optimizer/__init__.py asserts no Adam-managed parameter is expert-parallel: gpt-oss's routed experts carry
    biases, so under EP it cannot run Muon; without EP its biases are dense parameters."""
    flags = ["--model", "gpt-oss-20b", "--dp", "8", "--global-batch", "64", "--optimizer", "muon"]
    code, _, err = run_cli("estimate", *flags, "--ep", "8")
    assert code == 2 and "biases" in err
    assert run_cli("estimate", *flags)[0] == 0
