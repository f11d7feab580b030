"""The bytes Transformer Engine holds a low-precision layer's linear weight in (engine/low_precision_weights.py): both
of training's usages, row-wise for the forward and column-wise for the backward's data gradient, as the parameter
under --fp8-param-gather or as the copy each module caches beside a bf16 weight. Against the formats' layouts, closed
forms from Llama 3 70B's config.json, and Megatron-LM's functional tests (tests/reference/memory-peaks/
te-low-precision-weights.csv)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import cli_report, read_reference_csv, run_cli

from dpcost.engine.low_precision_weights import gathered_weight_bytes, held_weight_bytes

# Llama 3 70B: hidden 8192, FFN 28672, 8 KV heads of 128: Q, O, K, V and the gated MLP, TP-split
HIDDEN, FFN, KV = 8192, 28672, 8 * 128
LAYER = 2 * HIDDEN * HIDDEN + 2 * HIDDEN * KV + 3 * HIDDEN * FFN
TP, PP = 8, 4
STAGE = 80 // PP * LAYER // TP  # one stage's fp8 weights on one GPU


@pytest.mark.parametrize(
    ("fmt", "recipe", "arch", "fsdp", "held"),
    [
        ("fp8", "tensorwise", "hopper", False, 2.0),  # the byte and its transpose: Hopper's FP8 GEMMs are TN only
        ("fp8", "delayed", "hopper", False, 2.0),
        ("fp8", "tensorwise", "blackwell", False, 1.0),  # non-TN FP8 GEMMs: the one copy serves both
        ("fp8", "tensorwise", "hopper", True, 1.0),  # Megatron-FSDP drops the transpose after use
        ("fp8", "mxfp8", "blackwell", False, 2 * (1 + 1 / 32)),  # row- and column-wise, an E8M0 scale per 32
        ("fp8", "mxfp8", "blackwell", True, 2 * (1 + 1 / 32)),  # Megatron-FSDP's transpose buffer
        ("fp8", "blockwise", "hopper", False, 2 * (1 + 4 / 128**2)),  # an fp32 scale per 128 x 128 block, twice
        ("fp8", "blockwise", "blackwell", False, 2 * (1 + 4 / 128**2)),
        ("nvfp4", "tensorwise", "blackwell", False, 2 * (0.5 + 1 / 16)),  # E2M1 and an E4M3 scale per 16, twice
    ],
)
def test_a_weight_is_held_in_both_usages(fmt: str, recipe: str, arch: str, fsdp: bool, held: float) -> None:
    assert held_weight_bytes(fmt, recipe, arch, megatron_fsdp=fsdp) == pytest.approx(held, rel=1e-12)


def test_the_distributed_optimizer_gathers_mxfp8_in_bf16() -> None:
    """Its parameter buffer is a bf16 view of the gradient buffer for MXFP8 (param_and_grad_buffer.py since
    Megatron-Core 0.13); Megatron-FSDP gathers a byte a pass; NVFP4 the packed half byte."""
    assert gathered_weight_bytes("fp8", "mxfp8", distributed_optimizer=True) == 2.0
    assert gathered_weight_bytes("fp8", "mxfp8", distributed_optimizer=False) == 1.0
    assert gathered_weight_bytes("fp8", "tensorwise", distributed_optimizer=True) == 1.0
    assert gathered_weight_bytes("nvfp4", "tensorwise", distributed_optimizer=True) == 0.5


def _buffers(model: str, topology: str, **options: Any) -> list[float]:
    """Each pipeline stage's buffers (what it holds for the run beside its parameters' states) as estimate costs
    it, in bytes."""
    from dpcost.catalog import load_model, load_topology
    from dpcost.engine.layout_report import layout_stage_memory
    from dpcost.options import Options

    return [s.buffers for s in layout_stage_memory(load_model(model), load_topology(topology), Options(**options))]


def _stages(topology: str, **options: Any) -> list[float]:
    plan = dict(tp=TP, pp=PP, dp=8, global_batch=256, seq_len=8192, sequence_parallel=True)
    return _buffers("llama-70b", topology, **plan, **options)


@pytest.mark.parametrize(
    ("topology", "recipe", "held"),
    [
        ("dgx-h100", None, 2.0),  # per-tensor current scaling, the default: the byte and its transpose
        ("dgx-h100", "delayed", 2.0),
        ("dgx-b200", None, 1.0),
        ("dgx-b200", "mxfp8", 2 * (1 + 1 / 32)),
        ("dgx-b200", "blockwise", 2 * (1 + 4 / 128**2)),
    ],
)
def test_fp8_matmuls_over_bf16_weights_keep_te_s_cached_copies(topology: str, recipe: str | None, held: float) -> None:
    """Megatron-Core's TE layers pass is_first_microbatch, so each caches its quantized weight for the run
    (module/linear.py _fp8_workspaces): every stage holds its 20 layers' linear weights once more in FP8."""
    bf16 = _stages(topology)
    fp8 = _stages(topology, compute_dtype="fp8", fp8_recipe=recipe)
    for before, after in zip(bf16, fp8, strict=True):
        assert after - before == pytest.approx(held * STAGE, abs=4)


def test_the_layers_kept_in_bf16_hold_no_fp8_weights() -> None:
    """--first-last-layers-bf16 builds those layers outside the FP8 context (fp8_utils.is_first_last_bf16_layer): no
    cached copy, and under --fp8-param-gather bf16 weights gathered in bf16."""
    bf16 = _stages("dgx-b200")
    fp8 = _stages("dgx-b200", compute_dtype="fp8", bf16_layers_at_start=20, bf16_layers_at_end=10)
    assert [after - before for before, after in zip(bf16, fp8, strict=True)] == pytest.approx(
        [0, STAGE, STAGE, STAGE // 2], abs=4
    )

    def gathers(*flags: str) -> float:  # one stage: Megatron keeps at most a stage's layers in BF16 at each end
        plan = ["-m", "llama-70b", "--topology", "dgx-b200", "--tp", str(TP), "--dp", "8"]
        got = cli_report("estimate", *plan, "--global-batch", "256", "--seq-len", "8192", "--zero", "1", *flags)
        return sum(c["bytes"] for c in got["communication"]["collectives"] if c["purpose"] == "updated parameters")

    bf16_gathers = gathers("--compute-dtype", "fp8")
    assert gathers("--compute-dtype", "fp8", "--gather-dtype", "fp8") < 0.6 * bf16_gathers
    every_layer = ("--compute-dtype", "fp8", "--bf16-layers-at-start", "80", "--gather-dtype", "fp8")
    assert gathers(*every_layer) == bf16_gathers


def test_mxfp8_weights_are_gathered_in_bf16_and_held_in_both_usages() -> None:
    """--gather-dtype fp8 --fp8-recipe mxfp8 (Megatron's --fp8-param-gather under MXFP8): the distributed optimizer
    gathers what bf16 weights gather; each weight is held in 2 x (1 + 1/32) bytes, 1/16 more than bf16's."""
    plan = ["-m", "llama-70b", "--topology", "dgx-b200", "--tp", str(TP), "--pp", str(PP), "--dp", "8", "--zero", "1"]
    common = (*plan, "--global-batch", "256", "--seq-len", "8192", "--compute-dtype", "fp8", "--fp8-recipe", "mxfp8")
    bf16 = cli_report("estimate", *common)
    mxfp8 = cli_report("estimate", *common, "--gather-dtype", "fp8")

    def updated(report: dict[str, Any]) -> int:
        return sum(c["bytes"] for c in report["communication"]["collectives"] if c["purpose"] == "updated parameters")

    assert updated(mxfp8) == updated(bf16) > 0
    stage = mxfp8["memory"]["stages"][1]
    assert stage["params_bytes"] - bf16["memory"]["stages"][1]["params_bytes"] == pytest.approx(STAGE / 16, abs=4)
    # the bf16 run's cached copy (2.0625 bytes) is gone: the weights are what the matmuls read
    assert bf16["memory"]["stages"][1]["buffers_bytes"] - stage["buffers_bytes"] == pytest.approx(
        2 * (1 + 1 / 32) * STAGE, abs=4
    )


@pytest.mark.parametrize(
    ("flags", "names", "says"),
    [
        (("--compute-dtype", "fp8", "--fp8-recipe", "mxfp8"), "--fp8-recipe", "mxfp8 runs on Blackwell"),
        (("--fp8-recipe", "tensorwise"), "--fp8-recipe", "give --compute-dtype fp8"),
        (("--compute-dtype", "nvfp4", "--topology", "dgx-b200", "--fp8-recipe", "mxfp8"), "--fp8-recipe", "fp8 too"),
        # transformer_config.py: "Delayed scaling does not support first / last layer in BF16."
        (("--compute-dtype", "fp8", "--fp8-recipe", "delayed", "--bf16-layers-at-start", "1"), "--fp8-recipe",
         "delayed scaling keeps no layer in BF16"),
        # and at most a pipeline stage's layers at each end
        (("--compute-dtype", "fp8", "--pp", "4", "--bf16-layers-at-end", "21"), "--bf16-layers-at-end",
         "more than a pipeline stage's 20 layers"),
        # "fp8_param must be used together with fp8 mode"
        (("--gather-dtype", "fp8",), "--gather-dtype", "needs FP8 matmuls"),
        # "Delayed scaling does not support moe_act and layernorm recompute for fp8."
        (("--compute-dtype", "fp8", "--fp8-recipe", "delayed", "--recompute-modules", "core_attn,layernorm"),
         "--fp8-recipe", "does not recompute layernorm"),
    ],
)  # fmt: skip
def test_a_recipe_is_refused_where_megatron_cannot_run_it(flags: tuple[str, ...], names: str, says: str) -> None:
    """MXFP8 needs compute capability 10.x (TE quantization.py _compute_mxfp8_support); a recipe needs FP8 matmuls,
    and Megatron's checks of its config hold."""
    code, out, err = run_cli("estimate", "-m", "llama-70b", "--dp", "8", "--tp", "8", *flags)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and names in err and says in err


def test_a_recipe_is_transformer_engine_s() -> None:
    """torchtitan's float8 (torchao) has no Transformer Engine recipe to name."""
    plan = ["estimate", "-m", "llama-8b", "--dp", "8", "--framework", "fsdp", "--compute-dtype", "fp8"]
    code, out, err = run_cli(*plan, "--fp8-recipe", "tensorwise")
    assert code == 2 and out == "" and "--fp8-recipe" in err and "Megatron-LM runs" in err


def test_the_flags_that_run_mxfp8_refuse_another_recipe() -> None:
    plan = ["estimate", "-m", "llama-70b", "--dp", "8", "--tp", "8", "--topology", "dgx-b200", "--compute-dtype", "fp8"]
    code, out, err = run_cli(*plan, "--fp8-output-proj", "--fp8-recipe", "tensorwise")
    assert code == 2 and out == "" and "--fp8-output-proj runs MXFP8 matmuls" in err


def _measured(pair: str) -> dict[str, int]:
    rows = read_reference_csv("memory-peaks/te-low-precision-weights.csv")
    return {r["gpu"] + " " + r["variant"]: int(r["mem_allocated_bytes"]) for r in rows if r["pair"] == pair}


@pytest.mark.parametrize(
    ("pair", "within"), [("hopper-blackwell-tp4-cp2", 2048), ("hopper-blackwell-tp2-pp2", 1.1 * 2**20)]
)
def test_hopper_holds_each_fp8_weight_s_transpose(pair: str, within: float, tmp_path: Any) -> None:
    """The same fp8-param-gather run on H100 and GB200 holds, after each step, 1 byte more a weight on Hopper: the
    last rank's 9,437,184 FP8 weights' transposes. Measured 9,438,208 bytes apart at TP4 x CP2; at TP2 x PP2 a MiB
    more, 10,485,760, where an earlier run of the same case measured 9,437,184."""
    from conftest import load_benchmark

    bench = load_benchmark("megatron_test_peaks")
    measured = _measured(pair)
    rows = {
        r["hardware"]: r
        for r in bench.rows()
        if r["case"] in pair_cases(pair) and r["golden_file"].endswith(("dgx_h100.json", "dgx_gb200.json"))
    }
    h100, _ = bench.predict(rows["H100"], tmp_path)
    gb200, _ = bench.predict(rows["GB200"], tmp_path)
    apart = measured["H100 fp8-param-gather"] - measured["GB200 fp8-param-gather"]
    assert h100 - gb200 == pytest.approx(9_437_184, abs=1)
    assert abs((h100 - gb200) - apart) <= within


def pair_cases(pair: str) -> set[str]:
    return {r["case"] for r in read_reference_csv("memory-peaks/te-low-precision-weights.csv") if r["pair"] == pair}


def test_a_bf16_fp8_twin_differs_by_te_s_cached_copies(tmp_path: Any) -> None:
    """Two H100 runs of one DeepSeek-like MoE (MLA, 32 experts, MTP; TP2 x PP2 x VPP4 x EP4) that differ only in
    --fp8-format hybrid --fp8-recipe tensorwise stay 684,063,744 bytes apart after every step: the fp8 run's cached
    FP8 copies, the byte and its transpose, of the last rank's 341 million linear weights, MLA's down-projections
    whole on each TP rank and MTP's eh_proj among them. dpcost's last stages, states and buffers, differ by them."""
    from conftest import load_benchmark

    bench = load_benchmark("megatron_test_peaks")

    def held(case: str) -> float:  # what the last stage holds after a step: its states and buffers
        row = next(
            r for r in bench.rows() if r["case"] == case and r["golden_file"] == "golden_values_dev_dgx_h100.json"
        )
        return float(bench.held_after_step(row, tmp_path))

    measured = _measured("bf16-fp8-twin")
    apart = measured["H100 fp8"] - measured["H100 bf16"]
    assert apart == 684_063_744
    dpcost = held("moe/gpt3_mcore_te_tp2_pp2_ep4_etp1_mtp_resume_torch_dist_fp8") - held(
        "moe/gpt3_mcore_te_tp2_pp2_ep4_etp1_memory_speed"
    )
    assert dpcost == pytest.approx(apart, rel=0.005)


def test_mla_s_down_projections_are_whole_on_every_tp_rank() -> None:
    """Megatron-Core builds linear_q_down_proj and linear_kv_down_proj as TELinear "duplicated"
    (multi_latent_attention.py), where Megatron's formula splits them over TP: DeepSeek-V3's config.json, hidden
    7168 x (q_lora_rank 1536 + kv_lora_rank 512 + qk_rope_head_dim 64), move from the split to the whole group."""
    from dpcost.engine.layout_memory import model_shape

    a = load_model_architecture("deepseek-v3")
    shape = model_shape(a, 8)
    held, file = shape.held_layers_parameters((0, 5)), shape.layers_parameters((0, 5))
    down = 7168 * (1536 + 512 + 64)
    assert held.replicated - file.replicated == 2 * down
    assert file.tp_sharded - held.tp_sharded == 2 * down
    assert held.total == file.total


def load_model_architecture(name: str) -> Any:
    from dpcost.catalog import load_model

    return load_model(name).architecture


def _last_stage(**options: Any) -> float:
    plan = dict(tp=2, pp=16, ep=64, dp=64, sequence_parallel=True, global_batch=1024, seq_len=4096)
    return _buffers("deepseek-v3", "dgx-b200", **plan, **options)[-1]


def test_mtp_layers_hold_fp8_weights_but_not_nvfp4() -> None:
    """Megatron-Core builds and runs the MTP layers under the FP8 context whatever their index, and leaves them out of
    FP4's ("currently ignoring FP4 in MTP layers": multi_token_prediction.py): with an MTP layer the last stage holds
    one more layer's cached copies under FP8 and none more under NVFP4."""
    fp8_more = (_last_stage(compute_dtype="fp8", mtp_layers=1) - _last_stage(mtp_layers=1)) - (
        _last_stage(compute_dtype="fp8") - _last_stage()
    )
    nvfp4_more = (_last_stage(compute_dtype="nvfp4", mtp_layers=1) - _last_stage(mtp_layers=1)) - (
        _last_stage(compute_dtype="nvfp4") - _last_stage()
    )
    assert fp8_more > 1e8  # an MoE layer's 4 local experts and its attention, a byte each (Blackwell, per tensor)
    assert nvfp4_more == pytest.approx(0, abs=4)


def test_the_fp8_output_projection_caches_the_output_layer() -> None:
    """--fp8-output-proj builds TELMHeadColumnParallelLinear outside the FP8 parameter context (bf16), whose forward
    is TELinear's and caches its MXFP8 weight: 2 x (1 + 1/32) bytes for each of the last stage's vocab / TP x hidden
    weights (DeepSeek-V3's 129,280 tokens padded to 129,280 at TP 2, hidden 7168). It gathers its input under SP
    itself, where Megatron's head gathers into the global buffer: 4,096 tokens x 7,168 x 2 bytes fewer there."""
    added = _last_stage(compute_dtype="fp8", fp8_recipe="mxfp8", fp8_output_proj=True) - _last_stage(
        compute_dtype="fp8", fp8_recipe="mxfp8"
    )
    assert added == pytest.approx(2 * (1 + 1 / 32) * 129_280 * 7168 / 2 - 4096 * 7168 * 2, abs=4)


def test_the_fused_grouped_mlp_saves_the_experts_weights_per_micro_batch() -> None:
    """TE's fused grouped MLP (ops/fused/grouped_mlp.py) caches nothing: each forward quantizes the bf16 experts with
    both usages and saves them for its backward, so the stage holds one copy per micro-batch in flight, where the
    modules' cache held one for the run."""
    plan = ["-m", "deepseek-v3", "--topology", "dgx-b200", "--tp", "1", "--pp", "16", "--ep", "64", "--dp", "64"]
    common = (*plan, "--global-batch", "1024", "--seq-len", "4096", "--compute-dtype", "fp8", "--fp8-recipe", "mxfp8",
              "--zero", "1")  # fmt: skip
    cached = cli_report("estimate", *common)
    fused = cli_report("estimate", *common, "--fused-grouped-mlp")
    before, after = cached["memory"]["stages"][1], fused["memory"]["stages"][1]
    experts = before["buffers_bytes"] - after["buffers_bytes"]  # the experts' cached copies, gone
    assert experts > 1e9
    in_flight = (after["activations_bytes"] - before["activations_bytes"]) / experts
    assert in_flight == pytest.approx(round(in_flight), abs=1e-6) and in_flight >= 2


@pytest.mark.parametrize(
    ("topology", "recipe", "recompute", "per_element", "widths"),
    [
        # per-tensor current scaling: the QKV's and fc1's norm outputs and fc2's input a byte each; linear_proj keeps
        # attention's bf16 output (Megatron's set_save_original_input), which flash attention keeps anyway
        ("dgx-h100", "tensorwise", "selective", 1.0, 2 * HIDDEN + FFN),
        ("dgx-b200", "mxfp8", "selective", 1 - 1 / 32, 2 * HIDDEN + FFN),  # an E8M0 scale per 32 values
        # delayed scaling asks for no bf16 input: linear_proj adds a quantized copy of what flash attention keeps...
        ("dgx-h100", "delayed", "none", 1.0, HIDDEN + FFN),
        # ...or, where the core_attn recomputation's checkpoint keeps none, its copy replaces attention's output
        ("dgx-h100", "delayed", "selective", 1.0, 3 * HIDDEN + FFN),
    ],
)
def test_fp8_matmuls_save_their_inputs_quantized(
    topology: str, recipe: str, recompute: str, per_element: float, widths: int
) -> None:
    """Transformer Engine saves a linear layer's input for its weight gradient in one quantized usage (linear.py,
    layernorm_linear.py), where bf16 saves two bytes; with sequence parallelism the local shard, 1 / TP of the
    tokens; Megatron's SwiGLU keeps its input, not its output, so fc2's quantized copy replaces it. Llama 3 70B at
    TP 8, one stage: 80 layers x 8,192 tokens / 8 x (the widths above) x what each element saves."""
    plan = ["-m", "llama-70b", "--topology", topology, "--tp", "8", "--dp", "8", "--sequence-parallel"]
    common = (*plan, "--global-batch", "64", "--seq-len", "8192", "--recompute", recompute)
    bf16 = cli_report("estimate", *common)["memory"]["stages"][1]["activations_bytes"]
    fp8 = cli_report("estimate", *common, "--compute-dtype", "fp8", "--fp8-recipe", recipe)
    fp8 = fp8["memory"]["stages"][1]["activations_bytes"]
    assert bf16 - fp8 == pytest.approx(80 * 8192 / 8 * widths * per_element, abs=80)


@pytest.mark.parametrize(
    ("recompute", "modules", "widths", "held_layers", "rerun_layers"),
    [
        ("none", ("core_attn",), 2 * 4096 + 14336, 32, 0),  # every layer keeps its matmuls' inputs in a byte each
        ("selective", ("core_attn",), 2 * 4096 + 14336, 32, 0),  # core attention re-run: the same inputs
        # the MLP's checkpoint keeps nothing inside it (transformer_layer.py te_checkpoint): the QKV's input alone
        ("selective", ("core_attn", "mlp"), 4096, 32, 0),
        ("full", ("core_attn",), 2 * 4096 + 14336, 0, 1),  # only the layer the backward re-runs, one at a time
    ],
)
def test_megatron_without_a_layout_saves_the_same_inputs_quantized(
    recompute: str, modules: tuple[str, ...], widths: int, held_layers: int, rerun_layers: int
) -> None:
    """Megatron-LM at DP alone runs the same Transformer Engine layers as in a layout: per-tensor FP8 saves the QKV's
    and fc1's norm outputs and fc2's input in a byte where bf16 keeps two (linear.py, layernorm_linear.py). Llama 3.1
    8B at 8,192 tokens: 32 layers x 8,192 x (2 x 4,096 + 14,336) bytes fewer, or one layer's under full recomputation
    (its backward's peak, here below the loss's); the loss and the embedding stay bf16. An MLP the selective
    recomputation re-runs keeps none of its inputs in any format: the QKV's alone save then."""
    from dpcost import Options, load_model, load_topology
    from dpcost.engine.prepare import StageMemories, prepare

    model, topology = load_model("llama-8b"), load_topology("dgx-h100")
    plan = {"dp": 8, "framework": "megatron", "zero": 1, "seq_len": 8192, "global_batch": 8, "recompute": recompute,
            "recompute_modules": modules}  # fmt: skip
    kept, _, _, layer_backward, _, _ = StageMemories(
        model, topology, prepare(model, topology, Options(**plan))
    ).activations(recompute)
    fp8 = Options(**plan, compute_dtype="fp8", fp8_recipe="tensorwise")
    kept_fp8, _, _, layer_backward_fp8, _, _ = StageMemories(
        model, topology, prepare(model, topology, fp8)
    ).activations(recompute)
    per_layer = 8192 * widths
    assert kept - kept_fp8 == pytest.approx(held_layers * per_layer, abs=64)
    assert layer_backward - layer_backward_fp8 == pytest.approx(rerun_layers * per_layer, abs=64)


def test_the_twin_s_peaks_differ_as_dpcost_s(tmp_path: Any) -> None:
    """The bf16/fp8 twin's peaks: the fp8 run's cached weights (+684 MB) against its matmuls' inputs saved in FP8,
    a step's peak 336 MB to 1,213 MB below the bf16 run's over their 50 steps (503 MB at the last). dpcost's last
    stages differ by what it counts of both, inside that range."""
    from conftest import load_benchmark

    bench = load_benchmark("megatron_test_peaks")
    rows = {
        r["case"]: r
        for r in bench.rows()
        if r["case"] in pair_cases("bf16-fp8-twin") and r["golden_file"] == "golden_values_dev_dgx_h100.json"
    }
    bf16, _ = bench.predict(rows["moe/gpt3_mcore_te_tp2_pp2_ep4_etp1_memory_speed"], tmp_path)
    fp8, _ = bench.predict(rows["moe/gpt3_mcore_te_tp2_pp2_ep4_etp1_mtp_resume_torch_dist_fp8"], tmp_path)
    peaks = {r["variant"]: int(r["mem_max_allocated_bytes"]) for r in read_reference_csv(
        "memory-peaks/te-low-precision-weights.csv") if r["pair"] == "bf16-fp8-twin"}  # fmt: skip
    assert peaks["fp8"] - peaks["bf16"] == -502_804_480
    assert -1_213_059_072 <= fp8 - bf16 <= -336_138_240


def test_routed_experts_save_each_copy_s_inputs_quantized() -> None:
    """Mixtral 8x7B at TP 2, EP 4, ETP 2 with SP, one stage: the experts' tensor-parallel group gathers each routed
    copy, so each GPU holds k x ETP copies of each token it holds (token_dispatcher.py), every copy's fc1 input
    (hidden wide) and its f / ETP-wide fc2 input saved in a byte (grouped_linear.py), where bf16 keeps two; with the
    norm-fused QKV's input, h a held token. Per layer: s/TP x (h + k x (ETP x h + f)) bytes fewer."""
    plan = ["-m", "mixtral-8x7b", "--tp", "2", "--ep", "4", "--etp", "2", "--dp", "4", "--sequence-parallel"]
    common = (*plan, "--global-batch", "16", "--seq-len", "4096", "--recompute", "selective")
    bf16 = cli_report("estimate", *common)["memory"]["stages"][1]["activations_bytes"]
    fp8 = cli_report("estimate", *common, "--compute-dtype", "fp8")["memory"]["stages"][1]["activations_bytes"]
    hidden, ffn, topk, etp, held = 4096, 14336, 2, 2, 4096 / 2
    assert bf16 - fp8 == pytest.approx(32 * held * (hidden + topk * (etp * hidden + ffn)), abs=64)


def test_mtp_layers_run_their_matmuls_in_bf16_under_nvfp4() -> None:
    """Megatron-Core runs an MTP module under the FP8 context alone ("currently ignoring FP4 in MTP layers":
    multi_token_prediction.py), so under NVFP4 its layer is a BF16 layer among low-precision ones. Under FP8 it is an
    FP8 layer: the two modules differ by what keeping a decoder layer of the same kind (the last: DeepSeek-V2-Lite's
    MoE) in BF16 changes in an FP8 run, the rest of the module (eh_proj, its norms, the head and the loss) being
    16-bit in both."""
    from dpcost.catalog import load_model, load_topology
    from dpcost.engine.layout import Layout
    from dpcost.engine.layout_estimate import layout_step

    model, topology = load_model("deepseek-v2-lite"), load_topology("dgx-b200")

    def forward(dtype: str, mtp: int, bf16_at_end: int = 0) -> float:
        step = layout_step(
            model, topology, Layout(tp=1, dp=8, ep=8), micro_batch=1, global_batch=8, seq_len=4096, mfu=0.4,
            compute_model="ops", compute_dtype=dtype, mtp_layers=mtp, bf16_layers=(0, bf16_at_end),
        )  # fmt: skip
        return step.forward

    modules_apart = (forward("nvfp4", 1) - forward("nvfp4", 0)) - (forward("fp8", 1) - forward("fp8", 0))
    layer_kept_in_bf16 = forward("fp8", 0, bf16_at_end=1) - forward("fp8", 0)
    assert layer_kept_in_bf16 != 0
    assert modules_apart == pytest.approx(layer_kept_in_bf16, rel=1e-9)


def test_shared_experts_the_selective_recomputation_reruns_save_nothing_quantized() -> None:
    """Megatron-Core checkpoints the shared experts whole under --recompute-modules shared_experts (moe_layer.py
    te_checkpoint), so their fc2 keeps no input, in FP8 or bf16. DeepSeek-V2-Lite without a layout at 4,096 tokens,
    per-tensor FP8: its 26 MoE layers' shared experts (2 x 1,408 wide) save 26 x 4,096 x 2,816 bytes less than
    when they keep their inputs."""
    from dpcost import Options, load_model, load_topology
    from dpcost.engine.prepare import StageMemories, prepare

    model, topology = load_model("deepseek-v2-lite"), load_topology("dgx-h100")

    def saved(modules: tuple[str, ...]) -> float:
        plan = {"dp": 8, "framework": "megatron", "zero": 1, "seq_len": 4096, "global_batch": 8,
                "recompute": "selective", "recompute_modules": modules}  # fmt: skip
        kept = [
            StageMemories(model, topology, prepare(model, topology, options)).activations("selective")[0]
            for options in (Options(**plan), Options(**plan, compute_dtype="fp8", fp8_recipe="tensorwise"))
        ]
        return kept[0] - kept[1]

    assert saved(("core_attn",)) - saved(("core_attn", "shared_experts")) == 26 * 4096 * 2816
